/**
 * Retention: a tenant's policy says how long values and history are kept (`retention:`); a run
 * erases the values of older events, clears the current state items last written before the
 * cut-off and erases the values of conflicts and approvals created before it, in bounded batches
 * each with its own `erasure.completed` event (reason `retention`), and prunes older events
 * behind a signed checkpoint. Between batches it yields, so decisions are not held behind it.
 * See docs/data-lifecycle.md.
 */
import { setImmediate as yieldToOthers } from 'node:timers/promises';
import type { RetentionSettings } from '../gate/index.js';
import type { Gatehouse, RetentionReport } from '../gatehouseTypes.js';
import type { LegalHold } from '../history/legalHoldSchemas.js';
import { RetentionInputSchema, type RetentionView } from '../history/pruneSchemas.js';
import type { ChainHead, StoreTx } from '../store.js';
import { parseInput } from '../validation.js';
import type { EventDraft } from './appendEvents.js';
import { denyApproval, expireApproval, isDue } from './heldDecisions.js';
import { requesterOf } from './legalHolds.js';
import type { OperationContext } from './operationContext.js';
import type { PruneOperations } from './pruneOperations.js';

const DAY_MS = 86_400_000;
/** Events whose values one batch erases (one transaction, one erasure event). */
const VALUES_BATCH = 500;

/** Runs a tenant's retention. */
export function retentionOperations(
  shared: OperationContext,
  prune: Pick<PruneOperations, 'pruneHistory' | 'finishPrune'>,
): Pick<Gatehouse, 'runRetention' | 'getRetention' | 'putRetention'> {
  const { tenantOf } = shared;
  /** The tenant's retention: set with the API, else the policy's. */
  const settingsOf = async (tenantId: string): Promise<RetentionView> => {
    const stored = await shared.store.transaction((tx) => tx.getRetention(tenantId));
    const s: RetentionSettings | undefined = stored
      ? (JSON.parse(stored.settings) as RetentionSettings)
      : (await shared.policyFor(tenantId)).retention;
    return {
      values_after_days: s?.values_after ?? null,
      history_after_days: s?.history_after ?? null,
      allow_below_floor: s?.allow_below_floor ?? false,
      source: stored ? 'api' : s ? 'policy' : 'none',
      updated_at: stored?.updated_at ?? null,
      updated_by: stored?.updated_by ?? null,
    };
  };
  return {
    getRetention: (ctx) => settingsOf(tenantOf(ctx)),

    async putRetention(rawInput, ctx) {
      const input = parseInput(RetentionInputSchema, rawInput, 'retention');
      const tenantId = tenantOf(ctx);
      const by = requesterOf(ctx);
      const at = shared.now();
      await shared.tenantTransaction(tenantId, async (tx) => {
        await tx.lockChainHead(tenantId);
        await tx.putRetention(tenantId, { settings: JSON.stringify(input), updated_at: at, updated_by: by });
        await shared.append(
          tx,
          tenantId,
          [
            {
              type: 'retention.configured',
              session_id: '',
              data: {
                values_after_days: input.values_after ?? null,
                history_after_days: input.history_after ?? null,
                allow_below_floor: input.allow_below_floor,
                by,
              },
            },
          ],
          ctx,
        );
      });
      return settingsOf(tenantId);
    },

    async runRetention(ctx, options) {
      const tenantId = tenantOf(ctx);
      const view = await settingsOf(tenantId);
      const settings =
        view.source === 'none'
          ? undefined
          : {
              values_after: view.values_after_days ?? undefined,
              history_after: view.history_after_days ?? undefined,
              allow_below_floor: view.allow_below_floor,
            };
      const report: RetentionReport = {
        tenant_id: tenantId,
        erased: { events: 0, fields: 0, erasures: [] },
        erased_items: { items: 0, erasures: [] },
        erased_records: { conflicts: 0, approvals: 0, erasures: [] },
        pruned: null,
        finished_prune: 0,
        problem: null,
      };
      // A prune already decided (checkpoint stored, event appended) whose deletion was cut short
      // is finished whatever the settings or holds say now.
      report.finished_prune = await prune.finishPrune(tenantId);
      if (settings === undefined) return report;
      // Retention never overrides a hold: a tenant hold stops it; a session hold keeps that
      // session's values (the store skips them) and every event from the session's first on.
      const { holds, firstHeld } = await shared.store.transaction(async (tx) => ({
        holds: await tx.listHolds(tenantId),
        firstHeld: await tx.firstHeldSeq(tenantId),
      }));
      /** A tenant hold stops retention, before it starts or at the next batch. */
      const stoppedByHold = (list: readonly LegalHold[], what: string): boolean => {
        const hold = list.find((h) => h.session_id === null);
        if (hold !== undefined) {
          report.problem = `legal hold ${hold.hold_id} (${hold.reference}) covers the tenant: retention ${what}`;
        }
        return hold !== undefined;
      };
      if (stoppedByHold(holds, 'did not run')) return report;
      const now = shared.clock().getTime();
      if (settings.values_after !== undefined) {
        const before = new Date(now - settings.values_after * DAY_MS).toISOString();
        /**
         * One retention batch's `erasure.completed` event: what went, by seq and path or by ID. With
         * `seq`, the seq the erased rows were marked with: the event must get it.
         */
        const appendRetentionErasure = async (tx: StoreTx, erased: Record<string, unknown>, seq?: number) => {
          const [event] = await shared.append(
            tx,
            tenantId,
            [
              {
                type: 'erasure.completed',
                session_id: '',
                data: { reason: 'retention', reference: null, requested_by: 'retention', before, ...erased },
              },
            ],
            ctx,
          );
          if (seq !== undefined && event!.seq !== seq) {
            throw new Error(`erasure event at seq ${event!.seq}, expected ${seq}`);
          }
          return event!;
        };
        /**
         * Runs `batch` in a transaction of the tenant's, again after each full batch (yielding in
         * between, so decisions are not held behind it), until one finds nothing or less than a
         * batch, or a tenant hold placed meanwhile stops it; `take` adds each to the report.
         * `batch` runs holding the chain head's lock, and gets the head.
         */
        const inBatches = async <B extends { full: boolean }>(
          batch: (tx: StoreTx, head: ChainHead | null) => Promise<B | null>,
          take: (done: B) => void,
        ): Promise<void> => {
          for (;;) {
            if (report.problem !== null) return;
            const done = await shared.tenantTransaction(tenantId, async (tx) => {
              // Under the chain head's lock, which placing a hold takes too.
              const head = await tx.lockChainHead(tenantId);
              return stoppedByHold(await tx.listHolds(tenantId), 'stopped') ? null : batch(tx, head);
            });
            if (done === null) return;
            take(done);
            if (!done.full) return;
            await yieldToOthers();
          }
        };
        await inBatches(
          async (tx, head) => {
            const events = await tx.listExpiredValues(tenantId, before, VALUES_BATCH);
            if (events.length === 0) return null;
            const seq = (head?.seq ?? 0) + 1;
            await tx.expireValues(
              tenantId,
              events.map((e) => e.seq),
              seq,
            );
            const fields = events.reduce((n, e) => n + e.paths.length, 0);
            const erased = events.map((e) => ({ seq: e.seq, paths: e.paths }));
            await appendRetentionErasure(tx, { events: events.length, fields, erased }, seq);
            return { events: events.length, fields, seq, full: events.length === VALUES_BATCH };
          },
          (done) => {
            report.erased.events += done.events;
            report.erased.fields += done.fields;
            report.erased.erasures.push(done.seq);
          },
        );
        // The same values live on in the state tables while the item is current: items whose last
        // write is older than the cut-off are cleared too, a batch per transaction and event.
        let after = { session_id: '', key: '' };
        await inBatches(
          async (tx) => {
            const items = await tx.listExpiredItems(tenantId, before, after, VALUES_BATCH);
            if (items.length === 0) return null;
            await tx.expireItems(tenantId, items);
            const event = await appendRetentionErasure(tx, {
              events: 0,
              fields: 0,
              erased: [],
              state_items: items.map((i) => ({ session_id: i.session_id, key: i.key })),
            });
            return { items, seq: event.seq, full: items.length === VALUES_BATCH };
          },
          (done) => {
            report.erased_items.items += done.items.length;
            report.erased_items.erasures.push(done.seq);
            const last = done.items[done.items.length - 1]!;
            after = { session_id: last.session_id, key: last.key };
          },
        );
        // And in conflicts (the current and the proposed value) and approvals (the params), by
        // when they were created: an open conflict is resolved `erased` (its proposed value can
        // no longer be accepted; its item, last written before it, was cleared just above), a
        // pending approval is denied and an approved one expires (their params are gone).
        await inBatches(
          async (tx) => {
            const conflicts = await tx.listExpiredConflicts(tenantId, before, VALUES_BATCH);
            const approvals = await tx.listExpiredApprovals(tenantId, before, VALUES_BATCH);
            if (conflicts.length === 0 && approvals.length === 0) return null;
            const at = shared.now();
            const drafts: EventDraft[] = [];
            for (const a of approvals) {
              if (a.status === 'pending' && !isDue(a, at)) {
                await denyApproval(tx, tenantId, a, { at, by: 'retention', reasonCode: 'retention' }, drafts);
              } else if (a.status === 'pending' || a.status === 'approved') {
                await expireApproval(tx, tenantId, a, at, drafts);
              }
            }
            await shared.append(tx, tenantId, drafts, ctx);
            const head = await tx.lockChainHead(tenantId);
            const seq = (head?.seq ?? 0) + 1;
            const conflictIds = conflicts.map((c) => c.conflict_id);
            const approvalIds = approvals.map((a) => a.id);
            await tx.expireConflicts(tenantId, conflictIds, { erasedBy: seq, at });
            await tx.expireApprovals(tenantId, approvalIds, seq);
            await appendRetentionErasure(
              tx,
              { events: 0, fields: 0, erased: [], conflicts: conflictIds, approvals: approvalIds },
              seq,
            );
            const full = conflicts.length === VALUES_BATCH || approvals.length === VALUES_BATCH;
            return { conflicts: conflicts.length, approvals: approvals.length, seq, full };
          },
          (done) => {
            report.erased_records.conflicts += done.conflicts;
            report.erased_records.approvals += done.approvals;
            report.erased_records.erasures.push(done.seq);
          },
        );
        const erasedAny =
          report.erased.events + report.erased_items.items + report.erased_records.erasures.length > 0;
        if (erasedAny) await shared.store.scrub?.();
      }
      if (settings.history_after !== undefined && report.problem === null) {
        const before = new Date(now - settings.history_after * DAY_MS).toISOString();
        const { older, first } = await shared.store.transaction(async (tx) => ({
          older: await tx.lastSeqBefore(tenantId, before),
          first: await tx.firstEventSeq(tenantId),
        }));
        const through = older !== null && firstHeld !== null ? Math.min(older, firstHeld - 1) : older;
        if (through !== null && first !== null && through >= first) {
          if (options?.pruneHeld !== undefined) {
            report.problem = `prune of events ${first}-${through} left for a later run: ${options.pruneHeld}`;
          } else {
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
      }
      return report;
    },
  };
}
