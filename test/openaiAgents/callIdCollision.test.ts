/**
 * A call ID is the model's to choose: two calls of one turn may share it. The decision one tool's
 * `needsApproval` made must never be used by another tool's input guardrail (OpenAI Agents).
 */
import {
  Agent,
  defineToolInputGuardrail,
  run,
  setTracingDisabled,
  ToolGuardrailFunctionOutputFactory,
  tool,
} from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gateTools } from '../../adapters/openai-agents/index.js';
import type { GateBackend } from '../../adapters/toolgate/index.js';
import {
  decisionsOf,
  embeddedWorld,
  nodeMajor,
  outcomesOf,
  recordBudget,
} from '../support/frameworkWorlds.js';

beforeAll(() => {
  setTracingDisabled(true);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(nodeMajor < 22)('OpenAI Agents gateTools with a call ID two runs share', () => {
  it("a call blocked in one session does not run on the Allow another session's call got under the same ID", async () => {
    const world = embeddedWorld();
    // Session 'rich' has a budget: its transfer is allowed. Session 'poor' has none: refused.
    await recordBudget(world.backend, 'rich');
    // The rich run's decision arrives a little after the poor run's.
    const backend: GateBackend = {
      ...world.backend,
      evaluate: async (input) => {
        if (input.session_id === 'rich') await sleep(30);
        return world.backend.evaluate(input);
      },
    };
    const sent: Array<{ session: string; amount: number }> = [];
    const transfer = tool({
      name: 'transfer_money',
      description: 'Transfers money.',
      parameters: z.object({ amount: z.number(), to: z.string() }),
      // The app's own check takes longer in the rich chat.
      inputGuardrails: [
        defineToolInputGuardrail<{ chat: string }>({
          name: 'app-check',
          run: async ({ context }) => {
            await sleep(context.context.chat === 'rich' ? 150 : 80);
            return ToolGuardrailFunctionOutputFactory.allow();
          },
        }),
      ],
      execute: async (input, runContext) => {
        sent.push({ session: (runContext!.context as { chat: string }).chat, amount: input.amount });
        return 'sent';
      },
    });
    // Both models name their call call_1 (a provider whose IDs are counters, not random).
    const respond = modelResponder(({ request }) => {
      const input = typeof request.input === 'string' ? [] : request.input;
      const last = input.at(-1) as { type?: string } | undefined;
      return last?.type === 'function_call_result'
        ? [assistantMessage('done')]
        : [functionCall('transfer_money', { amount: 10, to: 'bob' }, { callId: 'call_1' })];
    });
    const agent = new Agent<{ chat: string }>({
      name: 'payer',
      instructions: 'Pay.',
      model: new ScriptedModel(Array.from({ length: 10 }, () => respond)),
      tools: [transfer],
    });
    gateTools(agent, { backend, session: (ctx) => ctx.context.chat });
    await Promise.all([
      run(agent, 'pay 10', { context: { chat: 'poor' } }),
      run(agent, 'pay 10', { context: { chat: 'rich' } }),
    ]);
    expect(sent).toEqual([{ session: 'rich', amount: 10 }]);
    expect((await decisionsOf(world, 'poor')).map((d) => d['verdict'])).toEqual(['Block']);
    await world.close();
  });

  it("each run's outcome is recorded under its own decision when two runs share a call ID", async () => {
    const world = embeddedWorld();
    await recordBudget(world.backend, 'one');
    await recordBudget(world.backend, 'two');
    const transfer = tool({
      name: 'transfer_money',
      description: 'Transfers money.',
      parameters: z.object({ amount: z.number(), to: z.string() }),
      execute: async (_input, runContext) => {
        await sleep(50);
        if ((runContext!.context as { chat: string }).chat === 'two') throw new Error('bank is closed');
        return 'sent';
      },
    });
    const respond = modelResponder(({ request }) => {
      const input = typeof request.input === 'string' ? [] : request.input;
      const last = input.at(-1) as { type?: string } | undefined;
      return last?.type === 'function_call_result'
        ? [assistantMessage('done')]
        : [functionCall('transfer_money', { amount: 10, to: 'bob' }, { callId: 'call_1' })];
    });
    const agent = new Agent<{ chat: string }>({
      name: 'payer',
      instructions: 'Pay.',
      model: new ScriptedModel(Array.from({ length: 10 }, () => respond)),
      tools: [transfer],
    });
    const { flush } = gateTools(agent, { backend: world.backend, session: (ctx) => ctx.context.chat });
    await Promise.all([
      run(agent, 'pay 10', { context: { chat: 'one' } }),
      run(agent, 'pay 10', { context: { chat: 'two' } }),
    ]);
    await flush();
    for (const [session, outcome] of [
      ['one', 'succeeded'],
      ['two', 'failed'],
    ] as const) {
      const [decision] = await decisionsOf(world, session);
      expect(await outcomesOf(world, session)).toEqual([
        expect.objectContaining({ decision_id: decision!['decision_id'], outcome }),
      ]);
    }
    await world.close();
  });
});
