/**
 * The callback face on a real `createAgent` with a fake model, and on bare `tool.invoke` for
 * each kind of tool LangChain has.
 */
import { RunnableLambda, RunnableSequence } from '@langchain/core/runnables';
import { DynamicStructuredTool, DynamicTool, StructuredTool } from '@langchain/core/tools';
import { createAgent } from 'langchain';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  ActionBlockedError,
  type GateBackend,
  GatehouseCallbackHandler,
  inProcessBackend,
} from '../../adapters/langchain/index.js';
import { type Decision, type Gatehouse, GatehouseError } from '../../src/index.js';
import {
  createTestGatehouse,
  heldOutcomeBackend,
  historyOf,
  recordBudget,
  scriptedModel,
  toolMessages,
  transferTool,
} from './agentFixtures.js';

let gatehouse: Gatehouse;

beforeEach(async () => {
  // LangChain prints every error a raiseError handler throws; the tests assert on them instead.
  vi.spyOn(console, 'error').mockImplementation(() => {});
  gatehouse = createTestGatehouse();
  await recordBudget(gatehouse, 's1');
});

afterEach(async () => {
  vi.restoreAllMocks();
  await gatehouse.store.close();
});

async function runAgent(
  handler: GatehouseCallbackHandler,
  args: Record<string, unknown>,
  config: { configurable?: Record<string, unknown> } = { configurable: { thread_id: 's1' } },
  tools = transferTool(),
) {
  const agent = createAgent({ model: scriptedModel('transfer_money', args), tools: [tools.transfer] });
  const result = await agent.invoke(
    { messages: [{ role: 'user', content: 'pay' }] },
    { callbacks: [handler], ...config },
  );
  // Outcomes are written while the agent goes on; the assertions read them afterwards.
  await handler.flush();
  return { result, calls: tools.calls };
}

describe('GatehouseCallbackHandler in createAgent', () => {
  it('blocks an over-budget transfer: the tool never runs, the model reads why and the agent goes on', async () => {
    const handler = new GatehouseCallbackHandler({ backend: gatehouse });
    const { result, calls } = await runAgent(handler, { amount: 9000, to: 'mallory' });

    expect(calls).toEqual([]);
    const [message] = toolMessages(result.messages);
    expect(message?.status).toBe('error');
    expect(String(message?.content)).toMatch(
      /^ActionBlockedError: Blocked by Gatehouse: Transfer of 9000 exceeds the budget of 5000 \(decision dec_/,
    );
    expect(result.messages.at(-1)?.content).toBe('done');

    const events = await historyOf(gatehouse, 's1');
    const gate = events.filter((e) => e.type === 'gate_evaluation');
    expect(gate).toHaveLength(1);
    expect(gate[0]!.data).toMatchObject({
      verdict: 'Block',
      action: 'transfer_money',
      params: { amount: 9000 },
    });
    expect(events.some((e) => e.type === 'action_outcome')).toBe(false);
  });

  it('lets an allowed transfer run and records its outcome under the same decision ID', async () => {
    const handler = new GatehouseCallbackHandler({ backend: gatehouse });
    const { calls } = await runAgent(handler, { amount: 300, to: 'bob' });

    expect(calls).toEqual([300]);
    const events = await historyOf(gatehouse, 's1');
    const gate = events.find((e) => e.type === 'gate_evaluation')!;
    const outcome = events.find((e) => e.type === 'action_outcome')!;
    expect(gate.data).toMatchObject({ verdict: 'Allow', context: { tool_call_id: 'call_1' } });
    expect(outcome.data).toMatchObject({ decision_id: gate.data['decision_id'], outcome: 'succeeded' });
    expect(outcome.seq).toBeGreaterThan(gate.seq);
  });

  it('runs a Warn after calling onWarn with the decision', async () => {
    const onWarn = vi.fn();
    const handler = new GatehouseCallbackHandler({ backend: gatehouse, onWarn });
    const { calls } = await runAgent(handler, { amount: 2000, to: 'bob' });

    expect(calls).toEqual([2000]);
    expect(onWarn).toHaveBeenCalledOnce();
    const decision = onWarn.mock.calls[0]![0] as Decision;
    expect(decision).toMatchObject({ verdict: 'Warn', allowed: true });
    expect(decision.reasons.map((r) => r.rule)).toEqual(['large_transfer']);
  });

  it('stops the tool when onWarn throws (an approval step can say no)', async () => {
    const handler = new GatehouseCallbackHandler({
      backend: gatehouse,
      onWarn: () => {
        throw new Error('not approved');
      },
    });
    const { calls, result } = await runAgent(handler, { amount: 2000, to: 'bob' });
    expect(calls).toEqual([]);
    expect(String(toolMessages(result.messages)[0]?.content)).toContain('not approved');
  });

  it('takes the session from configurable.thread_id, and an explicit sessionId wins', async () => {
    await recordBudget(gatehouse, 'thread-7', '100');
    const byThread = await runAgent(
      new GatehouseCallbackHandler({ backend: gatehouse }),
      { amount: 300, to: 'bob' },
      { configurable: { thread_id: 'thread-7' } },
    );
    expect(byThread.calls).toEqual([]); // 300 > the thread's 100 budget
    expect((await historyOf(gatehouse, 'thread-7')).some((e) => e.type === 'gate_evaluation')).toBe(true);

    const pinned = await runAgent(
      new GatehouseCallbackHandler({ backend: gatehouse, sessionId: 's1' }),
      { amount: 300, to: 'bob' },
      { configurable: { thread_id: 'thread-7' } },
    );
    expect(pinned.calls).toEqual([300]); // judged against s1's 5000 budget
  });

  it('fails closed without a session: the tool does not run and the model is told why', async () => {
    const { calls, result } = await runAgent(
      new GatehouseCallbackHandler({ backend: gatehouse }),
      { amount: 1, to: 'bob' },
      {},
    );
    expect(calls).toEqual([]);
    expect(String(toolMessages(result.messages)[0]?.content)).toMatch(/no session/);
  });

  it('records a failed outcome with the error message when the tool throws', async () => {
    const handler = new GatehouseCallbackHandler({ backend: gatehouse });
    await runAgent(handler, { amount: 10, to: 'bob' }, undefined, transferTool({ fail: true }));
    const outcome = (await historyOf(gatehouse, 's1')).find((e) => e.type === 'action_outcome');
    expect(outcome?.data).toMatchObject({ outcome: 'failed', detail: 'Error: bank is closed' });
  });

  it('never lets a failing outcome write break the agent; onError hears about it', async () => {
    const onError = vi.fn();
    const flaky: GateBackend = {
      evaluate: (input) => gatehouse.evaluate(input),
      recordState: (input) => gatehouse.recordState(input),
      recordOutcome: async () => {
        throw new GatehouseError('unavailable', 'down');
      },
    };
    const { calls, result } = await runAgent(new GatehouseCallbackHandler({ backend: flaky, onError }), {
      amount: 10,
      to: 'bob',
    });
    expect(calls).toEqual([10]);
    expect(result.messages.at(-1)?.content).toBe('done');
    expect(onError).toHaveBeenCalledWith(expect.any(GatehouseError), {
      decisionId: expect.stringMatching(/^dec_/),
      stage: 'record_outcome',
    });
  });

  it("does not hold the tool's result for the outcome report; flush waits for it", async () => {
    const { backend: slow, release, reported } = heldOutcomeBackend(gatehouse);
    const handler = new GatehouseCallbackHandler({ backend: slow, sessionId: 's1' });
    const { transfer, calls } = transferTool();
    await expect(transfer.invoke({ amount: 10, to: 'bob' }, { callbacks: [handler] })).resolves.toBe(
      'sent 10',
    );
    expect(calls).toEqual([10]);
    expect(reported).toEqual([]);

    let flushed = false;
    const flushing = handler.flush().then(() => {
      flushed = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(flushed).toBe(false);
    release();
    await flushing;
    expect(reported).toEqual(['succeeded']);
    const types = (await historyOf(gatehouse, 's1')).map((e) => e.type);
    expect(types).toEqual(['state_change', 'gate_evaluation', 'action_outcome']);
  });

  it('reports to onError an outcome that cannot even be described, without an unhandled rejection', async () => {
    const onError = vi.fn();
    const handler = new GatehouseCallbackHandler({ backend: gatehouse, sessionId: 's1', onError });
    const circular: Record<string, unknown> = {};
    circular['self'] = circular;
    // An error ToolMessage whose content cannot be turned into JSON for the outcome's detail.
    handler.handleToolEnd({ status: 'error', content: circular }, 'run-x');
    await handler.handleToolStart(
      { lc: 1, type: 'not_implemented', id: ['transfer_money'] },
      JSON.stringify({ amount: 1, to: 'b' }),
      'run-y',
      undefined,
      undefined,
      undefined,
      'transfer_money',
    );
    handler.handleToolEnd({ status: 'error', content: circular }, 'run-y');
    await handler.flush();
    expect(onError).toHaveBeenCalledOnce();
    expect(onError).toHaveBeenCalledWith(expect.any(TypeError), {
      decisionId: expect.stringMatching(/^dec_/),
      stage: 'record_outcome',
    });
  });

  it('records nothing after the tool with recordOutcomes: false', async () => {
    await runAgent(new GatehouseCallbackHandler({ backend: gatehouse, recordOutcomes: false }), {
      amount: 10,
      to: 'b',
    });
    expect((await historyOf(gatehouse, 's1')).map((e) => e.type)).toEqual([
      'state_change',
      'gate_evaluation',
    ]);
  });

  it('binds a tenant through inProcessBackend', async () => {
    const acme = inProcessBackend(gatehouse, { tenantId: 'acme' });
    await recordBudget(acme, 's1', '10');
    await runAgent(new GatehouseCallbackHandler({ backend: acme }), { amount: 300, to: 'bob' });
    const acmeEvents = await gatehouse.readHistory(
      { session_id: 's1', type: 'gate_evaluation' },
      { tenantId: 'acme' },
    );
    expect(acmeEvents.events[0]?.data).toMatchObject({ verdict: 'Block' });
    expect((await historyOf(gatehouse, 's1')).some((e) => e.type === 'gate_evaluation')).toBe(false);
  });
});

describe('tool name and params for each kind of tool (tool.invoke with the handler)', () => {
  const gateEvents = async () =>
    (await historyOf(gatehouse, 's1')).filter((e) => e.type === 'gate_evaluation').map((e) => e.data);
  const withSession = (handler: GatehouseCallbackHandler) => ({
    callbacks: [handler],
    metadata: { session_id: 's1' },
  });

  it('tool(): the name comes from runName', async () => {
    const { transfer, calls } = transferTool();
    const handler = new GatehouseCallbackHandler({ backend: gatehouse });
    await expect(transfer.invoke({ amount: 9000, to: 'x' }, withSession(handler))).rejects.toBeInstanceOf(
      ActionBlockedError,
    );
    expect(calls).toEqual([]);
    expect(await gateEvents()).toMatchObject([
      { action: 'transfer_money', params: { amount: 9000, to: 'x' } },
    ]);
  });

  it('DynamicStructuredTool: the name comes from runName', async () => {
    const ran = vi.fn(async () => 'ok');
    const dst = new DynamicStructuredTool({
      name: 'transfer_money',
      description: 'd',
      schema: z.object({ amount: z.number() }),
      func: ran,
    });
    const error = await dst
      .invoke({ amount: 9000 }, withSession(new GatehouseCallbackHandler({ backend: gatehouse })))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ActionBlockedError);
    expect((error as ActionBlockedError).decision.verdict).toBe('Block');
    expect(ran).not.toHaveBeenCalled();
  });

  it('DynamicTool: the name comes from runName and the string input becomes { input }', async () => {
    const dt = new DynamicTool({
      name: 'search_web',
      description: 'd',
      func: async (q) => `results for ${q}`,
    });
    expect(
      await dt.invoke('gatehouse', withSession(new GatehouseCallbackHandler({ backend: gatehouse }))),
    ).toBe('results for gatehouse');
    expect(await gateEvents()).toMatchObject([
      { action: 'search_web', verdict: 'Allow', params: { input: 'gatehouse' } },
    ]);
  });

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

  it('StructuredTool subclass inside an agent: the name comes from the model tool call (toolCallId)', async () => {
    const subclass = new TransferMoneyTool();
    const agent = createAgent({
      model: scriptedModel('transfer_money', { amount: 9000 }),
      tools: [subclass],
    });
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: 'pay' }] },
      {
        callbacks: [new GatehouseCallbackHandler({ backend: gatehouse })],
        configurable: { thread_id: 's1' },
      },
    );
    expect(subclass.ran).toEqual([]);
    expect(String(toolMessages(result.messages)[0]?.content)).toContain('Blocked by Gatehouse');
    expect(await gateEvents()).toMatchObject([{ action: 'transfer_money', verdict: 'Block' }]);
  });

  it('StructuredTool subclass with metadata.name or a runName: that name is used', async () => {
    const tagged = new TransferMoneyTool();
    tagged.metadata = { name: 'transfer_money' };
    const handler = new GatehouseCallbackHandler({ backend: gatehouse });
    await expect(tagged.invoke({ amount: 9000 }, withSession(handler))).rejects.toBeInstanceOf(
      ActionBlockedError,
    );

    const plain = new TransferMoneyTool();
    await expect(
      plain.invoke({ amount: 9000 }, { ...withSession(handler), runName: plain.name }),
    ).rejects.toBeInstanceOf(ActionBlockedError);
    expect(tagged.ran).toEqual([]);
    expect(plain.ran).toEqual([]);
  });

  it('StructuredTool subclass with no name source: fails closed instead of guessing the class name', async () => {
    const plain = new TransferMoneyTool();
    const error = await plain
      .invoke({ amount: 1 }, withSession(new GatehouseCallbackHandler({ backend: gatehouse })))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatehouseError);
    expect((error as GatehouseError).message).toMatch(/cannot tell which tool 'TransferMoneyTool' is/);
    expect(plain.ran).toEqual([]);
  });

  it('a tool invoked without any session fails closed', async () => {
    const { transfer, calls } = transferTool();
    await expect(
      transfer.invoke(
        { amount: 1, to: 'x' },
        { callbacks: [new GatehouseCallbackHandler({ backend: gatehouse })] },
      ),
    ).rejects.toThrow(/no session/);
    expect(calls).toEqual([]);
  });

  it('the handler is named gatehouse and waits for itself (raiseError and awaitHandlers)', () => {
    const handler = new GatehouseCallbackHandler({ backend: gatehouse });
    expect(handler.name).toBe('gatehouse');
    expect(handler.raiseError).toBe(true);
    expect(handler.awaitHandlers).toBe(true);
  });
});

/**
 * Which session a run is gated in. LangGraph (createAgent, graphs) copies `configurable.thread_id`
 * into the callback metadata; @langchain/core hands a callback handler `metadata` only (it gives
 * `configurable` to LangSmith tracers alone), so outside LangGraph the session goes in `metadata`.
 */
describe('the session of each kind of run: bare tool, RunnableSequence, createAgent', () => {
  beforeEach(async () => {
    await recordBudget(gatehouse, 'thread-7', '100');
  });
  const gatedIn = async (sessionId: string) =>
    (await historyOf(gatehouse, sessionId)).filter((e) => e.type === 'gate_evaluation').map((e) => e.data);

  it('a bare tool.invoke with metadata.thread_id is gated in that thread', async () => {
    const { transfer, calls } = transferTool();
    const gate = new GatehouseCallbackHandler({ backend: gatehouse });
    await expect(
      transfer.invoke({ amount: 300, to: 'bob' }, { callbacks: [gate], metadata: { thread_id: 'thread-7' } }),
    ).rejects.toBeInstanceOf(ActionBlockedError); // 300 > thread-7's budget of 100
    expect(calls).toEqual([]);
    expect(await gatedIn('thread-7')).toMatchObject([{ action: 'transfer_money', verdict: 'Block' }]);
    expect(await gatedIn('s1')).toEqual([]);
  });

  it('a RunnableSequence ending in the tool is gated in its metadata.thread_id', async () => {
    const { transfer, calls } = transferTool();
    const chain = RunnableSequence.from([
      RunnableLambda.from((amount: number) => ({ amount, to: 'bob' })),
      transfer,
    ]);
    const gate = new GatehouseCallbackHandler({ backend: gatehouse });
    await expect(chain.invoke(50, { callbacks: [gate], metadata: { thread_id: 'thread-7' } })).resolves.toBe(
      'sent 50',
    );
    await expect(
      chain.invoke(300, { callbacks: [gate], metadata: { thread_id: 'thread-7' } }),
    ).rejects.toBeInstanceOf(ActionBlockedError);
    expect(calls).toEqual([50]);
    expect(await gatedIn('thread-7')).toMatchObject([
      { action: 'transfer_money', verdict: 'Allow', params: { amount: 50 } },
      { action: 'transfer_money', verdict: 'Block', params: { amount: 300 } },
    ]);
  });

  it('createAgent is gated in configurable.thread_id (LangGraph copies it into the metadata)', async () => {
    const { calls } = await runAgent(
      new GatehouseCallbackHandler({ backend: gatehouse }),
      { amount: 300, to: 'bob' },
      { configurable: { thread_id: 'thread-7' } },
    );
    expect(calls).toEqual([]);
    expect(await gatedIn('thread-7')).toMatchObject([{ action: 'transfer_money', verdict: 'Block' }]);
    expect(await gatedIn('s1')).toEqual([]);
  });

  it('a bare tool with configurable.thread_id only fails closed and says to pass metadata.thread_id', async () => {
    const { transfer, calls } = transferTool();
    const gate = new GatehouseCallbackHandler({ backend: gatehouse });
    const error = await transfer
      .invoke({ amount: 1, to: 'bob' }, { callbacks: [gate], configurable: { thread_id: 'thread-7' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatehouseError);
    expect((error as GatehouseError).message).toMatch(/no session/);
    // Before: the message said to use configurable.thread_id, which this run already did.
    expect((error as GatehouseError).message).toContain('{ metadata: { thread_id } }');
    expect(calls).toEqual([]);
    expect(await gatedIn('thread-7')).toEqual([]);
  });
});
