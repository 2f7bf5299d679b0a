/**
 * The server's lists the console offers as choices: event types (the history's type filter),
 * verdicts, approval and delivery statuses. The console is built on its own, for the browser, so
 * it keeps copies; a test holds each to the server's schema (src/schemas.ts).
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
  'erasure.completed',
  'history.upgraded',
  'retention.pruned',
  'legal_hold.placed',
  'legal_hold.released',
  'legal_hold.overridden',
  'retention.configured',
] as const;

export const VERDICTS = ['Allow', 'Warn', 'Block'] as const;

export const APPROVAL_STATUSES = ['pending', 'approved', 'denied', 'expired', 'used'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
