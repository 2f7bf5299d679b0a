/**
 * What the OpenAI Agents tests share: the SDK's own scripted model (`ScriptedModel` from
 * `@openai/agents/testing`) answering like a model would — one `transfer_money` call after the
 * user spoke, "done" once it has read a tool's output — and a `transfer_money` tool (zod schema:
 * the recipient defaults, trimmed and lower-cased) that records every transfer it really made.
 */
import { type AgentInputItem, type ModelRequest, tool } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { z } from 'zod';
import { DEFAULT_RECIPIENT } from '../support/frameworkWorlds.js';

/** A scripted model that asks for `transfer_money` with `args`, and the requests it was sent. */
export function scriptedModel(args: Record<string, unknown>, name = 'transfer_money') {
  const requests: ModelRequest[] = [];
  const respond = modelResponder(({ request }) => {
    requests.push(request);
    const input = typeof request.input === 'string' ? [] : request.input;
    const last = input.at(-1) as { type?: string } | undefined;
    return last?.type === 'function_call_result'
      ? [assistantMessage('done')]
      : [functionCall(name, args, { callId: 'call_1' })];
  });
  // One responder per model call: enough for every run a test makes with this model.
  const model = new ScriptedModel(Array.from({ length: 20 }, () => respond));
  return { model, requests };
}

/** The outputs of the tool calls the model was given in its last request, as text. */
export function toolOutputsSeen(requests: ModelRequest[]): string[] {
  const input = requests.at(-1)?.input;
  if (input === undefined || typeof input === 'string') return [];
  return (input as AgentInputItem[])
    .filter((item) => (item as { type?: string }).type === 'function_call_result')
    .map((item) => {
      const output = (item as { output: unknown }).output;
      if (typeof output === 'string') return output;
      const text = (output as { text?: unknown } | null)?.text;
      return typeof text === 'string' ? text : JSON.stringify(output);
    });
}

/** The tool's schema: the recipient defaults, and is trimmed and lower-cased before the tool runs. */
export const transferParameters = z.object({
  amount: z.number(),
  to: z.string().trim().toLowerCase().default(DEFAULT_RECIPIENT),
});

/** A `transfer_money` function tool and the transfers it made. */
export function transferTool(options: { fail?: boolean; needsApproval?: boolean } = {}) {
  const calls: Array<z.infer<typeof transferParameters>> = [];
  const transfer = tool({
    name: 'transfer_money',
    description: 'Transfers money to the recipient.',
    parameters: transferParameters,
    ...(options.needsApproval === undefined ? {} : { needsApproval: options.needsApproval }),
    execute: async (input) => {
      if (options.fail) throw new Error('bank is closed');
      calls.push(input);
      return `sent ${input.amount} to ${input.to}`;
    },
  });
  return { transfer, calls };
}
