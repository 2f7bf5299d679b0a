/**
 * Replay and approvals. A recorded decision that an approval touched is not the policy's answer
 * alone: the approval step held it, kept it denied, or released it (see
 * `operations/heldDecisions.ts`). Replay re-runs the policy, not the people: when the candidate
 * holds the action by the same rules, the recorded approval step is applied to the candidate's
 * answer, so the comparison is policy against policy. When the candidate does not hold it (it
 * allows the action, blocks it outright, or holds it by other rules), the recorded approval
 * could not have applied, and the candidate's own answer is compared.
 */
import { combineVerdicts, type GateResult } from '../gate/index.js';
import type { DecisionApproval } from '../schemas.js';
import type { DecisionOutcome } from './replayReport.js';

/** The reasons the approval step adds to a held or denied Block. */
const APPROVAL_REASONS = new Set(['approval_required', 'approval_denied']);

function sameRules(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((rule, n) => rule === b[n]);
}

/**
 * The candidate's answer as the recorded approval step would have left it.
 * @param recorded the decision as recorded (its `approval` citation, reason and reasons)
 * @param replayed the candidate's answer, masked like the recorded one
 * @param result the candidate's raw result (its `hold`)
 */
export function withRecordedApproval(
  recorded: DecisionOutcome & { approval?: DecisionApproval | undefined },
  replayed: DecisionOutcome,
  result: Pick<GateResult, 'hold'>,
): DecisionOutcome {
  const approval = recorded.approval;
  if (!approval || !result.hold || !sameRules([...approval.rules].sort(), result.hold.rules)) return replayed;
  if (approval.status === 'pending' || approval.status === 'denied' || approval.status === 'expired') {
    // Held or denied: the policy's Block plus the approval step's own reason, as recorded.
    const added = recorded.reasons.filter((r) => APPROVAL_REASONS.has(r.rule));
    return { ...replayed, reason: recorded.reason, reasons: [...replayed.reasons, ...added] };
  }
  // Released (`approved` with uses left, or `used`): the held Block reasons are lifted.
  const remaining = replayed.reasons.filter((r) => r.verdict !== 'Block');
  return {
    ...replayed,
    verdict: combineVerdicts(remaining.map((r) => r.verdict)),
    reason: recorded.reason,
    reasons: remaining,
  };
}
