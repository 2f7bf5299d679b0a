/**
 * One line that says what a history event recorded, for people and models reading the history
 * as text (`gatehouse history`, the MCP `read_history` result). Every face uses this one, so the
 * lines read the same everywhere.
 */
import type { HistoryEvent } from '../schemas.js';
import { isErased } from './commitments.js';

/** How a line shows an erased field. */
const ERASED = '(erased)';

/**
 * Summarises an event's data in one line, by its type.
 * @example
 * summarizeEvent(event); // 'payments.transfer → Block (dec_…): Transfer of 9000 exceeds the budget'
 * summarizeEvent(event); // 'budget.limit = "5000" v1 from user_input'
 */
export function summarizeEvent(event: Pick<HistoryEvent, 'type' | 'data'>): string {
  const d = event.data;
  const s = (name: string) => (isErased(d[name]) ? ERASED : String(d[name] ?? ''));
  const quoted = (name: string) => (isErased(d[name]) ? ERASED : JSON.stringify(d[name]));
  switch (event.type) {
    case 'state_change':
      return `${s('key')} = ${quoted('value')} v${s('version')} from ${s('source')}`;
    case 'state_conflict':
      return `${s('key')} conflict ${s('conflict_id')}`;
    case 'conflict_resolved':
      return `${s('key')} ${s('resolution')} (${s('conflict_id')})`;
    case 'gate_evaluation':
      return `${s('action')} → ${s('verdict')} (${s('decision_id')}): ${s('reason')}`;
    case 'action_outcome':
      return `${s('decision_id')} ${s('outcome')}`;
    case 'approval.requested':
      return `${s('approval_id')} ${s('action')} held by ${s('rules')} until ${s('expires_at')} (${s('decision_id')})`;
    case 'approval.approved':
    case 'approval.denied':
      return `${s('approval_id')} ${event.type === 'approval.approved' ? 'approved' : 'denied'} by ${s('decided_by')}${d['comment'] ? `: ${s('comment')}` : ''}`;
    case 'approval.expired':
      return `${s('approval_id')} expired (was ${s('previous_status')})`;
    case 'approval.used':
      return `${s('approval_id')} released ${s('action')} (${s('decision_id')}), ${s('uses_left')} use(s) left`;
    case 'policy.activated':
      return `policy ${s('revision').slice(0, 12)} activated by ${s('activated_by')}`;
    case 'policy.replayed':
      return `policy ${s('revision').slice(0, 12)} replayed over ${s('decisions')} decisions: ${s('changed')} changed verdict`;
    case 'erasure.completed':
      if (d['reason'] === 'retention') {
        const others = [
          ['state_items', 'state item(s)'],
          ['conflicts', 'conflict(s)'],
          ['approvals', 'approval(s)'],
        ].flatMap(([field, noun]) => {
          const list = d[field!];
          return Array.isArray(list) && list.length > 0 ? [`${list.length} ${noun}`] : [];
        });
        return `retention erased ${s('fields')} field(s) of ${s('events')} event(s)${others.length > 0 ? `, the values of ${others.join(', ')}` : ''} older than ${s('before')}`;
      }
      return `session erased by ${s('requested_by')}: ${s('fields')} field(s) of ${s('events')} event(s)`;
    case 'history.upgraded':
      return `history upgraded to format ${s('format')} after ${s('events')} events`;
    case 'legal_hold.placed':
    case 'legal_hold.released':
      return `legal hold ${s('hold_id')} (${s('reference')}) on ${d['session_id'] ? `session ${s('session_id')}` : 'the tenant'} ${event.type === 'legal_hold.placed' ? 'placed' : 'released'} by ${s('by')}`;
    case 'legal_hold.overridden':
      return `legal hold(s) ${s('holds')} overridden by ${s('by')} for ${s('operation')}`;
    case 'retention.configured':
      return `retention set by ${s('by')}: values ${d['values_after_days'] ?? '-'} d, history ${d['history_after_days'] ?? '-'} d${d['allow_below_floor'] ? ' (below the floor allowed)' : ''}`;
    case 'retention.pruned':
      return `events ${s('from_seq')}–${s('through_seq')} pruned behind checkpoint ${s('checkpoint_hash').slice(0, 12)} by ${s('requested_by')}`;
  }
}
