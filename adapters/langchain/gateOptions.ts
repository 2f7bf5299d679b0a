/**
 * What the callback handler and the middleware share: their options, the session rule and the
 * outcome recorder that never breaks the agent.
 */
import { type Decision, GatehouseError } from '../../src/index.js';
import type { GateBackend } from './gateBackend.js';

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
   * Record each gated call's result as an `action_outcome` event (`succeeded` / `failed`).
   * @default true
   */
  recordOutcomes?: boolean;
  /**
   * Called when recording an outcome fails. Such failures never reach the agent.
   * @default ignore
   */
  onError?: (error: unknown, context: { decisionId: string; stage: 'record_outcome' }) => void;
}

/** Longest `detail` sent with a failed outcome; the point is a hint, not a log. */
const DETAIL_CHARS = 200;

/** The first characters of an error's message (or of a text), for an outcome's `detail`. */
export function shortDetail(error: unknown): string {
  const text =
    error instanceof Error
      ? `${error.name}: ${error.message}`
      : typeof error === 'string'
        ? error
        : (JSON.stringify(error) ?? String(error));
  return text.length > DETAIL_CHARS ? `${text.slice(0, DETAIL_CHARS - 1)}…` : text;
}

/** The text of a ToolMessage-like value (its `content`). */
export function toolMessageText(output: unknown): string {
  const content = (output as { content?: unknown } | null)?.content;
  return typeof content === 'string' ? content : (JSON.stringify(content) ?? '');
}

/** The first non-empty string among `candidates`. */
export function firstString(...candidates: unknown[]): string | undefined {
  for (const candidate of candidates) {
    if (typeof candidate === 'string' && candidate.trim() !== '') return candidate;
  }
  return undefined;
}

/**
 * Where a face reads the session: the middleware and the record-state tool get the run's
 * `configurable`; a callback handler gets only the callback `metadata` (LangGraph copies
 * `configurable.thread_id` into it; @langchain/core passes `configurable` to tracers alone).
 */
export type SessionPlace = 'configurable' | 'metadata';

/** The error for a tool call with no session: fail closed, and say how to fix it for `place`. */
export function missingSessionError(action: string, place: SessionPlace): GatehouseError {
  const how =
    place === 'configurable'
      ? 'or run the agent with { configurable: { thread_id } }.'
      : 'or run with { metadata: { thread_id } }. LangGraph agents and graphs copy configurable.thread_id ' +
        'into the metadata; a bare tool.invoke or a RunnableSequence does not, and LangChain hands a ' +
        'callback handler the metadata only.';
  return new GatehouseError(
    'invalid_request',
    `Gatehouse cannot gate '${action}': no session. Pass sessionId, ${how}`,
  );
}

/**
 * Records an outcome; a failure goes to `onError` and never to the caller, so a Gatehouse
 * hiccup after the tool ran cannot turn a done action into an agent error.
 */
export async function recordOutcomeSafely(
  options: GateOptions,
  decisionId: string,
  outcome: 'succeeded' | 'failed',
  detail?: string,
): Promise<void> {
  if (options.recordOutcomes === false) return;
  try {
    await options.backend.recordOutcome(decisionId, { outcome, ...(detail === undefined ? {} : { detail }) });
  } catch (error) {
    try {
      options.onError?.(error, { decisionId, stage: 'record_outcome' });
    } catch {
      // A failing error hook must not fail the agent either.
    }
  }
}
