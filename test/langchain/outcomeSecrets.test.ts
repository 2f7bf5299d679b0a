/**
 * A tool's error often quotes its input. The history masks a secret argument in the decision's
 * `params`; the `action_outcome` detail of the same call must not carry it in plain either.
 */
import { ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { createAgent } from 'langchain';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { GatehouseCallbackHandler, gatehouseMiddleware } from '../../adapters/langchain/index.js';
import type { Gatehouse } from '../../src/index.js';
import { createTestGatehouse, historyOf, scriptedModel } from './agentFixtures.js';

const PASSWORD = 'Tr0ub4dor&3xyz';
const ARGS = { user: 'ada', password: PASSWORD };

let gatehouse: Gatehouse;

beforeEach(() => {
  vi.spyOn(console, 'error').mockImplementation(() => {});
  gatehouse = createTestGatehouse();
});

afterEach(async () => {
  vi.restoreAllMocks();
  await gatehouse.store.close();
});

/** A login tool that fails, quoting its input as many real clients do. */
function loginTool(how: 'throw' | 'error message') {
  return tool(
    async ({ user, password }, config) => {
      const text = `login refused for ${user} with ${password}`;
      if (how === 'throw') throw new Error(text);
      return new ToolMessage({ status: 'error', content: text, tool_call_id: config.toolCall?.id ?? '' });
    },
    { name: 'login', description: 'Logs in.', schema: z.object({ user: z.string(), password: z.string() }) },
  );
}

async function outcomeOf(sessionId: string) {
  const events = await historyOf(gatehouse, sessionId);
  const gate = events.find((e) => e.type === 'gate_evaluation');
  const outcome = events.find((e) => e.type === 'action_outcome');
  expect(gate?.data['params']).toEqual({ user: 'ada', password: '[secret masked]' });
  expect(outcome?.data).toMatchObject({ outcome: 'failed' });
  return String(outcome?.data['detail']);
}

describe('a failed outcome does not record the secret arguments of its call', () => {
  it('middleware, the tool throws', async () => {
    const gate = gatehouseMiddleware({ backend: gatehouse });
    const agent = createAgent({
      model: scriptedModel('login', ARGS),
      tools: [loginTool('throw')],
      middleware: [gate],
    });
    await agent
      .invoke({ messages: [{ role: 'user', content: 'log in' }] }, { configurable: { thread_id: 'm1' } })
      .catch(() => undefined);
    await gate.flush();
    const detail = await outcomeOf('m1');
    expect(detail).not.toContain(PASSWORD);
    expect(detail).toBe('Error: login refused for ada with [secret masked]');
  });

  it('middleware, the tool answers an error ToolMessage', async () => {
    const gate = gatehouseMiddleware({ backend: gatehouse });
    const agent = createAgent({
      model: scriptedModel('login', ARGS),
      tools: [loginTool('error message')],
      middleware: [gate],
    });
    await agent.invoke(
      { messages: [{ role: 'user', content: 'log in' }] },
      { configurable: { thread_id: 'm2' } },
    );
    await gate.flush();
    expect(await outcomeOf('m2')).toBe('login refused for ada with [secret masked]');
  });

  it('callback handler, the tool throws', async () => {
    const handler = new GatehouseCallbackHandler({ backend: gatehouse });
    const agent = createAgent({ model: scriptedModel('login', ARGS), tools: [loginTool('throw')] });
    await agent.invoke(
      { messages: [{ role: 'user', content: 'log in' }] },
      { configurable: { thread_id: 'c1' }, callbacks: [handler] },
    );
    await handler.flush();
    expect(await outcomeOf('c1')).toBe('Error: login refused for ada with [secret masked]');
  });
});
