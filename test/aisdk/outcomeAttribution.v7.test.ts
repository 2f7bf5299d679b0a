/**
 * AI SDK 7 `gatehouseToolApproval`: each call's outcome is recorded under the decision that let
 * that call run, even when the model gave two calls of one step the same ID.
 */
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gatehouseToolApproval } from '../../adapters/ai-sdk/index.js';
import {
  decisionsOf,
  embeddedWorld,
  nodeMajor,
  outcomesOf,
  recordBudget,
} from '../support/frameworkWorlds.js';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

describe.skipIf(nodeMajor < 22)('gatehouseToolApproval with a tool call ID used twice in one step', () => {
  it('records each outcome under its own decision; none is lost', async () => {
    const world = embeddedWorld();
    await recordBudget(world.backend, 'dup-7');
    const input = z.object({ account: z.string() });
    const tools = {
      lookup_account: tool({ inputSchema: input, execute: async () => 'found' }),
      close_account: tool({
        inputSchema: input,
        execute: async (): Promise<string> => {
          throw new Error('account is frozen');
        },
      }),
    };
    const gate = gatehouseToolApproval({ backend: world.backend, sessionId: 'dup-7' });
    let turn = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () =>
        turn++ === 0
          ? {
              content: [
                {
                  type: 'tool-call',
                  toolCallId: 'call_1',
                  toolName: 'lookup_account',
                  input: '{"account":"a1"}',
                },
                {
                  type: 'tool-call',
                  toolCallId: 'call_1',
                  toolName: 'close_account',
                  input: '{"account":"a1"}',
                },
              ],
              finishReason: { unified: 'tool-calls', raw: undefined },
              usage,
              warnings: [],
            }
          : {
              content: [{ type: 'text', text: 'done' }],
              finishReason: { unified: 'stop', raw: undefined },
              usage,
              warnings: [],
            },
    });
    await generateText({
      model,
      tools,
      prompt: 'look it up, then close it',
      stopWhen: stepCountIs(3),
      toolApproval: gate,
      onToolExecutionEnd: gate.onToolExecutionEnd,
    });
    await gate.flush();
    const decisions = await decisionsOf(world, 'dup-7');
    const idOf = (action: string) => decisions.find((d) => d['action'] === action)?.['decision_id'];
    const outcomes = await outcomesOf(world, 'dup-7');
    expect(outcomes).toHaveLength(2);
    expect(outcomes).toContainEqual(
      expect.objectContaining({ decision_id: idOf('lookup_account'), outcome: 'succeeded' }),
    );
    expect(outcomes).toContainEqual(
      expect.objectContaining({ decision_id: idOf('close_account'), outcome: 'failed' }),
    );
    await world.close();
  });
});
