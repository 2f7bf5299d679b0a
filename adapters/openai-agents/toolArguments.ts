/**
 * The arguments an OpenAI Agents function tool runs with, from the model's JSON text: what a tool
 * input guardrail must gate, though it is handed only that text.
 */
// The runner parses a call with the tool's own schema (zod defaults, trims, transforms) through
// this function, and hands the result to `needsApproval` and then to the tool. It is published for
// the SDK's runners on the `utils/internal` entry, and is the only way to parse exactly as the
// runner does: gating `JSON.parse(arguments)` instead let a schema default carry a value the
// policy never saw, and broke the match with the arguments a hold was approved for. The tests pin
// it with a schema that defaults, trims and lower-cases.
import { prepareFunctionToolInput } from '@openai/agents-core/utils/internal';
import { jsonParams } from '../toolgate/index.js';

/** What the runner's parser needs of a function tool: its `invoke` (the parser is registered under it). */
export type ParsingTool = Parameters<typeof prepareFunctionToolInput>[0];

/**
 * The tool's parsed input for `arguments`, as JSON `params`. A tool made without `tool()` (no
 * registered parser) gets the model's JSON as it is, and so is gated on it.
 * @throws when the arguments do not parse (the caller refuses the call: fail closed)
 */
export function argumentsToolRunsWith(tool: ParsingTool, json: string): Record<string, unknown> {
  const prepared = prepareFunctionToolInput(tool, json);
  if (prepared === undefined) return jsonParams(json === '' ? {} : JSON.parse(json));
  if (!prepared.result.success) throw prepared.result.error;
  return jsonParams(prepared.result.value);
}
