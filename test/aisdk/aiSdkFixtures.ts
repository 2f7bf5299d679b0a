/**
 * What the AI SDK tests share, for both majors: a `transfer_money` tool that records every transfer
 * it really made, and a scripted model turn — the model asks for one tool call when the user has
 * just spoken, and answers "done" once it has read the tool's result. The model records every
 * prompt, so a test can read what the model was told.
 */
import { z } from 'zod';
import { DEFAULT_RECIPIENT } from '../support/frameworkWorlds.js';

/** The tool's schema: the recipient defaults, and is trimmed and lower-cased before the tool runs. */
export const transferInput = z.object({
  amount: z.number(),
  to: z.string().trim().toLowerCase().default(DEFAULT_RECIPIENT),
});

/** A transfer tool's `execute` and the transfers it made. */
export function recordingTransfer(options: { fail?: boolean } = {}) {
  const calls: Array<z.infer<typeof transferInput>> = [];
  const execute = async (input: z.infer<typeof transferInput>) => {
    if (options.fail) throw new Error('bank is closed');
    calls.push(input);
    return `sent ${input.amount} to ${input.to}`;
  };
  return { execute, calls };
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A prompt message as the provider layer sees it (V3 and V4 share this shape). */
export interface PromptMessage {
  role: string;
  content: unknown;
}

/**
 * One scripted model turn, shared by `MockLanguageModelV3` (ai@6) and `MockLanguageModelV4`
 * (ai@7): a tool call `call_1` with `args` after a user message, else the text "done".
 */
export function scriptedTurn(prompt: PromptMessage[], args: Record<string, unknown>) {
  const last = prompt.at(-1);
  if (last?.role === 'user') {
    return {
      content: [
        {
          type: 'tool-call' as const,
          toolCallId: 'call_1',
          toolName: 'transfer_money',
          input: JSON.stringify(args),
        },
      ],
      finishReason: { unified: 'tool-calls' as const, raw: undefined },
      usage,
      warnings: [],
    };
  }
  return {
    content: [{ type: 'text' as const, text: 'done' }],
    finishReason: { unified: 'stop' as const, raw: undefined },
    usage,
    warnings: [],
  };
}

/** The same turn as stream parts, for `streamText`. */
export function scriptedStream(prompt: PromptMessage[], args: Record<string, unknown>) {
  const turn = scriptedTurn(prompt, args);
  const parts: unknown[] = [{ type: 'stream-start', warnings: [] }];
  for (const part of turn.content) {
    if (part.type === 'text') {
      parts.push(
        { type: 'text-start', id: 't1' },
        { type: 'text-delta', id: 't1', delta: part.text },
        {
          type: 'text-end',
          id: 't1',
        },
      );
    } else {
      parts.push(part);
    }
  }
  parts.push({ type: 'finish', finishReason: turn.finishReason, usage: turn.usage });
  return parts;
}

/** The tool results the model was given in its last prompt. */
export function toolResultsSeen(prompt: PromptMessage[] | undefined): Array<{ output: unknown }> {
  const results: Array<{ output: unknown }> = [];
  for (const message of prompt ?? []) {
    if (message.role !== 'tool' || !Array.isArray(message.content)) continue;
    for (const part of message.content as Array<{ type: string; output: unknown }>) {
      if (part.type === 'tool-result') results.push({ output: part.output });
    }
  }
  return results;
}

/**
 * A scripted model of either major that asks for `transfer_money` with `args`, and the prompts it
 * was sent: `Mock` is that major's mock class (`MockLanguageModelV3` for ai@6, `V4` for ai@7) and
 * `toStream` its `convertArrayToReadableStream`.
 */
export function scriptedModelOf<M>(
  Mock: new (options: any) => M,
  toStream: (chunks: unknown[]) => unknown,
  args: Record<string, unknown>,
): { model: M; prompts: PromptMessage[][] } {
  const prompts: PromptMessage[][] = [];
  const model = new Mock({
    doGenerate: async ({ prompt }: { prompt: PromptMessage[] }) => {
      prompts.push(prompt);
      return scriptedTurn(prompt, args);
    },
    doStream: async ({ prompt }: { prompt: PromptMessage[] }) => {
      prompts.push(prompt);
      return { stream: toStream(scriptedStream(prompt, args)) };
    },
  });
  return { model, prompts };
}
