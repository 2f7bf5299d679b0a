/**
 * The SQLite store's claim of due deliveries, in one write transaction (the caller's; SQLite has
 * one writer, so no other claim can slip between the reads and the leases): the due deliveries
 * (or, behind a backlog, each tenant's first ones), fairShare's choice among them
 * (src/webhooks/fairShare.ts), leased by rowid and read with their events.
 */
import {
  type ClaimedDelivery,
  type ClaimShare,
  claimPageSize,
  type DueCandidate,
  fairShare,
  type OutboxStore,
  openEventDataJson,
  type StoredWebhook,
  type TenantWalk,
  WALK_TENANTS,
} from '../../src/index.js';
import type { SqlExecutor } from '../sql/executor.js';
import { num, numOrNull, type Row, rowToWebhook, str, strOrNull } from '../sql/rows.js';
import { marks, webhooksByIds } from '../sql/statements.js';

/**
 * The first due, unleased deliveries of active webhooks, due first, through `deliveries_due`: a
 * claim's first look. Fewer than asked means these are all that are due.
 */
const DUE_FIRST = `SELECT d.rowid, d.tenant_id, d.webhook_id, d.next_attempt_at
  FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
  WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
    AND w.status = 'active'
  ORDER BY d.next_attempt_at LIMIT ?`;

/**
 * The first tenant after `?` with pending deliveries: one step of a walk over the partial index
 * (named: without statistics SQLite would take `deliveries_due` and sort every pending row).
 */
const NEXT_PENDING_TENANT = `SELECT tenant_id FROM deliveries INDEXED BY deliveries_pending_by_webhook
  WHERE status = 'pending' AND tenant_id > ?
  ORDER BY tenant_id LIMIT 1`;

/**
 * A tenant's due, unleased deliveries of its active webhooks, as {@link DUE_FIRST} reads them (the
 * tenant's ID passed in as a column): each webhook's first few, due first, through the partial
 * index `deliveries_pending_by_webhook`, so a webhook's backlog is never read past them.
 */
const DUE_OF_TENANT = `SELECT d.rowid, ?, d.webhook_id, d.next_attempt_at FROM webhooks w
  CROSS JOIN deliveries d ON d.rowid IN (SELECT x.rowid FROM deliveries x INDEXED BY deliveries_pending_by_webhook
    WHERE x.status = 'pending' AND x.tenant_id = w.tenant_id AND x.webhook_id = w.id
      AND x.next_attempt_at <= ? AND (x.lease_until IS NULL OR x.lease_until <= ?)
    ORDER BY x.next_attempt_at LIMIT ?)
  WHERE w.tenant_id = ? AND w.status = 'active'`;

/**
 * The chosen deliveries with what a dispatcher reads of them, as positional columns: the
 * delivery's rowid, its own columns, then its event's (NULL where the event is gone: leased
 * anyway, then skipped). Every column read costs: the whole row and event were a quarter of this
 * read.
 */
const CHOSEN_DELIVERIES = (count: number) => `SELECT d.rowid, d.tenant_id, d.delivery_id, d.webhook_id,
    d.attempts, d.traceparent, e.event_id, e.type, e.session_id, e.occurred_at, e.data, v.fields, v.erased_by
  FROM deliveries d
  LEFT JOIN events e ON e.event_id = d.event_id AND e.tenant_id = d.tenant_id
  LEFT JOIN event_values v ON v.tenant_id = e.tenant_id AND v.seq = e.seq
  WHERE d.rowid IN (${marks(count)})`;

const LEASE = 'UPDATE deliveries SET lease_until = ? WHERE rowid = ?';

/** A due delivery as a claim weighs it. */
interface Candidate extends DueCandidate {
  rowid: number;
}

/**
 * What a claim chooses from: the first due deliveries in due order (all there are, when fewer
 * than a page: the common case, one read). When the page is full, some tenant may wait behind
 * another's backlog, so also the first ones of the next tenants of `walk` (each webhook's first
 * `limit`, fewer where the tenant's share leaves less room, none of a tenant at its cap): one
 * index step and one read per tenant.
 */
async function dueCandidates(
  db: SqlExecutor,
  { now, limit, share }: { now: string; limit: number; share?: ClaimShare | undefined },
  walk: TenantWalk,
): Promise<Candidate[]> {
  const page = claimPageSize(limit);
  const toCandidate = (r: unknown[]): Candidate => ({
    rowid: num(r[0]),
    tenant_id: str(r[1]),
    webhook_id: str(r[2]),
    next_attempt_at: str(r[3]),
  });
  const candidates = (await db.rows(DUE_FIRST, [now, now, page])).map(toCandidate);
  if (candidates.length < page) return candidates;
  const seen = new Set(candidates.map((c) => c.rowid));
  const tenants: string[] = [];
  let tenant = walk.after;
  while (tenants.length < WALK_TENANTS) {
    const next = await db.rows(NEXT_PENDING_TENANT, [tenant]);
    if (next.length === 0) break;
    tenant = str(next[0]![0]);
    tenants.push(tenant);
    const room = Math.min(limit, (share?.perTenant ?? limit) - (share?.heldByTenant.get(tenant) ?? 0));
    if (room <= 0) continue;
    for (const r of await db.rows(DUE_OF_TENANT, [tenant, now, now, room, tenant])) {
      const c = toCandidate(r);
      if (!seen.has(c.rowid)) candidates.push(c);
    }
  }
  walk.walked(tenants);
  return candidates;
}

export async function claimDueDeliveriesInTransaction(
  db: SqlExecutor,
  options: Parameters<OutboxStore['claimDueDeliveries']>[0],
  walk: TenantWalk,
): Promise<ClaimedDelivery[]> {
  const { leaseUntil, limit, share } = options;
  const chosen = fairShare(await dueCandidates(db, options, walk), limit, share);
  if (chosen.length === 0) return [];
  await db.runAll(chosen.map((c) => ({ sql: LEASE, args: [leaseUntil, c.rowid] })));
  const order = new Map(chosen.map((c, i) => [c.rowid, i]));
  const rows = (
    await db.rows(
      CHOSEN_DELIVERIES(chosen.length),
      chosen.map((c) => c.rowid),
    )
  ).sort((a, b) => order.get(num(a[0]))! - order.get(num(b[0]))!);
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
