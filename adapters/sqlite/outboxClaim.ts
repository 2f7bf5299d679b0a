/**
 * The SQLite store's claim of due deliveries: one read that joins each due delivery with its
 * event, then a lease written per row by rowid, in one write transaction (the caller's). The
 * shared `UPDATE … RETURNING` followed by reads of the events and webhooks (PostgreSQL's, one
 * round trip each) cost a SQLite drain about twice as much: every delivery column as an object
 * property, the `IN (subquery)` found each row again through the primary-key index, and the event
 * read was a statement of its own. SQLite has one writer, so no other claim can slip between the
 * read and the leases.
 */
import type { ClaimedDelivery, OutboxStore, StoredWebhook } from '../../src/index.js';
import type { SqlExecutor } from '../sql/executor.js';
import { eventFromColumns, num, numOrNull, type Row, rowToWebhook, str, strOrNull } from '../sql/rows.js';
import { webhooksByIds } from '../sql/statements.js';

/**
 * Due deliveries of active webhooks, due-first, as positional columns: the delivery's rowid, its
 * columns, then its event's (NULL where the event is gone: claimed anyway, then skipped, as the
 * shared claim does). The index on (status, next_attempt_at) hands them out in order.
 */
const DUE_DELIVERIES = `SELECT d.rowid, d.tenant_id, d.delivery_id, d.webhook_id, d.event_id, d.event_type, d.status,
    d.attempts, d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.updated_at, d.delivered_at,
    d.traceparent, e.event_id, e.seq, e.type, e.session_id, e.occurred_at, e.data, e.prev_hash, e.hash
  FROM deliveries d
  JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
  LEFT JOIN events e ON e.event_id = d.event_id AND e.tenant_id = d.tenant_id
  WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
    AND w.status = 'active'
  ORDER BY d.next_attempt_at LIMIT ?`;

/** Where the event's columns start in a row of {@link DUE_DELIVERIES}. */
const EVENT_AT = 15;

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
  const webhookIds = new Set<string>();
  for (const r of rows) {
    await db.run(LEASE, [leaseUntil, r[0]]);
    webhookIds.add(str(r[3]));
  }
  const ids = [...webhookIds];
  const webhookRows = await db.all(webhooksByIds(ids.length), ids);
  // One object per webhook, shared by its deliveries (a backlog is mostly one or two hooks).
  const webhooks = new Map<string, StoredWebhook>(
    webhookRows.map((w: Row) => [`${str(w['tenant_id'])}\n${str(w['id'])}`, rowToWebhook(w)]),
  );
  const claimed: ClaimedDelivery[] = [];
  for (const r of rows) {
    const tenantId = str(r[1]);
    const webhook = webhooks.get(`${tenantId}\n${str(r[3])}`);
    if (!webhook || r[EVENT_AT] == null) continue;
    claimed.push({
      tenant_id: tenantId,
      delivery: {
        delivery_id: str(r[2]),
        webhook_id: str(r[3]),
        event_id: str(r[4]),
        event_type: str(r[5]),
        status: r[6] as ClaimedDelivery['delivery']['status'],
        attempts: num(r[7]),
        next_attempt_at: strOrNull(r[8]),
        last_status_code: numOrNull(r[9]),
        last_error: strOrNull(r[10]),
        created_at: str(r[11]),
        updated_at: str(r[12]),
        delivered_at: strOrNull(r[13]),
      },
      webhook,
      event: eventFromColumns(r, EVENT_AT),
      event_data_json: str(r[EVENT_AT + 5]),
      traceparent: strOrNull(r[14]),
    });
  }
  return claimed;
}
