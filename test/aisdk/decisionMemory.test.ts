/**
 * What needsApproval decided is used by the execute of exactly that call, right after it: never by
 * another tool sharing its call ID, nor by a replay after a person (AI SDK 6 `gateTools`).
 */
import { generateText, stepCountIs, tool } from 'ai-v6';
import { MockLanguageModelV3 } from 'ai-v6/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { gateTools } from '../../adapters/ai-sdk/index.js';
import { decisionsOf, embeddedWorld, recordBudget } from '../support/frameworkWorlds.js';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

describe('gateTools with a tool call ID the model used twice in one step', () => {
  it("a blocked call does not run on the Allow another tool's call got under the same ID", async () => {
    const world = embeddedWorld();
    await recordBudget(world.backend, 'dup-1');
    const sent: unknown[] = [];
    const looked: unknown[] = [];
    const input = z.object({ amount: z.number(), to: z.string() });
    const { tools } = gateTools(
      {
        transfer_money: tool({ inputSchema: input, execute: async (args) => void sent.push(args) }),
        lookup_account: tool({ inputSchema: input, execute: async (args) => void looked.push(args) }),
      },
      { backend: world.backend, sessionId: 'dup-1' },
    );
    const args = JSON.stringify({ amount: 10, to: 'mallory' });
    let turn = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () =>
        turn++ === 0
          ? {
              content: [
                { type: 'tool-call', toolCallId: 'call_1', toolName: 'transfer_money', input: args },
                { type: 'tool-call', toolCallId: 'call_1', toolName: 'lookup_account', input: args },
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
    await generateText({ model, tools, prompt: 'pay', stopWhen: stepCountIs(3) });
    expect(sent).toEqual([]);
    expect(looked).toEqual([{ amount: 10, to: 'mallory' }]);
    const verdicts = (await decisionsOf(world, 'dup-1')).map((d) => [d['action'], d['verdict']]);
    expect(verdicts).toContainEqual(['transfer_money', 'Block']);
    await world.close();
  });
});

describe("gateTools with a tool's own needsApproval", () => {
  it('the replay after a person approved is decided again, not run on the Allow given before the pause', async () => {
    const world = embeddedWorld();
    await recordBudget(world.backend, 'own-1');
    const sent: unknown[] = [];
    const input = z.object({ amount: z.number(), to: z.string() });
    const { tools } = gateTools(
      {
        transfer_money: tool({
          inputSchema: input,
          needsApproval: true,
          execute: async (args) => void sent.push(args),
        }),
      },
      { backend: world.backend, sessionId: 'own-1' },
    );
    const args = JSON.stringify({ amount: 3000, to: 'bob' });
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) =>
        prompt.at(-1)?.role === 'user'
          ? {
              content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'transfer_money', input: args }],
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
    const user = [{ role: 'user' as const, content: 'pay' }];
    const first = await generateText({ model, tools, messages: user, stopWhen: stepCountIs(3) });
    const request = first.content.find((part) => part.type === 'tool-approval-request')!;
    expect(request).toBeDefined();
    // While the person thinks it over, the budget is cut: Gatehouse would now hold the transfer.
    await world.backend.recordState({
      session_id: 'own-1',
      key: 'budget.limit',
      value: '1000',
      type: 'fact',
      source: 'user_input',
    });
    await generateText({
      model,
      tools,
      messages: [
        ...user,
        ...first.response.messages,
        {
          role: 'tool',
          content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }],
        },
      ],
      stopWhen: stepCountIs(3),
    });
    expect(sent).toEqual([]);
    const verdicts = (await decisionsOf(world, 'own-1')).map((d) => d['verdict']);
    expect(verdicts).toEqual(['Warn', 'Block']);
    await world.close();
  });
});
