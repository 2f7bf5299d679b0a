/**
 * The evaluation of an action that a rule with `approval:` holds: in one transaction, find the
 * approval bound to exactly this action and state (by digest), and
 * - consume it when it is approved, unexpired and has uses left → Allow citing it;
 * - else return the pending one (no duplicate request) → Block `approval_required`;
 * - else, while a denial of this digest is in force (until its `expires_at`) → Block `approval_denied`;
 * - else open a new request → Block `approval_required`.
 * The `gate_evaluation` event and the approval events land in the same transaction.
 */
import { approvalDigest, shownDigest } from '../approvals/approvalDigest.js';
import { IN_PROCESS_CALLER, isRequester, requesterIdentity } from '../approvals/approverCheck.js';
import { combineVerdicts, type GateReason, type GateResult } from '../gate/index.js';
import type { CallContext } from '../gatehouseTypes.js';
import type { Approval, Conflict, Decision } from '../schemas.js';
import { maskDecision, maskSecrets } from '../state/maskSecrets.js';
import type { StoreTx } from '../store.js';
import type { EventDraft } from './appendEvents.js';
import type { OperationContext } from './operationContext.js';
import { assertUnchanged, type ItemRead } from './staleReads.js';

/** What {@link settleHeldDecision} needs from the evaluation. */
export interface HeldEvaluation {
  tenantId: string;
  ctx: CallContext | undefined;
  /** The decision as the policy made it (a Block, not yet masked). */
  decision: Decision;
  result: GateResult & { hold: NonNullable<GateResult['hold']> };
  /** The params as called (the approval binds to them). */
  params: Record<string, unknown>;
  /** The params and context with the session's and their own secrets masked, as recorded. */
  maskedParams: Record<string, unknown>;
  maskedContext: Record<string, unknown>;
  secrets: ReadonlySet<string>;
  /** The session's open conflicts the evaluation saw (checked again in the transaction). */
  conflicts: readonly Conflict[];
  /** The items the decision depends on, as read: checked again in the transaction. */
  read: readonly ItemRead[];
}

/** True when a pending or approved approval is past its `expires_at` at `now`. */
export function isDue(approval: Approval, now: string): boolean {
  return (approval.status === 'pending' || approval.status === 'approved') && approval.expires_at <= now;
}

/**
 * Marks a due approval `expired` and queues its `approval.expired` event; false when another
 * transaction changed it first.
 */
export async function expireApproval(
  tx: StoreTx,
  tenantId: string,
  approval: Approval,
  now: string,
  drafts: EventDraft[],
): Promise<boolean> {
  const changed = await tx.transitionApproval(tenantId, approval.id, {
    from: ['pending', 'approved'],
    to: 'expired',
    updated_at: now,
  });
  if (changed) {
    drafts.push({
      type: 'approval.expired',
      session_id: approval.session_id,
      data: {
        approval_id: approval.id,
        action: approval.action,
        previous_status: approval.status,
        expires_at: approval.expires_at,
      },
    });
  }
  return changed;
}

/**
 * Denies a pending approval whose params are being erased (`reason_code`: `erasure`, `retention`)
 * and queues its `approval.denied` event; false when another transaction changed it first.
 */
export async function denyApproval(
  tx: StoreTx,
  tenantId: string,
  approval: Approval,
  denial: { at: string; by: string; reasonCode: 'erasure' | 'retention' },
  drafts: EventDraft[],
): Promise<boolean> {
  const changed = await tx.transitionApproval(tenantId, approval.id, {
    from: ['pending'],
    to: 'denied',
    updated_at: denial.at,
    decided_by: denial.by,
    decided_at: denial.at,
    comment: null,
  });
  if (changed) {
    drafts.push({
      type: 'approval.denied',
      session_id: approval.session_id,
      data: {
        approval_id: approval.id,
        action: approval.action,
        decided_by: denial.by,
        reason_code: denial.reasonCode,
      },
    });
  }
  return changed;
}

/** Decides a held evaluation and records it; resolves to the decision (secrets masked). */
export async function settleHeldDecision(shared: OperationContext, held: HeldEvaluation): Promise<Decision> {
  const { append } = shared;
  const { tenantId, decision: base, result, secrets } = held;
  const { hold } = result;
  const digest = approvalDigest({
    tenantId,
    sessionId: base.session_id,
    action: base.action,
    params: held.params,
    stateVersions: base.state_versions,
    openConflicts: held.conflicts.map((c) => c.conflict_id),
    policyRevision: base.policy.revision,
    rules: hold.rules,
  });
  const now = base.evaluated_at;
  const { maskedParams } = held;

  return shared.tenantTransaction(tenantId, async (tx) => {
    // Every event writer of the tenant takes this lock anyway; taking it first makes "find the
    // approval, then consume or create it" one step across instances.
    await tx.lockChainHead(tenantId);
    await assertUnchanged(tx, tenantId, base.session_id, held.read, held.conflicts);
    const before: EventDraft[] = [];
    const after: EventDraft[] = [];
    let live = await tx.latestApprovalByDigest(tenantId, digest);
    if (live && isDue(live, now)) {
      await expireApproval(tx, tenantId, live, now, before);
      live = { ...live, status: 'expired' };
    }

    let decision: Decision | undefined;
    if (
      live?.status === 'approved' &&
      !live.allow_self_approval &&
      live.decided_by === requesterIdentity(held.ctx)
    ) {
      // Four eyes: the approver cannot be the one its approval releases (it would ask, be held,
      // approve with another key's rights… or be the second agent that never asked).
      decision = selfApprovedBlock(base, live);
    } else if (live?.status === 'approved') {
      const taken = await tx.consumeApproval(tenantId, live.id, now);
      if (taken) {
        decision = released(base, result, { ...live, ...taken });
        after.push({
          type: 'approval.used',
          session_id: live.session_id,
          data: {
            approval_id: live.id,
            decision_id: base.decision_id,
            action: live.action,
            decided_by: live.decided_by,
            uses_left: taken.uses_left,
          },
        });
      }
    }
    if (decision === undefined) {
      if (live?.status === 'pending') {
        // Every caller that asks is recorded, so none of them can approve the call and then be
        // released by that approval (not only the first).
        if (!isRequester(live, held.ctx)) {
          await tx.addApprovalRequester(tenantId, live.id, requesterIdentity(held.ctx));
        }
        decision = heldBlock(base, live);
      } else if (live?.status === 'denied' && live.expires_at > now) {
        decision = deniedBlock(base, live);
      } else {
        const approval = newApproval(shared, held, digest, maskedParams);
        await tx.insertApproval(tenantId, approval);
        decision = heldBlock(base, approval);
        after.push({
          type: 'approval.requested',
          session_id: approval.session_id,
          data: {
            approval_id: approval.id,
            decision_id: approval.decision_id,
            action: approval.action,
            params: approval.params,
            state_versions: approval.state_versions,
            policy_revision: approval.policy.revision,
            rules: approval.rules,
            reason: approval.reason,
            // Never the binding digest of params with a secret masked: it would give the secret away.
            digest: shownDigest(tenantId, approval),
            approvers: approval.approvers,
            uses: approval.uses,
            requested_by: approval.requested_by,
            expires_at: approval.expires_at,
          },
        });
      }
    }

    const masked = maskDecision(decision, secrets);
    await append(
      tx,
      tenantId,
      [
        ...before,
        {
          type: 'gate_evaluation',
          session_id: base.session_id,
          decision_id: base.decision_id,
          data: {
            ...masked,
            params: maskedParams,
            context: held.maskedContext,
          },
        },
        ...after,
      ],
      held.ctx,
    );
    return masked;
  });

  function newApproval(
    ctxShared: OperationContext,
    evaluation: HeldEvaluation,
    bindingDigest: string,
    params: Record<string, unknown>,
  ): Approval {
    const created = new Date(base.evaluated_at);
    return {
      id: ctxShared.ids('apr'),
      status: 'pending',
      session_id: base.session_id,
      action: base.action,
      params,
      state_versions: base.state_versions,
      policy: base.policy,
      rules: hold.rules,
      reason: maskSecrets(evaluation.result.reason, 'reason', secrets) as string,
      digest: bindingDigest,
      approvers: hold.approvers,
      allow_self_approval: hold.allowSelfApproval,
      uses: hold.uses,
      uses_left: hold.uses,
      requested_by: evaluation.ctx?.keyId ?? null,
      requesters: [requesterIdentity(evaluation.ctx)],
      decision_id: base.decision_id,
      created_at: base.evaluated_at,
      expires_at: new Date(created.getTime() + hold.expiresInSeconds * 1000).toISOString(),
      decided_by: null,
      decided_at: null,
      comment: null,
      updated_at: base.evaluated_at,
    };
  }
}

function citation(approval: Approval, status: Approval['status']): NonNullable<Decision['approval']> {
  return {
    id: approval.id,
    status,
    expires_at: approval.expires_at,
    rules: approval.rules,
    decided_by: approval.decided_by,
  };
}

/** Block `approval_required`, citing the pending approval. */
function heldBlock(base: Decision, approval: Approval): Decision {
  // A rule's message need not end a sentence ("Transfer of 9000 exceeds the budget of 5000").
  const why = /[.!?]$/.test(base.reason) ? base.reason : `${base.reason}.`;
  const message = `Held for approval ${approval.id} (expires ${approval.expires_at}): ${why} Do not perform this action until a person approves it.`;
  const reason: GateReason = { rule: 'approval_required', verdict: 'Block', message, keys: [] };
  return {
    ...base,
    reason: message,
    reasons: [...base.reasons, reason],
    approval: citation(approval, 'pending'),
  };
}

/** Block `approval_required`: the caller approved this call itself; another caller must use it. */
function selfApprovedBlock(base: Decision, approval: Approval): Decision {
  const message = `Approval ${approval.id} was decided by this caller (${approval.decided_by}): it cannot release the action it approved itself. ${base.reason}`;
  const reason: GateReason = { rule: 'approval_required', verdict: 'Block', message, keys: [] };
  return {
    ...base,
    reason: message,
    reasons: [...base.reasons, reason],
    approval: citation(approval, 'approved'),
  };
}

/** Block `approval_denied`: a person said no to exactly this action and state. */
function deniedBlock(base: Decision, approval: Approval): Decision {
  const by = approval.decided_by ?? IN_PROCESS_CALLER;
  const comment = approval.comment ? ` (“${approval.comment}”)` : '';
  const message = `Denied by ${by} in approval ${approval.id}${comment}: ${base.reason}`;
  const reason: GateReason = { rule: 'approval_denied', verdict: 'Block', message, keys: [] };
  return {
    ...base,
    reason: message,
    reasons: [...base.reasons, reason],
    approval: citation(approval, 'denied'),
  };
}

/**
 * The Allow (or Warn, when a Warn reason remains) an approval releases: the Block reasons it
 * released are named in `reason` and `approval.rules`, no longer enforced.
 */
function released(
  base: Decision,
  result: HeldEvaluation['result'],
  approval: Approval & { uses_left: number; status: Approval['status'] },
): Decision {
  const remaining = base.reasons.filter((r) => r.verdict !== 'Block');
  const verdict = combineVerdicts(remaining.map((r) => r.verdict));
  const by = approval.decided_by ?? IN_PROCESS_CALLER;
  return {
    ...base,
    verdict,
    allowed: true,
    reason: `Approved by ${by} in approval ${approval.id}: released ${result.hold.rules.join(', ')} (${approval.uses_left} use(s) left).`,
    reasons: remaining,
    approval: citation(approval, approval.status),
  };
}
