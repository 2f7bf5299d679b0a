/**
 * The Store operations both SQL stores share, over an {@link SqlExecutor}: each store adds only
 * what its database does differently (connection, transactions, locks, caches, dump snapshots).
 */
import { setImmediate as yieldToOthers } from 'node:timers/promises';
import type {
  ClaimedDelivery,
  DeliveryAttempt,
  HistoryEvent,
  KeyStore,
  NewDelivery,
  OutboxStore,
  SealedEvent,
  SealedFields,
  SessionValues,
  StateItem,
  StoredEvent,
  StoredWebhook,
  StoreReader,
  StoreTx,
} from '../../src/index.js';
import { erasedMarker, eventValuesOf, openEventData } from '../../src/index.js';
import type { SqlDialect, Statement } from './dialect.js';
import type { SqlExecutor } from './executor.js';
import * as holds from './legalHoldStatements.js';
import { createPolicyReader, createPolicyWriter } from './policyOperations.js';
import * as prune from './pruneStatements.js';
import {
  apiKeyValues,
  itemsFromRows,
  json,
  num,
  numOrNull,
  type Row,
  rowToApproval,
  rowToConflict,
  rowToDelivery,
  rowToEvent,
  rowToItem,
  rowToKey,
  rowToSealedEvent,
  rowToWebhook,
  str,
  strOrNull,
} from './rows.js';
import * as sql from './statements.js';

/** The reads, over committed data (a pool, a connection) or a transaction (its own writes too). */
export function createSqlReader(db: SqlExecutor, dialect: SqlDialect): StoreReader {
  const one = async (text: string, args: readonly unknown[]) => db.get(text, args);
  const listItemsSql = dialect.listSessionItems ?? sql.listSessionItems;
  return {
    ...createPolicyReader(db),
    async getItem(t, s, k) {
      const r = await one(sql.getCurrentItem, [t, s, k]);
      return r ? rowToItem(r) : null;
    },
    async getItemVersion(t, s, k, version) {
      const r = await one(sql.getItemVersion, [t, s, k, version]);
      return r ? rowToItem(r) : null;
    },
    async listItemVersions(t, s, k) {
      return (await db.all(sql.listItemVersions, [t, s, k])).map((r) => rowToItem(r));
    },
    async listItems(t, s) {
      return itemsFromRows(s, await db.rows(listItemsSql, [t, s]));
    },
    async getConflict(t, id) {
      const r = await one(sql.getConflict, [t, id]);
      return r ? rowToConflict(r) : null;
    },
    async listConflicts(t, query) {
      const q = sql.listConflicts(t, query);
      return (await db.all(q.sql, q.args)).map(rowToConflict);
    },
    async queryEvents(t, query) {
      const q = sql.queryEvents(dialect, t, query);
      return (await db.all(q.sql, q.args)).map(rowToEvent);
    },
    async getWebhook(t, id) {
      const r = await one(sql.getWebhook, [t, id]);
      return r ? rowToWebhook(r) : null;
    },
    async listWebhooks(t) {
      return (await db.all(sql.listWebhooks, [t])).map(rowToWebhook);
    },
    async getDelivery(t, id) {
      const r = await one(sql.getDelivery, [t, id]);
      return r ? rowToDelivery(r) : null;
    },
    async listDeliveries(t, webhookId, query) {
      const q = sql.listDeliveries(t, webhookId, query);
      return (await db.all(q.sql, q.args)).map(rowToDelivery);
    },
    async getApproval(t, id) {
      const r = await one(sql.getApproval, [t, id]);
      return r ? rowToApproval(r) : null;
    },
    async listApprovals(t, query) {
      const q = sql.listApprovals(t, query);
      return (await db.all(q.sql, q.args)).map(rowToApproval);
    },
  };
}

/**
 * A write whose result the transaction does not read: a store may hold it back and send it with
 * the next statement, or merge it with others of its kind ({@link TxHooks.defer}).
 */
export type DeferredWrite =
  | { kind: 'event'; tenantId: string; event: StoredEvent; fields: SealedFields | null }
  | { kind: 'deliveries'; tenantId: string; rows: readonly NewDelivery[] }
  /** A new version of an item, made current ({@link StoreTx.insertItemVersion}). */
  | { kind: 'itemVersion'; tenantId: string; item: StateItem }
  /** Statements run in this order, as one where the dialect can combine them. */
  | { kind: 'statements'; statements: readonly Statement[] };

/** What a store adds to the shared transaction code. */
export interface TxHooks {
  /**
   * Takes a write instead of running it now. The store must run it before any later statement
   * of the transaction and before its COMMIT, so that the transaction reads its own writes.
   */
  defer?(write: DeferredWrite): void;
}

/** The reads and writes of one transaction. */
export function createSqlTx(db: SqlExecutor, dialect: SqlDialect, hooks: TxHooks = {}): StoreTx {
  const lockItemSql = sql.lockCurrentItem(dialect);
  const { defer } = hooks;
  /** Runs the statements now, or hands them to the store to run with its next one. */
  const write = async (statements: readonly Statement[]) => {
    if (defer) defer({ kind: 'statements', statements });
    else await db.runAll(statements);
  };
  return {
    ...createSqlReader(db, dialect),
    ...createPolicyWriter(db),
    async lockItem(t, s, k) {
      const r = await db.get(lockItemSql, [t, s, k]);
      return r ? rowToItem(r) : null;
    },
    async insertItemVersion(t, item) {
      if (defer) defer({ kind: 'itemVersion', tenantId: t, item });
      else await db.runAll([sql.insertItemVersion(t, item), sql.upsertCurrentItem(t, item)]);
    },
    async setItemStatus(t, s, k, status) {
      await write([{ sql: sql.setItemStatus, args: [status, t, s, k] }]);
    },
    async insertConflict(t, c) {
      await write([sql.insertConflict(t, c)]);
    },
    async updateConflict(t, id, patch) {
      await write([
        { sql: sql.updateConflict, args: [patch.status, patch.resolution, patch.resolved_at, t, id] },
      ]);
    },
    async lockChainHead(t) {
      const q = dialect.lockChainHead(t);
      const r = (q.writes ? await db.runReturning(q.sql, q.args) : await db.all(q.sql, q.args))[0];
      const seq = r ? num(r['seq']) : 0;
      return seq === 0 ? null : { seq, hash: str(r!['hash']) };
    },
    async appendEvent(t, e, fields = null) {
      if (defer) {
        defer({ kind: 'event', tenantId: t, event: e, fields });
        return;
      }
      const values = sql.insertEventValues(t, [{ seq: e.seq, fields }]);
      const writes = [sql.insertEvent(t, e)];
      if (values) writes.push(values);
      if (dialect.chainHeadRow) writes.push(sql.moveChainHead(t, e));
      await db.runAll(writes);
    },
    async listSessionValues(t, s) {
      return (await db.rows(sql.listSessionValues(dialect), [t, s])).map((r) => ({
        seq: num(r[0]),
        type: r[1] as SessionValues['type'],
        paths: Object.keys(json<Record<string, unknown>>(r[2])),
      }));
    },
    async tagSession(t, s, subject, at) {
      await write([{ sql: sql.tagSession, args: [t, s, subject, at] }]);
    },
    async sessionSubject(t, s) {
      const [row] = await db.rows(sql.sessionSubject, [t, s]);
      return row ? str(row[0]) : null;
    },
    async listSubjectSessions(t, subject) {
      return (await db.rows(sql.listSubjectSessions, [t, subject])).map((r) => str(r[0]));
    },
    async deleteSubject(t, subject) {
      await write([{ sql: sql.deleteSubject, args: [t, subject] }]);
    },
    async erasedSessionsSince(t, sessionIds, since) {
      if (sessionIds.length === 0) return [];
      const rows = await db.rows(sql.erasedSessionsSince(sessionIds.length), [t, ...sessionIds, since]);
      return rows.map((r) => str(r[0]));
    },
    async listSessionPendingDeliveries(t, s) {
      return (await db.rows(sql.listSessionPendingDeliveries, [t, t, s])).map((r) => str(r[0]));
    },
    async eraseSession(t, s, options) {
      await db.runAll([
        ...sql.eraseSession(t, s, options),
        ...conflictErasures(t, await db.rows(sql.sessionConflictBodies, [t, s]), options),
        ...approvalErasures(t, await db.rows(sql.sessionApprovalBodies, [t, s]), options.erasedBy),
      ]);
    },
    async listExpiredConflicts(t, before, limit) {
      return (await db.all(prune.expiredConflicts, [t, before, t, limit])).map(rowToConflict);
    },
    async expireConflicts(t, ids, options) {
      if (ids.length === 0) return;
      await db.runAll(
        conflictErasures(t, await db.rows(sql.conflictBodies(ids.length), [t, ...ids]), options),
      );
    },
    async listExpiredApprovals(t, before, limit) {
      return (await db.all(prune.expiredApprovals, [t, before, t, limit])).map(rowToApproval);
    },
    async expireApprovals(t, ids, erasedBy) {
      if (ids.length === 0) return;
      await db.runAll(
        approvalErasures(t, await db.rows(sql.approvalBodies(ids.length), [t, ...ids]), erasedBy),
      );
    },
    async insertCheckpoint(c) {
      await write([prune.insertCheckpoint(c)]);
    },
    async checkpointAt(t, seq) {
      const r = await db.get(prune.checkpointAt, [t, seq]);
      return r ? prune.rowToCheckpoint(r) : null;
    },
    async eventAt(t, seq) {
      const r = await db.get(prune.eventAt, [t, seq]);
      return r ? { hash: str(r['hash']), occurred_at: str(r['occurred_at']) } : null;
    },
    async firstEventSeq(t) {
      const r = await db.get(prune.firstEventSeq, [t]);
      return r ? num(r['seq']) : null;
    },
    async pruneEvents(t, seq) {
      await write(prune.pruneThrough(t, seq));
    },
    async prunedThrough(t) {
      const r = await db.get(prune.latestPrune, [t]);
      return r ? num(json<{ through_seq: unknown }>(r['data']).through_seq) : null;
    },
    async listExpiredValues(t, before, limit) {
      return (await db.all(prune.expiredValues, [t, before, t, limit])).map((r) => ({
        seq: num(r['seq']),
        type: r['type'] as SessionValues['type'],
        paths: Object.keys(json<Record<string, unknown>>(r['fields'])),
      }));
    },
    async expireValues(t, seqs, erasedBy) {
      if (seqs.length > 0) await write([prune.expireValues(t, seqs, erasedBy)]);
    },
    async listExpiredItems(t, before, after, limit) {
      const rows = await db.all(prune.expiredItems, [
        t,
        before,
        after.session_id,
        after.session_id,
        after.key,
        t,
        limit,
      ]);
      return rows.map((r) => ({
        session_id: str(r['session_id']),
        key: str(r['key']),
        version: num(r['version']),
      }));
    },
    async expireItems(t, items) {
      if (items.length > 0) await write(prune.expireItems(t, items));
    },
    async getRetention(t) {
      const r = await db.get(holds.getRetention, [t]);
      return r
        ? { settings: str(r['settings']), updated_at: str(r['updated_at']), updated_by: str(r['updated_by']) }
        : null;
    },
    async putRetention(t, row) {
      await write([{ sql: holds.putRetention, args: [t, row.settings, row.updated_at, row.updated_by] }]);
    },
    async insertHold(t, h) {
      await write([holds.insertHold(t, h)]);
    },
    async deleteHold(t, id) {
      const r = await db.get(holds.getHold, [t, id]);
      if (!r) return null;
      await write([{ sql: holds.deleteHold, args: [t, id] }]);
      return holds.rowToHold(r);
    },
    async listHolds(t) {
      return (await db.all(holds.listHolds, [t])).map(holds.rowToHold);
    },
    async firstHeldSeq(t) {
      const r = await db.get(holds.firstHeldSeq, [t, t]);
      return r?.['seq'] == null ? null : num(r['seq']);
    },
    async lastSeqBefore(t, before) {
      const r = await db.get(prune.lastSeqBefore, [t, before, t]);
      return r?.['seq'] == null ? null : num(r['seq']);
    },
    async insertDeliveries(t, rows) {
      if (rows.length === 0) return;
      if (defer) defer({ kind: 'deliveries', tenantId: t, rows });
      else await db.runAll(rows.map((d) => sql.insertDelivery(t, d)));
    },
    async insertWebhook(t, w) {
      const q = sql.insertWebhook(t, w);
      await db.run(q.sql, q.args);
    },
    async updateWebhook(t, id, patch) {
      const q = sql.updateWebhook(t, id, patch);
      await db.run(q.sql, q.args);
    },
    async deleteWebhook(t, id) {
      return (await db.runAll(sql.deleteWebhook(t, id))) > 0;
    },
    async resetDelivery(t, id, nextAttemptAt, updatedAt) {
      await db.run(sql.resetDelivery, [nextAttemptAt, updatedAt, t, id]);
    },
    async latestApprovalByDigest(t, digest) {
      const r = await db.get(sql.latestApprovalByDigest, [t, digest]);
      return r ? rowToApproval(r) : null;
    },
    async listDueApprovals(t, now, limit) {
      return (await db.all(sql.listDueApprovals, [t, now, limit])).map(rowToApproval);
    },
    async insertApproval(t, approval) {
      const q = sql.insertApproval(t, approval);
      await db.run(q.sql, q.args);
    },
    async addApprovalRequester(t, id, requester) {
      // Compare-and-set, retried when another transaction changed the list between the read and
      // the write (the core holds the tenant's chain-head lock here, so it does not in practice).
      for (;;) {
        const row = await db.get(sql.getApprovalRequesters, [t, id]);
        if (!row) return false;
        const text = str(row['requesters']);
        const listed = json<string[]>(text);
        if (listed.includes(requester)) return false;
        const next = JSON.stringify([...listed, requester]);
        if ((await db.run(sql.setApprovalRequesters, [next, t, id, text])) > 0) return true;
      }
    },
    async transitionApproval(t, id, change) {
      const q = sql.transitionApproval(t, id, change);
      return (await db.run(q.sql, q.args)) > 0;
    },
    async consumeApproval(t, id, now) {
      const [r] = await db.runReturning(sql.consumeApproval, [now, t, id, now]);
      return r ? { uses_left: num(r['uses_left']), status: r['status'] as 'approved' | 'used' } : null;
    },
  };
}

/** API keys, but the bootstrap insert, whose atomicity each store ensures its own way. */
export function createSqlKeyStore(db: SqlExecutor): Omit<KeyStore, 'insertFirstApiKey'> {
  return {
    async insertApiKey(k) {
      await db.run(sql.insertApiKey, apiKeyValues(k));
    },
    async findApiKeyByHash(hash) {
      const r = await db.get(sql.findApiKeyByHash, [hash]);
      return r ? rowToKey(r) : null;
    },
    async listApiKeys(tenantId) {
      const rows =
        tenantId === undefined
          ? await db.all(sql.listAllApiKeys)
          : await db.all(sql.listTenantApiKeys, [tenantId]);
      return rows.map(rowToKey);
    },
    async revokeApiKey(keyId, at) {
      return (await db.run(sql.revokeApiKey, [at, keyId])) > 0;
    },
    async countApiKeys() {
      return num((await db.get(sql.countApiKeys))!['n']);
    },
  };
}

/**
 * The claim of due deliveries by `lease`, which leases the chosen ones and returns their rows
 * (`deliveries.*`, PostgreSQL's `UPDATE … RETURNING`), then reads their webhooks and events.
 */
export function createLeasedClaim(
  db: SqlExecutor,
  lease: (options: ClaimOptions) => Promise<readonly Row[]>,
): OutboxStore['claimDueDeliveries'] {
  return async (options) => {
    const claimed = [...(await lease(options))];
    if (claimed.length === 0) return [];
    const webhookIds = [...new Set(claimed.map((r) => str(r['webhook_id'])))];
    const eventIds = claimed.map((r) => str(r['event_id']));
    const webhooks = await db.all(sql.webhooksByIds(webhookIds.length), webhookIds);
    // As arrays of the named columns: a row object per event (and its copy without
    // decision_id) was a visible share of a drain's CPU.
    const events = await db.rows(sql.eventsByIds(eventIds.length), eventIds);
    const webhookById = new Map(webhooks.map((r) => [`${str(r['tenant_id'])}\n${str(r['id'])}`, r]));
    const eventById = new Map(events.map((r) => [`${str(r[0])}\n${str(r[1])}`, r]));
    // RETURNING has no order; hand them out due-first, as the claim chose them.
    const byDue = (r: Row) => `${str(r['next_attempt_at'])}\n${str(r['delivery_id'])}`;
    claimed.sort((a, b) => (byDue(a) < byDue(b) ? -1 : byDue(a) > byDue(b) ? 1 : 0));
    const result: ClaimedDelivery[] = [];
    // One object per webhook, shared by its deliveries (a backlog is mostly one or two hooks).
    const parsedWebhooks = new Map<Row, StoredWebhook>();
    for (const r of claimed) {
      const tenantId = str(r['tenant_id']);
      const webhookRow = webhookById.get(`${tenantId}\n${str(r['webhook_id'])}`);
      const event = eventById.get(`${tenantId}\n${str(r['event_id'])}`);
      // Deleted between the claim and this read: its pending deliveries are gone with it.
      if (!webhookRow || !event) continue;
      let webhook = parsedWebhooks.get(webhookRow);
      if (!webhook) {
        webhook = rowToWebhook(webhookRow);
        parsedWebhooks.set(webhookRow, webhook);
      }
      // The whole history event and outbox row, as this claim has always handed over.
      const historyEvent: HistoryEvent = {
        event_id: str(event[1]),
        seq: num(event[2]),
        type: event[3] as HistoryEvent['type'],
        session_id: str(event[4]),
        occurred_at: str(event[5]),
        data: openEventData(json(event[6]), eventValuesOf(strOrNull(event[9]), numOrNull(event[10]))),
        prev_hash: str(event[7]),
        hash: str(event[8]),
      };
      result.push({
        tenant_id: tenantId,
        delivery: rowToDelivery(r),
        webhook,
        event: historyEvent,
        traceparent: strOrNull(r['traceparent']),
      });
    }
    return result;
  };
}

type ClaimOptions = Parameters<OutboxStore['claimDueDeliveries']>[0];

/** The webhook outbox, but for its claim (each store claims its own way). */
export function createSqlOutbox(db: SqlExecutor): Omit<OutboxStore, 'claimDueDeliveries'> {
  return {
    async recordDeliveryAttempt(tenantId, deliveryId, a) {
      await db.run(sql.recordDeliveryAttempt, attemptValues(tenantId, deliveryId, a));
    },
    // One runAll: a single statement on PostgreSQL (combined writes), the caller's transaction on
    // SQLite (sqliteStore wraps it, so the batch costs one commit).
    async recordDeliveryAttempts(attempts) {
      if (attempts.length === 0) return;
      await db.runAll(
        attempts.map((r) =>
          r.leaseUntil === undefined
            ? { sql: sql.recordDeliveryAttempt, args: attemptValues(r.tenantId, r.deliveryId, r.attempt) }
            : {
                sql: sql.recordLeasedDeliveryAttempt,
                args: [...attemptValues(r.tenantId, r.deliveryId, r.attempt), r.leaseUntil],
              },
        ),
      );
    },
    async releaseDeliveries(leases) {
      if (leases.length === 0) return;
      await db.runAll(
        leases.map((l) => ({ sql: sql.releaseDelivery, args: [l.tenantId, l.deliveryId, l.leaseUntil] })),
      );
    },
    async disableWebhook(tenantId, webhookId, at) {
      await db.run(sql.disableWebhook, [at, tenantId, webhookId]);
    },
    async nextDueAt() {
      return strOrNull((await db.get(sql.nextDueAt))!['t']);
    },
  };
}

/** The arguments of `recordDeliveryAttempt`, in its placeholders' order. */
function attemptValues(tenantId: string, deliveryId: string, a: DeliveryAttempt): unknown[] {
  return [
    a.status,
    a.attempts,
    a.next_attempt_at,
    a.last_status_code,
    a.last_error,
    a.delivered_at,
    a.updated_at,
    tenantId,
    deliveryId,
  ];
}

/**
 * A tenant's events in seq order, a page at a time. Between pages it yields to the event loop:
 * a SQLite read completes without I/O, and a verification of a long chain (`GET
 * /v1/history/verify`, open to any key that reads history) held the process for its whole run
 * — 2 s at 130,000 events — with every decision queued behind it. A page of 250 is ~4 ms of
 * hashing.
 */
export async function* scanEvents(
  db: SqlExecutor,
  tenantId: string,
  options: { pageSize?: number } = {},
): AsyncIterable<SealedEvent[]> {
  const pageSize = options.pageSize ?? 250;
  let after = 0;
  for (;;) {
    const page = await db.all(sql.scanEvents, [tenantId, after, pageSize]);
    if (page.length === 0) return;
    const events = page.map(rowToSealedEvent);
    yield events;
    after = events[events.length - 1]!.seq;
    await yieldToOthers();
  }
}

/** Tenants that have events. */
export async function listTenants(db: SqlExecutor): Promise<string[]> {
  return (await db.all(sql.listTenants)).map((r) => str(r['tenant_id']));
}

/**
 * The erasure of conflicts read as `[conflict_id, body]` rows: each body's values (and the
 * proposed metadata) replaced by the marker of `erasedBy`, an open one resolved `erased` at `at`.
 */
function conflictErasures(
  tenantId: string,
  rows: readonly unknown[][],
  options: { erasedBy: number; at: string },
): Statement[] {
  const marker = erasedMarker(options.erasedBy);
  return rows.map(([id, text]) => {
    const body = json<{ current: Record<string, unknown>; proposed: Record<string, unknown> }>(text);
    body.current['value'] = marker;
    body.proposed['value'] = marker;
    if ('metadata' in body.proposed) body.proposed['metadata'] = marker;
    return {
      sql: sql.eraseConflict,
      args: [JSON.stringify(body), options.erasedBy, options.at, tenantId, id],
    };
  });
}

/** The erasure of approvals read as `[approval_id, body]` rows: params and reason replaced by the marker. */
function approvalErasures(tenantId: string, rows: readonly unknown[][], erasedBy: number): Statement[] {
  const marker = erasedMarker(erasedBy);
  return rows.map(([id, text]) => {
    const body = json<Record<string, unknown>>(text);
    body['params'] = marker;
    body['reason'] = marker;
    return { sql: sql.eraseApprovalBody, args: [JSON.stringify(body), tenantId, id] };
  });
}
