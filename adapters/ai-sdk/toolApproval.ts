/**
 * The AI SDK 7 face: a call-level `toolApproval` for `generateText`, `streamText` and
 * `ToolLoopAgent`. The SDK calls it after parsing (and repairing) a tool call's input, so the gate
 * sees what the tool will get; it calls it again when the app replays an approval response, so a
 * held call runs only when Gatehouse itself has released it.
 */
import {
  CallMemory,
  checkSessionOption,
  decideToolCall,
  isHeld,
  jsonParams,
  notReleasedReason,
  OutcomeReports,
  reportError,
  type SessionOption,
  secretsOf,
  sessionOf,
  type ToolGateOptions,
  uncheckedReason,
} from '../toolgate/index.js';
import type { ToolApprovalCall, ToolApprovalVerdict, ToolExecutionEndLike } from './aiSdkShapes.js';
import { isApprovalReplay } from './approvalReplay.js';

/** Options for {@link gatehouseToolApproval}: the shared gate options and where the session is. */
export interface GatehouseToolApprovalOptions<RUNTIME_CONTEXT = unknown>
  extends ToolGateOptions,
    SessionOption<ToolApprovalCall<RUNTIME_CONTEXT>> {}

/** The `toolApproval` function, with the outcome hook and a way to wait for the outcome reports. */
export interface GatehouseToolApproval<RUNTIME_CONTEXT = unknown> {
  (call: ToolApprovalCall<RUNTIME_CONTEXT>): Promise<ToolApprovalVerdict>;
  /**
   * Pass as `onToolExecutionEnd` of the same `generateText` / `streamText` / `ToolLoopAgent`: it
   * records each gated call's result (`succeeded`, or `failed` with the error's first words).
   */
  readonly onToolExecutionEnd: (event: ToolExecutionEndLike) => void;
  /** Resolves once the outcomes of the tools that have ended are recorded (or reported to `onError`). */
  flush(): Promise<void>;
}

/**
 * A call-level `toolApproval` (AI SDK 7) that asks Gatehouse about every tool call, with the tool's
 * name as the action and its parsed input as `params`:
 * - **Allow** → not applicable (the tool runs);
 * - **Warn** → approved with the reason, after `onWarn`;
 * - **Block** → denied with the reason, which the model reads as the tool's result;
 * - **held** for approval → `user-approval` with the reason (it names the Gatehouse approval):
 *   the SDK returns a `tool-approval-request` for the call; `onApprovalRequest` gets the Gatehouse
 *   approval with the same `tool_call_id`. When the app replays a `tool-approval-response`, the
 *   call is evaluated again: it runs only if Gatehouse has a released approval for exactly this call
 *   (same session, tool, arguments, state and policy), which that evaluation uses up; otherwise it
 *   is denied — an "approved" response nobody gave in Gatehouse releases nothing.
 *
 * Gatehouse unreachable, no session, or a throwing hook: denied (the tool does not run; the model
 * reads that the call could not be checked; `onError` gets the error). Like any call-level
 * `toolApproval`, it takes precedence over the tools' own `needsApproval`, and it is not asked
 * about the calls a local tool caller (`experimental_toolCallers`) makes: wrap those tools with
 * {@link gateTools}, whose `execute` decides every call.
 * @example
 * const gate = gatehouseToolApproval({ backend: gatehouse, sessionId: 'chat-42' });
 * const result = await generateText({ model, tools, prompt, toolApproval: gate, onToolExecutionEnd: gate.onToolExecutionEnd });
 * @throws {GatehouseError} `invalid_request` with neither `sessionId` nor `session`
 */
export function gatehouseToolApproval<RUNTIME_CONTEXT = unknown>(
  options: GatehouseToolApprovalOptions<RUNTIME_CONTEXT>,
): GatehouseToolApproval<RUNTIME_CONTEXT> {
  checkSessionOption(options, 'gatehouseToolApproval');
  const outcomes = new OutcomeReports(options);
  // The decision that let each call through, for the outcome report after it ran: under the tool's
  // name too, as the model may give one ID to calls of two tools in a step. Not under the input,
  // which the tool may change while it runs.
  // With the secrets of the call's input: its error may quote them, and its outcome must not.
  const running = new CallMemory<{ decisionId: string; secrets: ReadonlySet<string> }>();
  const runningKey = (toolName: string, toolCallId: string) => `${toolName}\u0000${toolCallId}`;

  const approve = async (call: ToolApprovalCall<RUNTIME_CONTEXT>): Promise<ToolApprovalVerdict> => {
    const { toolCallId, toolName: action } = call.toolCall;
    const replay = isApprovalReplay(call.messages, toolCallId);
    let decision: Awaited<ReturnType<typeof decideToolCall>>;
    try {
      decision = await decideToolCall(
        // A replayed call's approval request exists already: it is not announced twice.
        replay ? { backend: options.backend, onWarn: options.onWarn } : options,
        {
          sessionId: sessionOf(options, call, action),
          action,
          params: jsonParams(call.toolCall.input),
          toolCallId,
        },
      );
    } catch (error) {
      reportError(options.onError, error, { stage: 'evaluate', action, toolCallId });
      return { type: 'denied', reason: uncheckedReason(action, error) };
    }
    switch (decision.verdict) {
      case 'Allow':
        running.set(runningKey(action, toolCallId), {
          decisionId: decision.decision_id,
          secrets: secretsOf(call.toolCall.input),
        });
        return { type: 'not-applicable' };
      case 'Warn':
        running.set(runningKey(action, toolCallId), {
          decisionId: decision.decision_id,
          secrets: secretsOf(call.toolCall.input),
        });
        return { type: 'approved', reason: decision.reason };
      case 'Block':
        if (!isHeld(decision)) return { type: 'denied', reason: decision.reason };
        // On a replay, "ask a person" would run the tool: the SDK runs everything not denied.
        return replay
          ? { type: 'denied', reason: notReleasedReason(decision) }
          : { type: 'user-approval', reason: decision.reason };
      default: {
        const unknown: never = decision.verdict;
        return { type: 'denied', reason: `Unknown verdict ${String(unknown)}` };
      }
    }
  };

  const onToolExecutionEnd = (event: ToolExecutionEndLike): void => {
    const taken = running.take(runningKey(event.toolCall.toolName, event.toolCall.toolCallId));
    if (taken === undefined) return;
    if (event.toolOutput.type === 'tool-error') {
      outcomes.failed(taken.decisionId, event.toolOutput.error, taken.secrets);
    } else outcomes.succeeded(taken.decisionId);
  };

  return Object.assign(approve, { onToolExecutionEnd, flush: () => outcomes.flush() });
}
