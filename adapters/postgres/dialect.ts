/**
 * PostgreSQL's side of the SQL the stores share (adapters/sql/statements.ts): numbered
 * placeholders, row locks (`FOR UPDATE`, `SKIP LOCKED`), and writes combined into one statement
 * with data-modifying CTEs, one round trip instead of several.
 */
import type { StateItem } from '../../src/index.js';
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
 * Leases due deliveries and returns their rows (`deliveries.*`), so that concurrent dispatchers
 * never claim the same one. SKIP LOCKED: dispatchers on other instances pass over rows being
 * claimed right now; the lease then keeps them away until it expires. A CTE with a locking clause
 * runs once.
 */
export function claimDueDeliveries({
  now,
  leaseUntil,
  limit,
}: {
  now: string;
  leaseUntil: string;
  limit: number;
}): Statement {
  return {
    sql: `WITH due AS (
        SELECT d.delivery_id FROM deliveries d
        JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
        WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
          AND w.status = 'active'
        ORDER BY d.next_attempt_at
        LIMIT ?
        FOR UPDATE OF d SKIP LOCKED)
      UPDATE deliveries SET lease_until = ? FROM due WHERE deliveries.delivery_id = due.delivery_id
      RETURNING deliveries.*`,
    args: [now, now, limit, leaseUntil],
    writes: true,
  };
}

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
