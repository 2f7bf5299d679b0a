/**
 * The history event types, offered as suggestions by the history page's type filter. The same
 * list as the server's `EVENT_TYPES` (src/schemas.ts), which a test holds it to: the console is
 * built on its own, for the browser, so it keeps its copy.
 */
export const EVENT_TYPES = [
  'state_change',
  'state_conflict',
  'conflict_resolved',
  'gate_evaluation',
  'action_outcome',
  'approval.requested',
  'approval.approved',
  'approval.denied',
  'approval.expired',
  'approval.used',
  'policy.activated',
  'policy.replayed',
] as const;
