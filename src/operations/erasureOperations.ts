/**
 * Erasure of a session: everything callers wrote into it leaves the database, the hash-chained
 * envelopes stay, and one `erasure.completed` event says what went (by seq and field, no
 * content), so `verify` can tell an erasure from tampering and webhook receivers can erase their
 * copies. See docs/data-lifecycle.md.
 */
import { callerIdentity, IN_PROCESS_CALLER } from '../approvals/approverCheck.js';
import type { Gatehouse } from '../gatehouseTypes.js';
import { type Approval, EraseInputSchema, type ErasureReport } from '../schemas.js';
import { parseInput } from '../validation.js';
import type { EventDraft } from './appendEvents.js';
import { expireApproval } from './heldDecisions.js';
import type { OperationContext } from './operationContext.js';

/** Most approvals of one status an erasure reads for a session. */
const APPROVALS_LIMIT = 500;

/** Erasure of a session. */
export function erasureOperations(shared: OperationContext): Pick<Gatehouse, 'eraseSession'> {
  const { store, tenantOf, append } = shared;
  return {
    async eraseSession(rawInput, ctx) {
      const input = parseInput(EraseInputSchema, rawInput, 'erasure');
      const tenantId = tenantOf(ctx);
      const sessionId = input.session_id;
      const by = callerIdentity(ctx) ?? ctx?.actor ?? IN_PROCESS_CALLER;
      const report = await shared.tenantTransaction(tenantId, async (tx) => {
        // Every appender takes this lock: nothing of the session is written while it is erased.
        const head = await tx.lockChainHead(tenantId);
        const events = await tx.listSessionValues(tenantId, sessionId);
        const items = (await tx.listItems(tenantId, sessionId)).filter((i) => i.status !== 'erased');
        const open = (status: 'pending' | 'approved') =>
          tx.listApprovals(tenantId, { session_id: sessionId, status, limit: APPROVALS_LIMIT });
        const pending = await open('pending');
        const approved = await open('approved');
        const report: ErasureReport = {
          session_id: sessionId,
          dry_run: input.dry_run === true,
          reference: input.reference ?? null,
          events: events.map((e) => ({ seq: e.seq, type: e.type, paths: e.paths })),
          fields: events.reduce((n, e) => n + e.paths.length, 0),
          state_items: items.map((i) => i.key),
          pending_approvals: pending.map((a) => a.id),
          approved_approvals: approved.map((a) => a.id),
          pending_deliveries: await tx.listSessionPendingDeliveries(tenantId, sessionId),
          erasure: null,
        };
        if (report.dry_run) return report;

        const at = shared.now();
        const drafts: EventDraft[] = [];
        for (const a of pending) await denyForErasure(a);
        for (const a of approved) await expireApproval(tx, tenantId, a, at, drafts);
        // Their events carry no caller content (no comment): nothing of them to erase.
        const before = await append(tx, tenantId, drafts);
        const seq = (head?.seq ?? 0) + before.length + 1;
        await tx.eraseSession(tenantId, sessionId, { erasedBy: seq, at });
        const [event] = await append(tx, tenantId, [
          {
            type: 'erasure.completed',
            session_id: sessionId,
            data: {
              reference: report.reference,
              requested_by: by,
              events: report.events.length,
              fields: report.fields,
              erased: report.events.map((e) => ({ seq: e.seq, paths: e.paths })),
              state_items: report.state_items,
              pending_approvals: report.pending_approvals,
              approved_approvals: report.approved_approvals,
              pending_deliveries: report.pending_deliveries.length,
            },
          },
        ]);
        // The erased rows name this seq: it must be the one the event got.
        if (event!.seq !== seq) throw new Error(`erasure event at seq ${event!.seq}, expected ${seq}`);
        return { ...report, erasure: { event_id: event!.event_id, seq } };

        async function denyForErasure(a: Approval): Promise<void> {
          const changed = await tx.transitionApproval(tenantId, a.id, {
            from: ['pending'],
            to: 'denied',
            updated_at: at,
            decided_by: by,
            decided_at: at,
            comment: null,
          });
          if (!changed) return;
          drafts.push({
            type: 'approval.denied',
            session_id: a.session_id,
            data: { approval_id: a.id, action: a.action, decided_by: by, reason_code: 'erasure' },
          });
        }
      });
      if (!report.dry_run) await store.scrub?.();
      return report;
    },
  };
}
