/**
 * The middleware face on a real `createAgent` with a fake model: a Block is a ToolMessage the
 * model reads, the tool never runs, and outcomes land in history.
 */
import type { BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { createAgent } from 'langchain';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  type BlockedToolContent,
  type GateBackend,
  type GatehouseMiddlewareOptions,
  gatehouseMiddleware,
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
  gatehouse = createTestGatehouse();
  await recordBudget(gatehouse, 's1');
});

afterEach(async () => {
  await gatehouse.store.close();
});

function agentWith(
  options: Partial<GatehouseMiddlewareOptions>,
  args: Record<string, unknown>,
  tools = transferTool(),
) {
  const model = scriptedModel('transfer_money', args);
  const gate = gatehouseMiddleware({ backend: gatehouse, ...options });
  const agent = createAgent({ model, tools: [tools.transfer], middleware: [gate] });
  return { agent, model, calls: tools.calls, gate };
}

const ask = { messages: [{ role: 'user' as const, content: 'pay' }] };

describe('gatehouseMiddleware in createAgent', () => {
  it('answers an over-budget transfer with an error ToolMessage the model reads; the tool never runs', async () => {
    const { agent, model, calls, gate: middleware } = agentWith({}, { amount: 9000, to: 'mallory' });
    const result = await agent.invoke(ask, { configurable: { thread_id: 's1' } });

    expect(calls).toEqual([]);
    const [message] = toolMessages(result.messages);
    expect(message).toMatchObject({ status: 'error', tool_call_id: 'call_1', name: 'transfer_money' });
    const content = JSON.parse(String(message!.content)) as BlockedToolContent;
    expect(content).toMatchObject({
      blocked: true,
      verdict: 'Block',
      reason: 'Transfer of 9000 exceeds the budget of 5000',
      reasons: [
        {
          rule: 'over_budget',
          message: 'Transfer of 9000 exceeds the budget of 5000',
          keys: ['budget.limit'],
        },
        { rule: 'large_transfer', message: 'Transfer of 9000 is large', keys: [] },
      ],
    });

    // The model's second turn saw the block and could answer instead of retrying.
    const secondTurn = model.calls[1]?.messages as BaseMessage[] | undefined;
    expect(secondTurn?.at(-1)?.getType()).toBe('tool');
    expect(result.messages.at(-1)?.content).toBe('done');

    await middleware.flush();
    const events = await historyOf(gatehouse, 's1');
    const gate = events.find((e) => e.type === 'gate_evaluation')!;
    expect(gate.data).toMatchObject({ decision_id: content.decision_id, verdict: 'Block' });
    expect(events.some((e) => e.type === 'action_outcome')).toBe(false);
  });

  it('runs an allowed transfer and records action_outcome under the gate_evaluation decision ID', async () => {
    const { agent, calls, gate: middleware } = agentWith({}, { amount: 300, to: 'bob' });
    const result = await agent.invoke(ask, { configurable: { thread_id: 's1' } });

    expect(calls).toEqual([300]);
    expect(toolMessages(result.messages)[0]?.content).toBe('sent 300');
    await middleware.flush();
    const events = await historyOf(gatehouse, 's1');
    const gate = events.find((e) => e.type === 'gate_evaluation')!;
    const outcome = events.find((e) => e.type === 'action_outcome')!;
    expect(gate.data).toMatchObject({
      verdict: 'Allow',
      action: 'transfer_money',
      params: { amount: 300, to: 'bob' },
      context: { tool_call_id: 'call_1' },
    });
    expect(outcome.data).toMatchObject({ decision_id: gate.data['decision_id'], outcome: 'succeeded' });
  });

  it("gates the arguments the tool runs with, after its schema's defaults and transforms", async () => {
    const calls: { amount: number; to: string }[] = [];
    const transfer = tool(
      async (args) => {
        calls.push(args);
        return `sent ${args.amount}`;
      },
      {
        name: 'transfer_money',
        description: 'Transfers money to the recipient.',
        schema: z.object({ amount: z.number().default(9000), to: z.string().trim().toLowerCase() }),
      },
    );
    // The model leaves the amount out: the schema's default (over budget) is what would be sent.
    const gate = gatehouseMiddleware({ backend: gatehouse });
    const model = scriptedModel('transfer_money', { to: ' Mallory ' });
    const agent = createAgent({ model, tools: [transfer], middleware: [gate] });
    const result = await agent.invoke(ask, { configurable: { thread_id: 's1' } });
    expect(calls).toEqual([]);
    expect(toolMessages(result.messages)[0]).toMatchObject({ status: 'error' });
    await gate.flush();
    const decision = (await historyOf(gatehouse, 's1')).find((e) => e.type === 'gate_evaluation')!;
    expect(decision.data).toMatchObject({ verdict: 'Block', params: { amount: 9000, to: 'mallory' } });
  });

  it('calls onWarn, then runs the tool', async () => {
    const onWarn = vi.fn();
    const { agent, calls } = agentWith({ onWarn }, { amount: 2000, to: 'bob' });
    await agent.invoke(ask, { configurable: { thread_id: 's1' } });
    expect(calls).toEqual([2000]);
    expect(onWarn).toHaveBeenCalledOnce();
    expect((onWarn.mock.calls[0]![0] as Decision).reasons[0]).toMatchObject({
      rule: 'large_transfer',
      verdict: 'Warn',
    });
  });

  it('takes the session from configurable.thread_id; sessionId overrides it', async () => {
    await recordBudget(gatehouse, 'thread-9', '100');
    const byThread = agentWith({}, { amount: 300, to: 'bob' });
    await byThread.agent.invoke(ask, { configurable: { thread_id: 'thread-9' } });
    expect(byThread.calls).toEqual([]);

    const pinned = agentWith({ sessionId: 's1' }, { amount: 300, to: 'bob' });
    await pinned.agent.invoke(ask, { configurable: { thread_id: 'thread-9' } });
    expect(pinned.calls).toEqual([300]);
  });

  it('fails closed without a session: agent.invoke rejects and the tool does not run', async () => {
    const { agent, calls } = agentWith({}, { amount: 1, to: 'bob' });
    // The middleware reads configurable, so that is where the message points.
    await expect(agent.invoke(ask)).rejects.toThrow(/no session.*\{ configurable: \{ thread_id \} \}/);
    expect(calls).toEqual([]);
  });

  it('fails closed when the Gatehouse cannot be reached', async () => {
    const down: GateBackend = {
      evaluate: async () => {
        throw new GatehouseError('unavailable', 'The Gatehouse server is unavailable.');
      },
      recordOutcome: async () => undefined,
      recordState: (input) => gatehouse.recordState(input),
    };
    const tools = transferTool();
    const agent = createAgent({
      model: scriptedModel('transfer_money', { amount: 1, to: 'bob' }),
      tools: [tools.transfer],
      middleware: [gatehouseMiddleware({ backend: down, sessionId: 's1' })],
    });
    // LangChain wraps errors from a middleware in a MiddlewareError; ours is its cause.
    await expect(agent.invoke(ask)).rejects.toMatchObject({ cause: { code: 'unavailable' } });
    expect(tools.calls).toEqual([]);
  });

  it('records a failed outcome when the tool throws (and LangChain re-raises it)', async () => {
    const { agent, gate: middleware } = agentWith(
      {},
      { amount: 10, to: 'bob' },
      transferTool({ fail: true }),
    );
    await expect(agent.invoke(ask, { configurable: { thread_id: 's1' } })).rejects.toThrow(/bank is closed/);
    await middleware.flush();
    const outcome = (await historyOf(gatehouse, 's1')).find((e) => e.type === 'action_outcome');
    expect(outcome?.data).toMatchObject({ outcome: 'failed', detail: 'Error: bank is closed' });
  });

  it('answers the model without waiting for the outcome report; flush waits for it', async () => {
    const { backend: slow, release, reported } = heldOutcomeBackend(gatehouse);
    const tools = transferTool();
    const middleware = gatehouseMiddleware({ backend: slow });
    const agent = createAgent({
      model: scriptedModel('transfer_money', { amount: 10, to: 'bob' }),
      tools: [tools.transfer],
      middleware: [middleware],
    });
    const result = await agent.invoke(ask, { configurable: { thread_id: 's1' } });
    expect(tools.calls).toEqual([10]);
    expect(result.messages.at(-1)?.content).toBe('done');
    expect(reported).toEqual([]);

    release();
    await middleware.flush();
    expect(reported).toEqual(['succeeded']);
    const types = (await historyOf(gatehouse, 's1')).map((e) => e.type);
    expect(types).toEqual(['state_change', 'gate_evaluation', 'action_outcome']);
  });

  it('keeps the agent going when the outcome cannot be recorded; onError hears about it', async () => {
    const onError = vi.fn();
    const flaky: GateBackend = {
      evaluate: (input) => gatehouse.evaluate(input),
      recordState: (input) => gatehouse.recordState(input),
      recordOutcome: async () => {
        throw new Error('disk full');
      },
    };
    const tools = transferTool();
    const middleware = gatehouseMiddleware({ backend: flaky, onError });
    const agent = createAgent({
      model: scriptedModel('transfer_money', { amount: 10, to: 'bob' }),
      tools: [tools.transfer],
      middleware: [middleware],
    });
    const result = await agent.invoke(ask, { configurable: { thread_id: 's1' } });
    await middleware.flush();
    expect(tools.calls).toEqual([10]);
    expect(result.messages.at(-1)?.content).toBe('done');
    expect(onError).toHaveBeenCalledOnce();
  });
});
