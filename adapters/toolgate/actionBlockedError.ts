/** The error a face throws to stop a tool the gate blocked. */
import type { Decision } from '../../src/index.js';

/**
 * Thrown when the gate answers Block and the tool must not run: by LangChain's
 * `GatehouseCallbackHandler`, and by a tool wrapped with the AI SDK face's `gateTools`. Its message
 * reaches the model (as an error ToolMessage or a tool-error result), so it holds the policy's
 * reason and the decision ID only — the core has already masked secrets in the reason.
 */
export class ActionBlockedError extends Error {
  /** The Block decision, as recorded in the history. */
  readonly decision: Decision;

  constructor(decision: Decision) {
    super(`Blocked by Gatehouse: ${decision.reason} (decision ${decision.decision_id})`);
    this.name = 'ActionBlockedError';
    this.decision = decision;
  }
}

/** True when `value` is an {@link ActionBlockedError}. */
export function isActionBlockedError(value: unknown): value is ActionBlockedError {
  return value instanceof ActionBlockedError;
}
