/**
 * SQLite's side of the SQL the stores share (adapters/sql/statements.ts): `?` placeholders as
 * written, index hints, and no row locks, because one connection writes at a time (the store's
 * mutex and `BEGIN IMMEDIATE`).
 */
import type { SqlDialect } from '../sql/dialect.js';

/** The SQLite dialect. */
export const sqliteDialect: SqlDialect = {
  name: 'sqlite',
  placeholders: (sql) => sql,
  eventsIndex: (index) => ` INDEXED BY ${index}`,
  lockCurrentItem: '',
  // The newest event by primary key: `BEGIN IMMEDIATE` already holds the only write lock.
  lockChainHead: (tenantId) => ({
    sql: 'SELECT seq, hash FROM events WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1',
    args: [tenantId],
  }),
  chainHeadRow: false,
  claimDueDeliveries: ({ now, leaseUntil, limit }) => ({
    sql: `UPDATE deliveries SET lease_until = ?
      WHERE delivery_id IN (
        SELECT d.delivery_id FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
        WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
          AND w.status = 'active'
        ORDER BY d.next_attempt_at LIMIT ?)
      RETURNING *`,
    args: [leaseUntil, now, now, limit],
    writes: true,
  }),
};
