/**
 * The gate around one tool call, shared by the callback handler and the middleware: their
 * options, the decision before the tool (session, input, verdict) and the outcome after it.
 * Each face only adapts LangChain's hook to these calls and surfaces a Block its own way.
 */
import type { Attributes, Span } from '@opentelemetry/api';
import {
  type Decision,
  GatehouseError,
  GEN_AI_ATTRIBUTES,
  MAX_APPROVAL_WAIT_SECONDS,
  SPAN_ATTRIBUTES,
} from '../../src/index.js';
import {
  type ApprovalRequest,
  approvalRequestOf,
  type GateBackend,
  isHeld,
  type OutcomeReports,
  shortDetail,
} from '../toolgate/index.js';
import { type RunSessionSources, requireSession } from './sessionRule.js';

/** Options shared by {@link GatehouseCallbackHandler} and {@link gatehouseMiddleware}. */
export interface GateOptions {
  /** The Gatehouse to ask: an in-process core or a `/v1` client. */
  backend: GateBackend;
  /**
   * The session every tool call is evaluated in.
   * @default the middleware: the run's `configurable.thread_id` (then `session_id`); the
   * callback handler: `metadata.thread_id` (then `session_id`), which LangGraph fills from
   * `configurable.thread_id`. None at all is an error.
   */
  sessionId?: string;
  /**
   * Called with a Warn decision before the tool runs; the tool runs once it returns.
   * Throwing from it stops the tool (a place for a human approval step).
   */
  onWarn?: (decision: Decision) => void | Promise<void>;
  /**
   * Record each gated call's result as an `action_outcome` event (`succeeded` / `failed`). The
   * report is written while the agent goes on (the tool's result does not wait for it); `flush()`
   * of the handler or middleware waits for the reports still being written.
   * @default true
   */
  recordOutcomes?: boolean;
  /**
   * Called when recording an outcome fails. Such failures never reach the agent.
   * @default ignore
   */
  onError?: (error: unknown, context: { decisionId: string; stage: 'record_outcome' }) => void;
  /**
   * What to do with a call a policy rule holds for approval (a Block whose `approval.status` is
   * `pending`):
   * - `'block'`: answer it as a Block; the message carries the approval ID;
   * - `'wait'`: wait for a person's decision (up to `approvalTimeoutMs`, through the backend's
   *   `getApproval`), then evaluate the call again; still pending at the deadline is a Block;
   * - `'interrupt'` (middleware only): raise a LangGraph `interrupt()` carrying
   *   {@link ApprovalInterrupt}; the graph needs a checkpointer and resumes with
   *   `new Command({ resume })`. On resume the call is evaluated again: the resume payload is
   *   never taken as the approval, only a decision recorded by an approver is.
   * @default 'block'
   */
  onApproval?: 'block' | 'wait' | 'interrupt';
  /** How long `onApproval: 'wait'` waits, in ms. @default 60000 */
  approvalTimeoutMs?: number;
}

/** The value of the LangGraph interrupt raised by `onApproval: 'interrupt'`. */
export type ApprovalInterrupt = ApprovalRequest;

/** Raises a LangGraph interrupt (the middleware passes `interrupt` from `@langchain/langgraph`). */
export type RaiseInterrupt = (value: ApprovalInterrupt) => unknown;

/** One tool call as the gate sees it. */
export interface GatedToolCall {
  /** The tool's name: the action the policy is written for. */
  action: string;
  /** The tool's arguments. */
  params: Record<string, unknown>;
  /** The model's ID for this call, recorded as `context.tool_call_id`. */
  toolCallId?: string | undefined;
  /** Where this face can find the session (the `sessionId` option is added here). */
  run: Omit<RunSessionSources, 'pinned'>;
}

/**
 * Decides one tool call before it runs: finds the session, evaluates, and on Warn awaits
 * `onWarn`. Returns the decision; `verdict === 'Block'` means the tool must not run.
 * @throws {GatehouseError} with no session or when the backend fails (fail closed)
 * @throws whatever `onWarn` throws (the tool must not run then either)
 */
export async function gateToolCall(
  options: GateOptions,
  call: GatedToolCall,
  raiseInterrupt?: RaiseInterrupt,
): Promise<Decision> {
  const sessionId = requireSession(call.action, { pinned: options.sessionId, ...call.run });
  const evaluate = () =>
    options.backend.evaluate({
      session_id: sessionId,
      action: call.action,
      params: call.params,
      ...(call.toolCallId === undefined ? {} : { context: { tool_call_id: call.toolCallId } }),
    });
  let decision = await evaluate();
  if (isHeld(decision)) decision = await awaitApproval(options, decision, evaluate, call, raiseInterrupt);
  switch (decision.verdict) {
    case 'Allow':
    case 'Block':
      return decision;
    case 'Warn':
      await options.onWarn?.(decision);
      return decision;
    default: {
      const unknown: never = decision.verdict;
      throw new Error(`Unknown verdict ${String(unknown)}`);
    }
  }
}

/**
 * The span of one gated tool call, per the GenAI conventions: `execute_tool {tool}` with the
 * tool's name and the model's call ID. Never its arguments (they may be secrets).
 */
export function toolCallSpan(call: Pick<GatedToolCall, 'action' | 'toolCallId'>): {
  name: string;
  attributes: Attributes;
} {
  return {
    name: `${GEN_AI_ATTRIBUTES.executeTool} ${call.action}`,
    attributes: {
      [GEN_AI_ATTRIBUTES.operationName]: GEN_AI_ATTRIBUTES.executeTool,
      [GEN_AI_ATTRIBUTES.toolName]: call.action,
      [GEN_AI_ATTRIBUTES.toolType]: 'function',
      ...(call.toolCallId === undefined ? {} : { [GEN_AI_ATTRIBUTES.toolCallId]: call.toolCallId }),
    },
  };
}

/** Puts the gate's answer on the tool call's span. */
export function noteDecision(span: Span, decision: Decision): void {
  span.setAttributes({
    [SPAN_ATTRIBUTES.decisionId]: decision.decision_id,
    [SPAN_ATTRIBUTES.verdict]: decision.verdict,
  });
}

/** Handles a held decision per `onApproval`; resolves to the decision the call goes on with. */
async function awaitApproval(
  options: GateOptions,
  held: Decision,
  evaluate: () => Promise<Decision>,
  call: GatedToolCall,
  raiseInterrupt: RaiseInterrupt | undefined,
): Promise<Decision> {
  switch (options.onApproval ?? 'block') {
    case 'block':
      return held;
    case 'interrupt': {
      if (!raiseInterrupt) {
        throw new GatehouseError(
          'invalid_request',
          "onApproval: 'interrupt' needs gatehouseMiddleware (a LangGraph node); the callback handler can 'wait' or 'block'.",
        );
      }
      let decision = held;
      // Each interrupt() returns one resume value; the next one without a value pauses the graph
      // again. Whatever was resumed with, only a fresh evaluation decides.
      while (isHeld(decision)) {
        raiseInterrupt(approvalRequestOf(decision, call));
        decision = await evaluate();
      }
      return decision;
    }
    case 'wait': {
      const getApproval = options.backend.getApproval?.bind(options.backend);
      if (!getApproval) {
        throw new GatehouseError('invalid_request', "onApproval: 'wait' needs a backend with getApproval.");
      }
      const id = held.approval!.id;
      const deadline = Date.now() + (options.approvalTimeoutMs ?? 60_000);
      for (;;) {
        const left = Math.ceil((deadline - Date.now()) / 1000);
        if (left <= 0) return held;
        const approval = await getApproval(id, { wait: Math.min(left, MAX_APPROVAL_WAIT_SECONDS) });
        // Approved: the re-evaluation consumes it if nothing changed. Denied: it records the
        // refusal. Expired or used: a new request would be opened, so stop at the held answer.
        if (approval.status === 'approved' || approval.status === 'denied') return evaluate();
        if (approval.status !== 'pending') return held;
      }
    }
    default: {
      const unknown: never = options.onApproval as never;
      throw new GatehouseError('invalid_request', `Unknown onApproval '${String(unknown)}'.`);
    }
  }
}

/** The text of a ToolMessage-like value (its `content`). */
function toolMessageText(output: unknown): string {
  const content = (output as { content?: unknown } | null)?.content;
  return typeof content === 'string' ? content : (JSON.stringify(content) ?? '');
}

/**
 * Starts recording what a LangChain tool returned: `failed` for an error ToolMessage (its text with
 * `secrets` masked), else `succeeded`.
 */
export function reportToolResult(
  outcomes: OutcomeReports,
  decisionId: string,
  output: unknown,
  secrets: ReadonlySet<string>,
): void {
  outcomes.record(decisionId, () =>
    (output as { status?: unknown } | null)?.status === 'error'
      ? { outcome: 'failed', detail: shortDetail(toolMessageText(output), secrets) }
      : { outcome: 'succeeded' },
  );
}
