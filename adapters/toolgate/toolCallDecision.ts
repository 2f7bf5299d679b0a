/**
 * The decision before one tool call, as every framework face asks for it: the tool's name as the
 * action, the arguments the tool will run with as `params`, the model's call ID as
 * `context.tool_call_id`; a Warn awaits `onWarn`, a hold tells `onApprovalRequest`. Each face maps
 * the answer to its framework's own vocabulary (not applicable / approved / denied / ask a person).
 */
import { type Decision, toGatehouseError } from '../../src/index.js';
import type { GateBackend } from './gateBackend.js';
import type { GateErrorContext } from './outcomeReports.js';

/** The value handed to `onApprovalRequest` (and LangChain's `interrupt()`) when a call is held. */
export interface ApprovalRequest {
  type: 'gatehouse.approval_required';
  /** The Gatehouse approval a person decides: `POST /v1/approvals/{approval_id}/approve`. */
  approval_id: string;
  expires_at: string;
  session_id: string;
  action: string;
  params: Record<string, unknown>;
  decision_id: string;
  reason: string;
  /** The model's ID for the call: the link between the framework's approval request and this one. */
  tool_call_id?: string;
}

/** Options shared by the AI SDK and OpenAI Agents faces. */
export interface ToolGateOptions {
  /** The Gatehouse to ask: an in-process core (`createGatehouse`) or a `/v1` client (`createGatehouseClient`). */
  backend: GateBackend;
  /**
   * Called with a Warn decision before the tool runs; the tool runs once it returns. Throwing from
   * it stops the tool.
   */
  onWarn?: (decision: Decision) => void | Promise<void>;
  /**
   * Called when a rule holds a call for a person's approval, before the framework is told to ask
   * for it: store the request by its `tool_call_id` (the framework's approval request carries the
   * same call ID) so your approval screen can show it and a person can approve it in Gatehouse.
   * Throwing from it stops the tool.
   */
  onApprovalRequest?: (request: ApprovalRequest) => void | Promise<void>;
  /**
   * Record each gated call's result as an `action_outcome` event (`succeeded` / `failed`), written
   * while the agent goes on; `flush()` waits for the reports still being written.
   * @default true
   */
  recordOutcomes?: boolean;
  /**
   * Called when Gatehouse cannot decide a call (the tool then does not run, and the model reads
   * that it could not be checked) or an outcome cannot be recorded. Never breaks the agent.
   * @default ignore
   */
  onError?: (error: unknown, context: GateErrorContext) => void;
}

/** One tool call as the gate sees it. */
export interface GatedToolCall {
  sessionId: string;
  /** The tool's name: the action the policy is written for. */
  action: string;
  /** The arguments the tool will run with. */
  params: Record<string, unknown>;
  /** The model's ID for this call, recorded as `context.tool_call_id`. */
  toolCallId?: string | undefined;
}

/** True for a Block that waits for a person. */
export function isHeld(decision: Decision): boolean {
  return decision.verdict === 'Block' && decision.approval?.status === 'pending';
}

/** The {@link ApprovalRequest} of a held decision. */
export function approvalRequestOf(
  decision: Decision,
  call: Pick<GatedToolCall, 'params' | 'toolCallId'>,
): ApprovalRequest {
  return {
    type: 'gatehouse.approval_required',
    approval_id: decision.approval!.id,
    expires_at: decision.approval!.expires_at,
    session_id: decision.session_id,
    action: decision.action,
    params: call.params,
    decision_id: decision.decision_id,
    reason: decision.reason,
    ...(call.toolCallId === undefined ? {} : { tool_call_id: call.toolCallId }),
  };
}

/**
 * Evaluates one call; a Warn awaits `onWarn`, a hold awaits `onApprovalRequest`.
 * @throws when the backend fails or a hook throws: the caller must not run the tool (fail closed)
 */
export async function decideToolCall(
  options: Pick<ToolGateOptions, 'backend' | 'onWarn' | 'onApprovalRequest'>,
  call: GatedToolCall,
): Promise<Decision> {
  const decision = await options.backend.evaluate({
    session_id: call.sessionId,
    action: call.action,
    params: call.params,
    ...(call.toolCallId === undefined ? {} : { context: { tool_call_id: call.toolCallId } }),
  });
  switch (decision.verdict) {
    case 'Allow':
      return decision;
    case 'Warn':
      await options.onWarn?.(decision);
      return decision;
    case 'Block':
      if (isHeld(decision)) await options.onApprovalRequest?.(approvalRequestOf(decision, call));
      return decision;
    default: {
      const unknown: never = decision.verdict;
      throw new Error(`Unknown verdict ${String(unknown)}`);
    }
  }
}

/**
 * What the model reads when Gatehouse could not decide a call: that it did not run, and the error
 * code, never the error's message (it may name hosts or paths; `onError` gets the error itself).
 */
export function uncheckedReason(action: string, error: unknown): string {
  return `Gatehouse could not check '${action}' (${toGatehouseError(error).code}), so it did not run.`;
}

/**
 * What the model reads when the framework says a held call was approved but Gatehouse has not
 * released it (nobody approved it in Gatehouse, or the call is not the one that was approved).
 */
export function notReleasedReason(decision: Decision): string {
  return `Not released by Gatehouse: an approval given outside Gatehouse does not release a held call. ${decision.reason}`;
}

/** Calls `onError` without letting a failing hook break the agent. */
export function reportError(
  onError: ToolGateOptions['onError'] | undefined,
  error: unknown,
  context: GateErrorContext,
): void {
  try {
    onError?.(error, context);
  } catch {
    // A failing error hook must not fail the agent.
  }
}
