/**
 * Retention: a tenant's policy says how long values and history are kept (`retention:`); a run
 * erases the values of older events, in bounded batches each with its own `erasure.completed`
 * event (reason `retention`), and prunes older events behind a signed checkpoint. Between
 * batches it yields, so decisions are not held behind it. See docs/data-lifecycle.md.
 */
import { setImmediate as yieldToOthers } from 'node:timers/promises';
import type { Gatehouse, RetentionReport } from '../gatehouseTypes.js';
import type { OperationContext } from './operationContext.js';

const DAY_MS = 86_400_000;
/** Events whose values one batch erases (one transaction, one erasure event). */
const VALUES_BATCH = 500;

/** Runs a tenant's retention. */
export function retentionOperations(
  shared: OperationContext,
  prune: Pick<Gatehouse, 'pruneHistory'>,
): Pick<Gatehouse, 'runRetention'> {
  const { tenantOf } = shared;
  return {
    async runRetention(ctx) {
      const tenantId = tenantOf(ctx);
      const settings = (await shared.policyFor(tenantId)).retention;
      const report: RetentionReport = {
        tenant_id: tenantId,
        erased: { events: 0, fields: 0, erasures: [] },
        pruned: null,
        problem: null,
      };
      if (settings === undefined) return report;
      // Retention never overrides a hold: a tenant hold stops it; a session hold keeps that
      // session's values (the store skips them) and every event from the session's first on.
      const { holds, firstHeld } = await shared.store.transaction(async (tx) => ({
        holds: await tx.listHolds(tenantId),
        firstHeld: await tx.firstHeldSeq(tenantId),
      }));
      const tenantHold = holds.find((h) => h.session_id === null);
      if (tenantHold !== undefined) {
        report.problem = `legal hold ${tenantHold.hold_id} (${tenantHold.reference}) covers the tenant: retention did not run`;
        return report;
      }
      const now = shared.clock().getTime();
      if (settings.values_after !== undefined) {
        const before = new Date(now - settings.values_after * DAY_MS).toISOString();
        for (;;) {
          const batch = await shared.tenantTransaction(tenantId, async (tx) => {
            const head = await tx.lockChainHead(tenantId);
            const events = await tx.listExpiredValues(tenantId, before, VALUES_BATCH);
            if (events.length === 0) return null;
            const seq = (head?.seq ?? 0) + 1;
            await tx.expireValues(
              tenantId,
              events.map((e) => e.seq),
              seq,
            );
            const fields = events.reduce((n, e) => n + e.paths.length, 0);
            const [event] = await shared.append(
              tx,
              tenantId,
              [
                {
                  type: 'erasure.completed',
                  session_id: '',
                  data: {
                    reason: 'retention',
                    reference: null,
                    requested_by: 'retention',
                    before,
                    events: events.length,
                    fields,
                    erased: events.map((e) => ({ seq: e.seq, paths: e.paths })),
                  },
                },
              ],
              ctx,
            );
            // The erased rows name this seq: it must be the one the event got.
            if (event!.seq !== seq) throw new Error(`erasure event at seq ${event!.seq}, expected ${seq}`);
            return { events: events.length, fields, seq, full: events.length === VALUES_BATCH };
          });
          if (batch === null) break;
          report.erased.events += batch.events;
          report.erased.fields += batch.fields;
          report.erased.erasures.push(batch.seq);
          if (!batch.full) break;
          await yieldToOthers();
        }
        if (report.erased.events > 0) await shared.store.scrub?.();
      }
      if (settings.history_after !== undefined) {
        const before = new Date(now - settings.history_after * DAY_MS).toISOString();
        const older = await shared.store.transaction((tx) => tx.lastSeqBefore(tenantId, before));
        const through = older !== null && firstHeld !== null ? Math.min(older, firstHeld - 1) : older;
        const first = await shared.store.transaction((tx) => tx.firstEventSeq(tenantId));
        if (through !== null && first !== null && through >= first) {
          try {
            report.pruned = await prune.pruneHistory(
              {
                through_seq: through,
                ...(settings.allow_below_floor ? { allow_below_floor: true } : {}),
              },
              ctx,
            );
          } catch (error) {
            report.problem = error instanceof Error ? error.message : String(error);
          }
        }
      }
      return report;
    },
  };
}
