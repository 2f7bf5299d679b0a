/**
 * Erasure of a session, or of every session tagged with a subject: everything callers wrote into
 * them leaves the database, the hash-chained envelopes stay, and one `erasure.completed` event
 * per session says what went (by seq and field, no content), so `verify` can tell an erasure from
 * tampering and webhook receivers can erase their copies. See docs/data-lifecycle.md.
 */
import { callerIdentity, IN_PROCESS_CALLER } from '../approvals/approverCheck.js';
import { hasScope, missingScope } from '../auth/apiKeys.js';
import { GatehouseError } from '../errors.js';
import type { CallContext, Gatehouse } from '../gatehouseTypes.js';
import {
  type Approval,
  EraseInputSchema,
  EraseSubjectInputSchema,
  type ErasureReport,
  TagSessionInputSchema,
} from '../schemas.js';
import type { StoreTx } from '../store.js';
import { parseInput } from '../validation.js';
import type { EventDraft } from './appendEvents.js';
import { denyApproval, expireApproval } from './heldDecisions.js';
import { enforceHolds, holdsOnSession } from './legalHolds.js';
import type { OperationContext } from './operationContext.js';

/** Sessions one erasure lookup asks the store about. */
const SESSIONS_PER_QUERY = 100;

/** Approvals of one status an erasure reads at a time (a dry run lists at most this many). */
const APPROVALS_LIMIT = 500;

/** What one session's erasure needs besides the transaction. */
interface SessionErasure {
  tenantId: string;
  sessionId: string;
  dryRun: boolean;
  reference: string | null;
  /** Who asked: a key ID, the CLI, or in-process. */
  by: string;
  /** Erase although a legal hold covers the session (recorded). */
  overrideHold: boolean;
  ctx?: CallContext | undefined;
}

/** Erasure, and the subject tags it works by. */
export function erasureOperations(
  shared: OperationContext,
): Pick<Gatehouse, 'eraseSession' | 'eraseSubject' | 'tagSession' | 'erasedSessionsSince'> {
  const { store, tenantOf } = shared;
  const requester = (ctx?: CallContext) => callerIdentity(ctx) ?? ctx?.actor ?? IN_PROCESS_CALLER;
  return {
    async eraseSession(rawInput, ctx) {
      const input = parseInput(EraseInputSchema, rawInput, 'erasure');
      const tenantId = tenantOf(ctx);
      const job = {
        tenantId,
        sessionId: input.session_id,
        dryRun: input.dry_run === true,
        reference: input.reference ?? null,
        by: requester(ctx),
        overrideHold: input.override_hold === true,
        ctx,
      };
      const report = await shared.tenantTransaction(tenantId, async (tx) => {
        // Every appender takes this lock: nothing of the session is written while it is erased.
        await tx.lockChainHead(tenantId);
        return eraseInTransaction(shared, tx, job);
      });
      if (!job.dryRun) await store.scrub?.();
      return report;
    },

    async eraseSubject(rawInput, ctx) {
      const input = parseInput(EraseSubjectInputSchema, rawInput, 'erasure');
      const tenantId = tenantOf(ctx);
      const dryRun = input.dry_run === true;
      const result = await shared.tenantTransaction(tenantId, async (tx) => {
        await tx.lockChainHead(tenantId);
        const sessions = await tx.listSubjectSessions(tenantId, input.subject);
        const erasures: ErasureReport[] = [];
        for (const sessionId of sessions) {
          erasures.push(
            await eraseInTransaction(shared, tx, {
              tenantId,
              sessionId,
              dryRun,
              reference: input.reference ?? null,
              by: requester(ctx),
              overrideHold: input.override_hold === true,
              ctx,
            }),
          );
        }
        // The subject is personal data too: its tags go with the sessions.
        if (!dryRun) await tx.deleteSubject(tenantId, input.subject);
        return { subject: input.subject, dry_run: dryRun, sessions: erasures };
      });
      if (!dryRun) await store.scrub?.();
      return result;
    },

    async erasedSessionsSince(input, ctx) {
      const since = Date.parse(input.since);
      if (Number.isNaN(since)) {
        throw new GatehouseError('invalid_request', `since must be an ISO 8601 time, not '${input.since}'.`);
      }
      const tenantId = tenantOf(ctx);
      const ids = [...new Set(input.session_ids.filter((s) => typeof s === 'string' && s !== ''))];
      if (ids.length === 0) return [];
      const at = new Date(since).toISOString();
      return store.transaction(async (tx) => {
        // Retention's erasures name no session (session_id ''): any value in a kept answer may be
        // among what one erased, so after one none of these sessions' answers is replayed.
        const [retention] = await tx.queryEvents(tenantId, {
          session_id: '',
          type: 'erasure.completed',
          order: 'desc',
          limit: 1,
        });
        if (retention !== undefined && retention.occurred_at >= at) return ids;
        const erased: string[] = [];
        for (let i = 0; i < ids.length; i += SESSIONS_PER_QUERY) {
          erased.push(...(await tx.erasedSessionsSince(tenantId, ids.slice(i, i + SESSIONS_PER_QUERY), at)));
        }
        return erased;
      });
    },

    async tagSession(rawInput, ctx) {
      const input = parseInput(TagSessionInputSchema, rawInput, 'session tag');
      const tenantId = tenantOf(ctx);
      const at = shared.now();
      await shared.transaction(async (tx) => {
        // The tenant's writers queue here, so two taggers cannot both see the session untagged.
        await tx.lockChainHead(tenantId);
        const current = await tx.sessionSubject(tenantId, input.session_id);
        // Moving a session to another subject takes it out of the first one's erasure requests:
        // a key that writes state may tag an untagged session, only one that erases may move it.
        // A caller without scopes is in-process (the CLI), which holds every scope.
        if (current !== null && current !== input.subject && ctx?.scopes !== undefined) {
          if (!hasScope({ scopes: ctx.scopes }, 'data:erase')) {
            throw new GatehouseError(
              'forbidden',
              `Session '${input.session_id}' is already tagged with another subject; moving it takes it out of that subject's erasure requests and needs the 'data:erase' scope.`,
              missingScope('data:erase', ctx.principal),
            );
          }
        }
        await tx.tagSession(tenantId, input.session_id, input.subject, at);
      });
      return { session_id: input.session_id, subject: input.subject, tagged_at: at };
    },
  };
}

/** Erases one session (or lists it: dry run) in `tx`, which holds the tenant's chain head. */
async function eraseInTransaction(
  shared: OperationContext,
  tx: StoreTx,
  job: SessionErasure,
): Promise<ErasureReport> {
  const { tenantId, sessionId, by } = job;
  const events = await tx.listSessionValues(tenantId, sessionId);
  const items = (await tx.listItems(tenantId, sessionId)).filter((i) => i.status !== 'erased');
  const open = (status: 'pending' | 'approved') =>
    tx.listApprovals(tenantId, { session_id: sessionId, status, limit: APPROVALS_LIMIT });
  const pending = await open('pending');
  const approved = await open('approved');
  /** The next page after a full `page`, its approvals added to the report; none after a short one. */
  const more = async (status: 'pending' | 'approved', page: readonly Approval[]): Promise<Approval[]> => {
    if (page.length < APPROVALS_LIMIT) return [];
    const seen = new Set(page.map((a) => a.id));
    const next = (await open(status)).filter((a) => !seen.has(a.id));
    const listed = status === 'pending' ? report.pending_approvals : report.approved_approvals;
    listed.push(...next.map((a) => a.id));
    return next;
  };
  const holds = holdsOnSession(await tx.listHolds(tenantId), sessionId);
  const report: ErasureReport = {
    session_id: sessionId,
    dry_run: job.dryRun,
    reference: job.reference,
    events: events.map((e) => ({ seq: e.seq, type: e.type, paths: e.paths })),
    fields: events.reduce((n, e) => n + e.paths.length, 0),
    state_items: items.map((i) => i.key),
    pending_approvals: pending.map((a) => a.id),
    approved_approvals: approved.map((a) => a.id),
    pending_deliveries: await tx.listSessionPendingDeliveries(tenantId, sessionId),
    legal_holds: holds.map((h) => ({ hold_id: h.hold_id, reference: h.reference, session_id: h.session_id })),
    erasure: null,
  };
  if (report.dry_run) return report;
  await enforceHolds(shared, tx, {
    tenantId,
    covering: holds,
    override: job.overrideHold,
    operation: `erasure of session ${sessionId}`,
    ctx: job.ctx,
  });

  const at = shared.now();
  const drafts: EventDraft[] = [];
  // Past the first page, each next page is what is still open: the ones handled left the status.
  for (let page = pending; page.length > 0; page = await more('pending', page)) {
    for (const a of page) await denyApproval(tx, tenantId, a, { at, by, reasonCode: 'erasure' }, drafts);
  }
  for (let page = approved; page.length > 0; page = await more('approved', page)) {
    for (const a of page) await expireApproval(tx, tenantId, a, at, drafts);
  }
  // Their events are appended after the session's values are erased: what they keep (the
  // eraser's principal) is not the session's content, and the erasure event names only the
  // fields listed above.
  const head = await tx.lockChainHead(tenantId);
  const seq = (head?.seq ?? 0) + 1 + drafts.length;
  await tx.eraseSession(tenantId, sessionId, { erasedBy: seq, at });
  await shared.append(tx, tenantId, drafts, job.ctx);
  const [event] = await shared.append(
    tx,
    tenantId,
    [
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
    ],
    job.ctx,
  );
  // The erased rows name this seq: it must be the one the event got.
  if (event!.seq !== seq) throw new Error(`erasure event at seq ${event!.seq}, expected ${seq}`);
  return { ...report, erasure: { event_id: event!.event_id, seq } };
}
