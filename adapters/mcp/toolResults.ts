/**
 * Turns core answers and errors into MCP tool results: `structuredContent` for programs, a short
 * text for models (many clients show the model only the text), `isError` only for failures.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import {
  type Approval,
  type Conflict,
  classify,
  type Decision,
  type HistoryPage,
  KEY_SET_READ,
  maskValue,
  type RecordStateResult,
  type StateItem,
  summarizeEvent,
  toGatehouseError,
} from '../../src/index.js';

/** A successful tool result. */
export function toolSuccess(structured: Record<string, unknown>, text: string): CallToolResult {
  return { structuredContent: structured, content: [{ type: 'text', text }] };
}

/**
 * A failed tool result: `<code>: <message>`, one line per field problem when there are several.
 * Unexpected errors become a generic `internal` message; the original goes only to the log.
 */
export function toolError(thrown: unknown, logger: Logger | undefined, tool: string): CallToolResult {
  const error = toGatehouseError(thrown);
  if (error.code === 'internal') logger?.error({ err: error.cause ?? thrown, tool }, 'MCP tool failed');
  const details =
    error.errors.length > 1 ? error.errors.map((e) => `\n- ${e.path}: ${e.message}`).join('') : '';
  return { isError: true, content: [{ type: 'text', text: `${error.code}: ${error.message}${details}` }] };
}

const shown = (item: Pick<StateItem, 'value' | 'sensitivity'>) =>
  JSON.stringify(maskValue(item.value, item.sensitivity));

/** A value of `key` for the text, quoted, masked when it is a secret (the text may end up in a transcript). */
const shownValue = (key: string, value: string) =>
  JSON.stringify(maskValue(value, classify(key, value).sensitivity));

/** `budget.limit = "5000" (fact from user_input, trust 3, version 1)` */
function describeItem(item: StateItem): string {
  return `${item.key} = ${shown(item)} (${item.type} from ${item.source}, trust ${item.trust}, version ${item.version}${item.status === 'conflicted' ? ', conflicted' : ''})`;
}

/** The text of a `record_state` result. */
export function renderRecordState(result: RecordStateResult): string {
  const { item, conflict } = result;
  switch (result.outcome) {
    case 'created':
      return `Recorded ${describeItem(item)}.`;
    case 'superseded':
      return `Updated ${describeItem(item)}; it supersedes version ${item.version - 1}.`;
    case 'unchanged':
      return `Unchanged: ${describeItem(item)} already holds this value; no new version.`;
    case 'conflict': {
      const proposed = conflict?.proposed;
      const what = proposed
        ? `${shownValue(item.key, proposed.value)} from ${proposed.source} (trust ${proposed.trust})`
        : 'the proposed value';
      return `Conflict: ${what} did NOT replace ${describeItem(item)}, which has higher trust and stays in force. The disagreement is recorded as ${conflict?.conflict_id ?? 'a conflict'}; a user or higher-trust source must resolve it.`;
    }
  }
}

/** `Block: <reason> (decision dec_…; keys budget.limit)` */
export function renderDecision(decision: Decision): string {
  const keys = [...new Set(decision.reasons.flatMap((r) => r.keys))];
  // Items that existed: not the key-set entry, nor a key read while absent (version 0).
  const existing = Object.entries(decision.state_versions).filter(
    ([key, version]) => version > 0 && key !== KEY_SET_READ,
  );
  const shownKeys = keys.length > 0 ? keys : existing.map(([key]) => key);
  const suffix = shownKeys.length > 0 ? `; keys ${shownKeys.join(', ')}` : '';
  const lines = [`${decision.verdict}: ${decision.reason} (decision ${decision.decision_id}${suffix})`];
  if (decision.reasons.length > 1) {
    for (const r of decision.reasons) lines.push(`- ${r.verdict} ${r.rule}: ${r.message}`);
  }
  const approval = decision.approval;
  if (decision.verdict === 'Block' && approval?.status === 'pending') {
    lines.push(
      `This action is HELD for approval ${approval.id} (expires ${approval.expires_at}). Do not perform it, and do not try other parameters to get around the hold: a person must approve exactly this action. Tell the user it awaits approval; call wait_for_approval with approval_id "${approval.id}" and the same session_id, action, params and context to wait for the decision.`,
    );
  } else if (decision.verdict === 'Block') {
    lines.push('Do not perform this action.');
  } else if (approval) {
    lines.push(`Released by approval ${approval.id} (approved by ${approval.decided_by ?? 'a person'}).`);
  }
  return lines.join('\n');
}

/** The text of a `wait_for_approval` result. */
export function renderApprovalWait(approval: Approval, decision: Decision | null): string {
  switch (approval.status) {
    case 'pending':
      return `Approval ${approval.id} is still pending (expires ${approval.expires_at}). Do NOT perform ${approval.action} yet; wait again or tell the user it awaits approval.`;
    case 'denied':
      return `Approval ${approval.id} was DENIED by ${approval.decided_by ?? 'a person'}${approval.comment ? `: ${approval.comment}` : ''}. Do NOT perform ${approval.action}; tell the user.`;
    case 'expired':
      return `Approval ${approval.id} EXPIRED without a decision. Do NOT perform ${approval.action}; tell the user.`;
    case 'used':
      return `Approval ${approval.id} was already used. Do NOT perform ${approval.action} again without a new approval.`;
    case 'approved':
      if (decision === null) return `Approval ${approval.id} is approved; evaluate the action again.`;
      return decision.allowed
        ? `Approved by ${approval.decided_by ?? 'a person'}. ${renderDecision(decision)}\nYou may now perform ${approval.action} with exactly these parameters.`
        : `Approval ${approval.id} is approved, but the action no longer matches what was approved (its parameters, state or policy changed). ${renderDecision(decision)}`;
  }
}

/** One line per event, plus how to get the next page. */
export function renderHistory(page: HistoryPage): string {
  const lines = [`${page.events.length} event(s).`];
  for (const e of page.events) {
    lines.push(`#${e.seq} ${e.occurred_at} ${e.session_id} ${e.type}: ${summarizeEvent(e)}`);
  }
  if (page.next_cursor) lines.push(`More: call again with cursor "${page.next_cursor}".`);
  return lines.join('\n');
}

/** The items in force and the open conflicts of a session. */
export function renderState(sessionId: string, items: StateItem[], conflicts: Conflict[]): string {
  const lines = [`Session ${sessionId}: ${items.length} item(s), ${conflicts.length} open conflict(s).`];
  for (const item of items) lines.push(`- ${describeItem(item)}`);
  for (const c of conflicts) {
    lines.push(
      `- conflict ${c.conflict_id} on ${c.key}: current ${shownValue(c.key, c.current.value)} from ${c.current.source} vs proposed ${shownValue(c.key, c.proposed.value)} from ${c.proposed.source}`,
    );
  }
  return lines.join('\n');
}

/** The text of a `resolve_conflict` result. */
export function renderResolution(conflict: Conflict): string {
  const value = conflict.resolution === 'accept_proposed' ? conflict.proposed.value : conflict.current.value;
  return `Resolved ${conflict.conflict_id} (${conflict.resolution}): ${conflict.key} is now ${shownValue(conflict.key, value)}.`;
}
