/**
 * The middleware gates the arguments the tool runs with. A schema may turn them into values JSON
 * has no form for (a Set, a Map): the policy must see their contents, not `{}`.
 */
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { tool } from '@langchain/core/tools';
import { createAgent } from 'langchain';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gatehouseMiddleware } from '../../adapters/langchain/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, type Gatehouse } from '../../src/index.js';
import { historyOf, toolMessages } from './agentFixtures.js';

const POLICY = `
version: 1
actions:
  send_email:
    rules:
      - name: mass_mail
        when: "size(params.to) > 2"
        verdict: Block
        message: "Too many recipients"
  set_limits:
    rules:
      - name: raise_limit
        when: "'card' in params.limits && params.limits['card'] > 1000"
        verdict: Block
        message: "Card limit too high"
`;

let gatehouse: Gatehouse;

beforeEach(() => {
  gatehouse = createGatehouse({ store: openSqliteStore(), policy: compilePolicy(POLICY) });
});

afterEach(async () => {
  await gatehouse.store.close();
});

async function run(name: string, args: Record<string, unknown>, sent: unknown[], schema: z.ZodObject) {
  const t = tool(
    async (input) => {
      sent.push(input);
      return 'done';
    },
    { name, description: name, schema },
  );
  const gate = gatehouseMiddleware({ backend: gatehouse });
  const model = fakeModel()
    .respondWithTools([{ name, args, id: 'call_1' }])
    .respond(new AIMessage('ok'));
  const agent = createAgent({ model, tools: [t], middleware: [gate] });
  const result = await agent.invoke(
    { messages: [{ role: 'user', content: 'go' }] },
    { configurable: { thread_id: 's1' } },
  );
  await gate.flush();
  const decision = (await historyOf(gatehouse, 's1')).find((e) => e.type === 'gate_evaluation')!;
  return { result, decision };
}

describe('gatehouseMiddleware and schemas that make Sets and Maps', () => {
  it('a Set of recipients is gated as its members', async () => {
    const sent: unknown[] = [];
    const schema = z.object({ to: z.array(z.string()).transform((to) => new Set(to)) });
    const { result, decision } = await run(
      'send_email',
      { to: ['a@x.io', 'b@x.io', 'c@x.io'] },
      sent,
      schema,
    );
    expect(sent).toEqual([]);
    expect(toolMessages(result.messages)[0]).toMatchObject({ status: 'error' });
    expect(decision.data).toMatchObject({ verdict: 'Block', params: { to: ['a@x.io', 'b@x.io', 'c@x.io'] } });
  });

  it('a Map is gated as an object of its entries', async () => {
    const sent: unknown[] = [];
    const schema = z.object({
      limits: z.record(z.string(), z.number()).transform((limits) => new Map(Object.entries(limits))),
    });
    const { decision } = await run('set_limits', { limits: { card: 5000 } }, sent, schema);
    expect(sent).toEqual([]);
    expect(decision.data).toMatchObject({ verdict: 'Block', params: { limits: { card: 5000 } } });
  });
});
