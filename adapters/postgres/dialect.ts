/**
 * PostgreSQL's side of the SQL the stores share (adapters/sql/statements.ts): numbered
 * placeholders, row locks (`FOR UPDATE`, `SKIP LOCKED`), and writes combined into one statement
 * with data-modifying CTEs, one round trip instead of several.
 */
import { numberPlaceholders, type SqlDialect, type Statement } from '../sql/dialect.js';
import { listSessionItemsByKey } from '../sql/statements.js';

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
