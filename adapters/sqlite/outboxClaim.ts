/**
 * The SQLite store's claim of due deliveries: one read that joins each due delivery with its
 * event, then a lease written per row by rowid, in one write transaction (the caller's). The
 * shared `UPDATE … RETURNING` followed by reads of the events and webhooks (PostgreSQL's, one
 * round trip each) cost about 1.4 times the CPU per claimed delivery on SQLite: every delivery
 * column as an object property, the `IN (subquery)` found each row again through the primary-key
 * index, and the event read was a statement of its own. SQLite has one writer, so no other claim can slip between the
 * read and the leases.
 */
import {
  type ClaimedDelivery,
  type OutboxStore,
  openEventDataJson,
  type StoredWebhook,
} from '../../src/index.js';
import type { SqlExecutor } from '../sql/executor.js';
import { num, numOrNull, type Row, rowToWebhook, str, strOrNull } from '../sql/rows.js';
import { webhooksByIds } from '../sql/statements.js';

/**
 * Due deliveries of active webhooks, due-first, as positional columns: the delivery's rowid, what
 * a dispatcher reads of it, then its event's (NULL where the event is gone: claimed anyway, then
 * skipped, as the shared claim does). The index on (status, next_attempt_at) hands them out in
 * order. Every column read costs: the whole row and event were a quarter of this read.
 */
const DUE_DELIVERIES = `SELECT d.rowid, d.tenant_id, d.delivery_id, d.webhook_id, d.attempts, d.traceparent,
    e.event_id, e.type, e.session_id, e.occurred_at, e.data, v.fields, v.erased_by
  FROM deliveries d
  JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
  LEFT JOIN events e ON e.event_id = d.event_id AND e.tenant_id = d.tenant_id
  LEFT JOIN event_values v ON v.tenant_id = e.tenant_id AND v.seq = e.seq
  WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
    AND w.status = 'active'
  ORDER BY d.next_attempt_at LIMIT ?`;

const LEASE = 'UPDATE deliveries SET lease_until = ? WHERE rowid = ?';

/**
 * Claims up to `limit` due deliveries. Run it inside one write transaction (`BEGIN IMMEDIATE`):
 * the read and the leases must see no other writer in between.
 */
export async function claimDueDeliveriesInTransaction(
  db: SqlExecutor,
  { now, leaseUntil, limit }: Parameters<OutboxStore['claimDueDeliveries']>[0],
): Promise<ClaimedDelivery[]> {
  const rows = await db.rows(DUE_DELIVERIES, [now, now, limit]);
  if (rows.length === 0) return [];
  await db.runAll(rows.map((r) => ({ sql: LEASE, args: [leaseUntil, r[0]] })));
  const ids = [...new Set(rows.map((r) => str(r[3])))];
  const webhookRows = await db.all(webhooksByIds(ids.length), ids);
  // One object per webhook, shared by its deliveries (a backlog is mostly one or two hooks).
  const webhooks = new Map<string, StoredWebhook>(
    webhookRows.map((w: Row) => [`${str(w['tenant_id'])}\n${str(w['id'])}`, rowToWebhook(w)]),
  );
  const claimed: ClaimedDelivery[] = [];
  for (const r of rows) {
    const tenantId = str(r[1]);
    const webhook = webhooks.get(`${tenantId}\n${str(r[3])}`);
    const data = r[10] as string | null;
    if (!webhook || data === null) continue;
    claimed.push({
      tenant_id: tenantId,
      delivery: { delivery_id: str(r[2]), attempts: num(r[4]) },
      webhook,
      event: {
        event_id: str(r[6]),
        type: r[7] as ClaimedDelivery['event']['type'],
        session_id: str(r[8]),
        occurred_at: str(r[9]),
      },
      // Values put back as readers see them: an erased field goes out as erased.
      event_data_json: openEventDataJson(data, strOrNull(r[11]), numOrNull(r[12])),
      traceparent: strOrNull(r[5]),
    });
  }
  return claimed;
}
