/**
 * What a LangChain tool call looks like from a callback: the tool's name and its arguments,
 * recovered from what `handleToolStart` receives.
 */
import type { Serialized } from '@langchain/core/load/serializable';
import { GatehouseError } from '../../src/index.js';
import { firstString } from './sessionRule.js';

/** What `handleToolStart` knows about the call, plus the model's names for its tool call ID. */
export interface ToolStartFacts {
  serialized: Serialized;
  runName?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  toolCallId?: string | undefined;
  /** Every tool name the model used under this call's ID in this run (from the model's output). */
  calledNames?: readonly string[] | undefined;
}

/**
 * The tool's name, as the policy knows it:
 * 1. `runName`: set to the tool's name by `tool()`, `DynamicStructuredTool` and `DynamicTool`;
 * 2. what the app set, `kwargs.name` of a serializable tool, then `metadata.name` (a subclass
 *    can set `metadata = { name }`), and the name the model used for this `toolCallId` (covers
 *    `StructuredTool` subclasses inside agents, whose `runName` is undefined): when both are
 *    there they must agree (run metadata reaches every tool below it, so a `name` put there for
 *    another purpose must not rename a tool the model called), and the model's counts only if it
 *    gave the ID one tool.
 * The class name in `serialized.id` is never used: a policy written for `transfer_money` would
 * not match `TransferMoneyTool`, so guessing would let the call through unchecked.
 * @throws {GatehouseError} `invalid_request` when no source names the tool, when the app's name
 * and the model's disagree, or when only a tool call ID the model used for several tools names
 * it (fail closed)
 */
export function resolveToolName(facts: ToolStartFacts): string {
  if (typeof facts.runName === 'string' && facts.runName !== '') return facts.runName;
  const kwargs = facts.serialized.type === 'constructor' ? facts.serialized.kwargs : undefined;
  const appName = firstString(kwargs?.['name'], facts.metadata?.['name']);
  const calledNames = facts.calledNames ?? [];
  const called = calledNames.length === 1 ? calledNames[0] : undefined;
  const className = facts.serialized.id.at(-1) ?? 'unknown';
  const refuse = (why: string) =>
    new GatehouseError(
      'invalid_request',
      `Gatehouse cannot tell which tool '${className}' is${why}, so it does not run.`,
    );
  if (appName !== undefined && called !== undefined && appName !== called) {
    throw refuse(`: it is named '${appName}', but the model called it '${called}'`);
  }
  const name = appName ?? called;
  if (name !== undefined) return name;
  if (calledNames.length > 1) {
    throw refuse(
      `: the model used tool call ID '${facts.toolCallId}' for ${calledNames.map((n) => `'${n}'`).join(' and ')}` +
        ` (give it metadata = { name: '<tool name>' } to name it yourself)`,
    );
  }
  throw refuse(
    ` (invoke it with { runName: tool.name }, give it metadata = { name: '<tool name>' }, or define it with tool())`,
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
