/**
 * What a LangChain tool call looks like from a callback: the tool's name and its arguments,
 * recovered from what `handleToolStart` receives.
 */
import type { Serialized } from '@langchain/core/load/serializable';
import { GatehouseError } from '../../src/index.js';
import { firstString } from './sessionRule.js';

/** What `handleToolStart` knows about the call, plus the model's name for its tool call ID. */
export interface ToolStartFacts {
  serialized: Serialized;
  runName?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** The tool name the model asked for under this call's ID (from the model run's output). */
  calledName?: string | undefined;
}

/**
 * The tool's name, as the model and the policy know it:
 * 1. `runName`: set to the tool's name by `tool()`, `DynamicStructuredTool` and `DynamicTool`;
 * 2. the name the model used for this `toolCallId` (covers `StructuredTool` subclasses inside
 *    agents, whose `runName` is undefined);
 * 3. `kwargs.name` of a serializable tool, then `metadata.name` (a subclass can set
 *    `metadata = { name }`).
 * The class name in `serialized.id` is never used: a policy written for `transfer_money` would
 * not match `TransferMoneyTool`, so guessing would let the call through unchecked.
 * @throws {GatehouseError} `invalid_request` when no source names the tool (fail closed)
 */
export function resolveToolName(facts: ToolStartFacts): string {
  const kwargs = facts.serialized.type === 'constructor' ? facts.serialized.kwargs : undefined;
  const name = firstString(facts.runName, facts.calledName, kwargs?.['name'], facts.metadata?.['name']);
  if (name !== undefined) return name;
  const className = facts.serialized.id.at(-1) ?? 'unknown';
  throw new GatehouseError(
    'invalid_request',
    `Gatehouse cannot tell which tool '${className}' is, so it does not run. Invoke it with ` +
      `{ runName: tool.name }, give it metadata = { name: '<tool name>' }, or define it with tool().`,
  );
}

/**
 * The tool's arguments as a JSON object for `evaluate`'s `params`. LangChain hands callbacks the
 * arguments as JSON text (`{"input": "…"}` for a `DynamicTool`); anything that is not a JSON
 * object is wrapped as `{ input }`.
 */
export function toolParams(input: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch {
    return { input };
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : { input: parsed };
}
