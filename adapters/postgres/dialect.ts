/**
 * PostgreSQL's side of the SQL the stores share (adapters/sql/statements.ts): numbered
 * placeholders, row locks (`FOR UPDATE`, `SKIP LOCKED`), and writes combined into one statement
 * with data-modifying CTEs, one round trip instead of several.
 */
import { type StateItem, WALK_TENANTS } from '../../src/index.js';
import { numberPlaceholders, type SqlDialect, type Statement } from '../sql/dialect.js';
import { currentStatus, listSessionItemsByKey } from '../sql/statements.js';

/** The PostgreSQL dialect. */
export const postgresDialect: SqlDialect = {
  name: 'postgres',
  placeholders: numberPlaceholders,
  eventsIndex: () => '',
  listSessionItems: listSessionItemsByKey,
  lockCurrentItem: ' FOR UPDATE OF i',
  // One statement: inserts a seq-0 placeholder on the tenant's first append, otherwise takes the
  // row lock. A concurrent appender waits here and then sees the head as last committed.
  lockChainHead: (tenantId) => ({
    sql: `INSERT INTO chain_heads (tenant_id, seq, hash) VALUES (?, 0, '')
      ON CONFLICT (tenant_id) DO UPDATE SET seq = chain_heads.seq
      RETURNING seq, hash`,
    args: [tenantId],
    writes: true,
  }),
  chainHeadRow: true,
  combineWrites: (statements: readonly Statement[]): Statement => {
    const last = statements.length - 1;
    const ctes = statements.slice(0, last).map((s, n) => `w${n} AS (${s.sql})`);
    return {
      sql: ctes.length === 0 ? statements[last]!.sql : `WITH ${ctes.join(', ')} ${statements[last]!.sql}`,
      args: statements.flatMap((s) => s.args),
    };
  },
};

/**
 * The first `limit` due, unleased deliveries of active webhooks, due first, locked for this
 * claim's transaction (SKIP LOCKED: rows another instance is claiming right now are passed over;
 * the lease then keeps them away until it expires). A claim's first look: fewer than asked means
 * these are all that are due to this claim.
 */
export function dueFirst({ now, limit }: { now: string; limit: number }): Statement {
  return {
    sql: `SELECT d.delivery_id, d.tenant_id, d.webhook_id, d.next_attempt_at
      FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
      WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
        AND w.status = 'active'
      ORDER BY d.next_attempt_at LIMIT ? FOR UPDATE OF d SKIP LOCKED`,
    args: [now, now, limit],
  };
}

/**
 * When {@link dueFirst}'s page was full (some tenant may wait behind another's backlog): the
 * next {@link WALK_TENANTS} tenants with pending deliveries after `after`, one index step each,
 * and each one's first due, unleased deliveries per active webhook (up to `limit`, through
 * `deliveries_pending_by_webhook`, never past a backlog), locked as dueFirst's are. Every tenant
 * looked at has a row (with a NULL delivery where it has none to give) and its place in the walk
 * (`n`), so the walk knows where it stopped: by `n`, the database's order, not JavaScript's
 * (UTF-16 order differs from byte order beyond U+FFFF). `capped` tenants (at their share) give none.
 */
export function dueOfNextTenants({
  now,
  limit,
  after,
  capped,
}: {
  now: string;
  limit: number;
  after: string;
  capped: readonly string[];
}): Statement {
  return {
    sql: `WITH RECURSIVE tenants AS (
        (SELECT tenant_id, 1 AS n FROM deliveries WHERE status = 'pending' AND tenant_id > ?
          ORDER BY tenant_id LIMIT 1)
        UNION ALL
        SELECT (SELECT d.tenant_id FROM deliveries d WHERE d.status = 'pending' AND d.tenant_id > t.tenant_id
            ORDER BY d.tenant_id LIMIT 1), t.n + 1
          FROM tenants t WHERE t.tenant_id IS NOT NULL AND t.n < ?)
      SELECT c.delivery_id, t.tenant_id, w.id AS webhook_id, c.next_attempt_at, t.n
      FROM tenants t
      LEFT JOIN webhooks w ON w.tenant_id = t.tenant_id AND w.status = 'active' AND NOT (t.tenant_id = ANY(?::text[]))
      LEFT JOIN LATERAL (SELECT x.delivery_id, x.next_attempt_at FROM deliveries x
          WHERE x.status = 'pending' AND x.tenant_id = w.tenant_id AND x.webhook_id = w.id
            AND x.next_attempt_at <= ? AND (x.lease_until IS NULL OR x.lease_until <= ?)
          ORDER BY x.next_attempt_at LIMIT ? FOR UPDATE OF x SKIP LOCKED) c ON true
      WHERE t.tenant_id IS NOT NULL`,
    args: [after, WALK_TENANTS, capped, now, now, limit],
  };
}

/** Leases the chosen deliveries (locked by {@link dueFirst} or {@link dueOfNextTenants}); their rows. */
export const LEASE_CHOSEN = `UPDATE deliveries SET lease_until = ? WHERE delivery_id = ANY(?::text[])
  RETURNING deliveries.*`;

/**
 * New versions of one tenant's items, made current: one statement of one text however many
 * (arrays, one per column), so it is prepared once. Several versions of one key: the last is current.
 */
export function insertItemVersions(tenantId: string, items: readonly StateItem[]): Statement {
  const current = new Map<string, StateItem>();
  for (const item of items) current.set(`${item.session_id}\u0000${item.key}`, item);
  const last = [...current.values()];
  return {
    sql: INSERT_ITEM_VERSIONS,
    args: [
      tenantId,
      items.map((i) => i.session_id),
      items.map((i) => i.key),
      items.map((i) => i.version),
      items.map((i) => i.value),
      items.map((i) => i.type),
      items.map((i) => i.source),
      items.map((i) => i.trust),
      items.map((i) => i.sensitivity),
      items.map((i) => i.category),
      items.map((i) => JSON.stringify(i.metadata)),
      items.map((i) => i.updated_at),
      tenantId,
      last.map((i) => i.session_id),
      last.map((i) => i.key),
      last.map((i) => i.version),
      last.map(currentStatus),
    ],
  };
}

// ON CONFLICT may change a row once per statement: hence one state_items row per key.
const INSERT_ITEM_VERSIONS = `WITH versions AS (
    INSERT INTO state_versions (tenant_id, session_id, key, version, value, type, source, trust, sensitivity, category, metadata, updated_at)
    SELECT ?, s, k, n, value, type, source, trust, sensitivity, category, metadata, updated_at
    FROM unnest(?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::text[], ?::text[])
      AS u(s, k, n, value, type, source, trust, sensitivity, category, metadata, updated_at))
  INSERT INTO state_items (tenant_id, session_id, key, version, status)
  SELECT ?, s, k, n, status FROM unnest(?::text[], ?::text[], ?::int[], ?::text[]) AS u(s, k, n, status)
  ON CONFLICT (tenant_id, session_id, key) DO UPDATE SET version = excluded.version, status = excluded.status`;
