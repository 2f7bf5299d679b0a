/**
 * The AI SDK 6 face (it works on 7 too): each tool wrapped, `needsApproval` asking Gatehouse so a
 * hold becomes the SDK's approval request, and `execute` deciding again before the tool runs, so
 * an "approved" response from the client never runs a call Gatehouse has not released.
 */
import { type Decision, GatehouseError, toGatehouseError } from '../../src/index.js';
import {
  ActionBlockedError,
  CallMemory,
  callKey,
  checkSessionOption,
  decideToolCall,
  isHeld,
  jsonParams,
  OutcomeReports,
  reportError,
  type SessionOption,
  secretsOf,
  sessionOf,
  type ToolGateOptions,
  uncheckedReason,
} from '../toolgate/index.js';
import type { GateableTool, ToolExecutionOptionsLike } from './aiSdkShapes.js';
import { isApprovalReplay } from './approvalReplay.js';

/** What `session(ctx)` of {@link gateTools} reads: the SDK's execution options and the tool's name. */
export type ToolSessionContext = ToolExecutionOptionsLike & { toolName: string };

/** Options for {@link gateTools}: the shared gate options and where the session is. */
export interface GateToolsOptions extends ToolGateOptions, SessionOption<ToolSessionContext> {}

/** The gated tools, and a way to wait for the outcome reports. */
export interface GatedTools<TOOLS> {
  /** The same tools, each gated; pass them as `tools`. */
  tools: TOOLS;
  /** Resolves once the outcomes of the tools that have returned are recorded (or reported to `onError`). */
  flush(): Promise<void>;
}

/** What `needsApproval` decided, for the `execute` of the same call (kept under its {@link callKey}). */
interface Decided {
  decision?: Decision;
  error?: unknown;
}

type Execute = (input: unknown, options: ToolExecutionOptionsLike) => unknown;
type NeedsApproval = (input: unknown, options: ToolExecutionOptionsLike) => boolean | PromiseLike<boolean>;

/**
 * Wraps each tool so every call is gated, with the tool's key as the action and its parsed input as
 * `params` (AI SDK 6 `needsApproval`; also runs on 7, where a call-level `toolApproval` would take
 * precedence over it — use {@link gatehouseToolApproval} there):
 * - `needsApproval` evaluates: a hold answers `true` (the SDK returns a `tool-approval-request`,
 *   `onApprovalRequest` gets the Gatehouse approval with the same `tool_call_id`); otherwise the
 *   tool's own `needsApproval`, if any, still applies;
 * - `execute` runs the tool on Allow (Warn after `onWarn`), and throws {@link ActionBlockedError}
 *   on Block: the model reads the reason as the tool's error. It reuses the decision
 *   `needsApproval` made for the same call and arguments; a replayed approval is evaluated again,
 *   so the tool runs only if Gatehouse has released exactly this call (and that evaluation uses the
 *   approval up).
 * Gatehouse unreachable or no session: the tool does not run (its error says it could not be
 * checked; `onError` gets the error). The outcome (`succeeded`, or `failed` when the tool throws) is
 * recorded while the agent goes on.
 * @example
 * const { tools, flush } = gateTools({ transfer_money: transferTool }, { backend: gatehouse, sessionId: 'chat-42' });
 * const result = await generateText({ model, tools, prompt });
 * @throws {GatehouseError} `invalid_request` with neither `sessionId` nor `session`, or for a tool
 * without `execute` (a provider-executed or client-side tool, which Gatehouse cannot hold back)
 */
export function gateTools<TOOLS extends Record<string, GateableTool>>(
  tools: TOOLS,
  options: GateToolsOptions,
): GatedTools<TOOLS> {
  checkSessionOption(options, 'gateTools');
  const ungatable = Object.entries(tools)
    .filter(([, tool]) => typeof tool.execute !== 'function')
    .map(([name]) => `'${name}'`);
  if (ungatable.length > 0) {
    throw new GatehouseError(
      'invalid_request',
      `gateTools cannot hold back ${ungatable.join(', ')}: a tool without execute runs at the provider or in the client. ` +
        'Leave it out of gateTools (and gate it another way), or give it an execute.',
    );
  }
  const outcomes = new OutcomeReports(options);
  const decided = new CallMemory<Decided>();
  const gated = Object.fromEntries(
    Object.entries(tools).map(([name, tool]) => [name, gateTool(name, tool, options, decided, outcomes)]),
  );
  return { tools: gated as TOOLS, flush: () => outcomes.flush() };
}

function gateTool(
  action: string,
  tool: GateableTool,
  options: GateToolsOptions,
  decided: CallMemory<Decided>,
  outcomes: OutcomeReports,
): GateableTool {
  const execute = tool.execute as Execute;
  const ownApproval = tool.needsApproval as boolean | NeedsApproval | undefined;
  const sessionFor = (callOptions: ToolExecutionOptionsLike) =>
    sessionOf(options, { ...callOptions, toolName: action }, action);

  const needsApproval = async (input: unknown, callOptions: ToolExecutionOptionsLike): Promise<boolean> => {
    const { toolCallId } = callOptions;
    // A replayed approval runs the tool unless this says false (v6) or denied (v7): execute decides.
    if (isApprovalReplay(callOptions.messages, toolCallId)) return true;
    let key: string | undefined;
    let decision: Decision;
    try {
      const call = { sessionId: sessionFor(callOptions), action, params: jsonParams(input), toolCallId };
      key = callKey(call);
      decision = await decideToolCall(options, call);
    } catch (error) {
      // execute refuses the call with the reason; asking a person would show them nothing to approve.
      if (key !== undefined) decided.set(key, { error });
      return false;
    }
    if (isHeld(decision)) return true;
    if (decision.verdict === 'Block') {
      decided.set(key, { decision });
      return false;
    }
    // Gatehouse allows it; a tool that asks for a person of its own still does.
    const asksPerson =
      typeof ownApproval === 'function' ? await ownApproval(input, callOptions) : ownApproval === true;
    // Only a call that runs now keeps this decision: a replay, after the person, is decided afresh
    // (the state or the policy may have changed meanwhile).
    if (!asksPerson) decided.set(key, { decision });
    return asksPerson;
  };

  const gatedExecute = async (input: unknown, callOptions: ToolExecutionOptionsLike): Promise<unknown> => {
    const { toolCallId } = callOptions;
    let decision: Decision;
    try {
      const call = { sessionId: sessionFor(callOptions), action, params: jsonParams(input), toolCallId };
      // What needsApproval decided for exactly this call: same ID, session, tool and arguments.
      const earlier = decided.take(callKey(call));
      if (earlier !== undefined) {
        if (earlier.error !== undefined) throw earlier.error;
        decision = earlier.decision!;
      } else {
        // A replayed approval, or a call needsApproval did not see: the approval request exists
        // already (or is not this hook's to make), so only onWarn applies.
        decision = await decideToolCall({ backend: options.backend, onWarn: options.onWarn }, call);
      }
    } catch (error) {
      reportError(options.onError, error, { stage: 'evaluate', action, toolCallId });
      throw new GatehouseError(toGatehouseError(error).code, uncheckedReason(action, error), {
        cause: error,
      });
    }
    if (decision.verdict === 'Block') throw new ActionBlockedError(decision);
    return runRecorded(() => execute(input, callOptions), decision.decision_id, outcomes, input);
  };

  const copy = Object.create(
    Object.getPrototypeOf(tool) as object | null,
    Object.getOwnPropertyDescriptors(tool),
  ) as GateableTool;
  return Object.assign(copy, { needsApproval, execute: gatedExecute });
}

/**
 * Runs the tool and starts its outcome report. A tool that streams (returns an async iterable) is
 * read to its end and its last output returned — the final output the SDK would keep; its
 * preliminary outputs are not streamed through, since the gate's answer is awaited first.
 */
async function runRecorded(
  run: () => unknown,
  decisionId: string,
  outcomes: OutcomeReports,
  input: unknown,
): Promise<unknown> {
  try {
    let result = await run();
    if (isAsyncIterable(result)) {
      let last: unknown;
      for await (const output of result) last = output;
      result = last;
    }
    outcomes.succeeded(decisionId);
    return result;
  } catch (error) {
    // An error often quotes the tool's input: its secrets are masked in the outcome, as in params.
    outcomes.failed(decisionId, error, secretsOf(input));
    throw error;
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return value !== null && typeof value === 'object' && Symbol.asyncIterator in value;
}
