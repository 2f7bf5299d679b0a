/**
 * What one hook of a framework learned about a tool call, kept for a later hook of the same call
 * (the AI SDK's `needsApproval` for its `execute`, OpenAI Agents' `needsApproval` for its input
 * guardrail, a decision for the outcome report after the tool). Bounded: an entry whose later hook
 * never comes (the run was aborted, a person never answered) is dropped once newer calls push it
 * out, so a long-lived gate does not grow.
 */
import { createHash } from 'node:crypto';
import stringify from 'safe-stable-stringify';

/** How many calls a memory keeps at most. */
const MAX_ENTRIES = 1000;

/** A bounded map from a tool call ID to what a later hook of that call needs. */
export class CallMemory<T> {
  readonly #entries = new Map<string, T>();

  /** Remembers `value` for the call, replacing an older entry of the same ID. */
  set(toolCallId: string, value: T): void {
    this.#entries.delete(toolCallId);
    this.#entries.set(toolCallId, value);
    if (this.#entries.size > MAX_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  /** Returns and forgets the entry of the call: each is used once. */
  take(toolCallId: string): T | undefined {
    const value = this.#entries.get(toolCallId);
    this.#entries.delete(toolCallId);
    return value;
  }
}

/**
 * The key a {@link CallMemory} keeps a call under: its ID, session, tool and arguments. The model
 * chooses call IDs, and one gate serves many runs: two calls may share an ID (in one step, or in
 * two chats at once), and what one hook learned about a call must reach the later hook of that
 * call only — never another tool's, another session's, or other arguments'.
 */
export function callKey(call: {
  sessionId: string;
  action: string;
  params: Record<string, unknown>;
  toolCallId?: string | undefined;
}): string {
  const text = stringify([call.toolCallId ?? null, call.sessionId, call.action, call.params]) ?? '';
  return createHash('sha256').update(text).digest('base64url');
}
