/**
 * How the callback handler names a `StructuredTool` subclass, which has no `runName`: by the name
 * the app gave it, else by the name the model used for the call's ID — and the model (or another
 * run's model) must not be able to choose that name for a call it did not make. A real
 * `createAgent` with a fake model and real tools; `transfer_money` is always refused.
 */
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { StructuredTool, tool } from '@langchain/core/tools';
import { createAgent } from 'langchain';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { GatehouseCallbackHandler } from '../../adapters/langchain/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, type Gatehouse } from '../../src/index.js';
import { historyOf, toolMessages } from './agentFixtures.js';

const POLICY = `
version: 1
actions:
  transfer_money:
    rules:
      - name: never
        when: "true"
        verdict: Block
        message: "Transfers are not allowed"
`;

class TransferMoneyTool extends StructuredTool {
  name = 'transfer_money';
  description = 'Transfers money.';
  schema = z.object({ amount: z.number() });
  ran: number[] = [];
  async _call({ amount }: { amount: number }) {
    this.ran.push(amount);
    return `sent ${amount}`;
  }
}

function lookupTool() {
  return tool(async () => 'found', {
    name: 'lookup',
    description: 'Looks up.',
    schema: z.object({ q: z.string() }),
  });
}

/** A handler that, each time its run's model has answered, waits for `until` (orders two runs). */
class WaitAfterModel extends BaseCallbackHandler {
  name = 'wait-after-model';
  constructor(private readonly until: () => Promise<void>) {
    super({ raiseError: true });
  }
  override async handleLLMEnd(): Promise<void> {
    await this.until();
  }
}

let gatehouse: Gatehouse;

beforeEach(() => {
  // LangChain prints every error a raiseError handler throws; the tests assert on them instead.
  vi.spyOn(console, 'error').mockImplementation(() => {});
  gatehouse = createGatehouse({ store: openSqliteStore(), policy: compilePolicy(POLICY) });
});

afterEach(async () => {
  vi.restoreAllMocks();
  await gatehouse.store.close();
});

async function gated(sessionId: string): Promise<string[]> {
  return (await historyOf(gatehouse, sessionId))
    .filter((e) => e.type === 'gate_evaluation')
    .map((e) => `${String(e.data['action'])}:${String(e.data['verdict'])}`);
}

it('a tool call ID the model gives two tools names neither: the subclass does not run, the named tool does', async () => {
  const transfer = new TransferMoneyTool();
  const model = fakeModel()
    .respondWithTools([
      { name: 'transfer_money', args: { amount: 9000 }, id: 'call_1' },
      { name: 'lookup', args: { q: 'x' }, id: 'call_1' },
    ])
    .respond(new AIMessage('done'));
  const agent = createAgent({ model, tools: [transfer, lookupTool()] });
  const result = await agent.invoke(
    { messages: [{ role: 'user', content: 'pay' }] },
    { callbacks: [new GatehouseCallbackHandler({ backend: gatehouse })], configurable: { thread_id: 's1' } },
  );

  expect(transfer.ran).toEqual([]);
  expect(toolMessages(result.messages).map((m) => String(m.content))).toContainEqual(
    expect.stringContaining("the model used tool call ID 'call_1' for 'transfer_money' and 'lookup'"),
  );
  expect(await gated('s1')).toEqual(['lookup:Allow']);
});

it("another run's model cannot name this run's call, though both share the handler", async () => {
  const handler = new GatehouseCallbackHandler({ backend: gatehouse });
  const transfer = new TransferMoneyTool();
  // Run B's model asks for transfer_money as call_1; run A's model then names its own call_1
  // lookup before B's tool starts, and A goes on only once B is done.
  let otherModelDone!: () => void;
  const otherModelAnswered = new Promise<void>((resolve) => {
    otherModelDone = resolve;
  });
  let paymentDone!: () => void;
  const paymentFinished = new Promise<void>((resolve) => {
    paymentDone = resolve;
  });
  const payer = createAgent({
    model: fakeModel()
      .respondWithTools([{ name: 'transfer_money', args: { amount: 9000 }, id: 'call_1' }])
      .respond(new AIMessage('done')),
    tools: [transfer],
  });
  const searcher = createAgent({
    model: fakeModel()
      .respondWithTools([{ name: 'lookup', args: { q: 'x' }, id: 'call_1' }])
      .respond(new AIMessage('done')),
    tools: [lookupTool()],
  });
  const payment = payer
    .invoke(
      { messages: [{ role: 'user', content: 'pay' }] },
      {
        callbacks: [handler, new WaitAfterModel(() => otherModelAnswered)],
        configurable: { thread_id: 'payer' },
      },
    )
    .finally(() => paymentDone());
  const search = searcher.invoke(
    { messages: [{ role: 'user', content: 'search' }] },
    {
      callbacks: [
        handler,
        new WaitAfterModel(() => {
          otherModelDone();
          return paymentFinished;
        }),
      ],
      configurable: { thread_id: 'searcher' },
    },
  );
  await Promise.all([payment, search]);

  expect(transfer.ran).toEqual([]);
  expect(await gated('payer')).toEqual(['transfer_money:Block']);
  expect(await gated('searcher')).toEqual(['lookup:Allow']);
});

it('a subclass whose name from the app (metadata.name) disagrees with the one the model called does not run', async () => {
  class PayTool extends TransferMoneyTool {
    override name = 'pay';
    override metadata = { name: 'transfer_money' };
  }
  const pay = new PayTool();
  const model = fakeModel()
    .respondWithTools([{ name: 'pay', args: { amount: 10 }, id: 'call_1' }])
    .respond(new AIMessage('done'));
  const agent = createAgent({ model, tools: [pay] });
  const result = await agent.invoke(
    { messages: [{ role: 'user', content: 'pay' }] },
    { callbacks: [new GatehouseCallbackHandler({ backend: gatehouse })], configurable: { thread_id: 's1' } },
  );

  expect(pay.ran).toEqual([]);
  expect(toolMessages(result.messages).map((m) => String(m.content))).toContainEqual(
    expect.stringContaining("it is named 'transfer_money', but the model called it 'pay'"),
  );
  expect(await gated('s1')).toEqual([]);
});
