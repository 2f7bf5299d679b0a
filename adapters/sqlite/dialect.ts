/**
 * SQLite's side of the SQL the stores share (adapters/sql/statements.ts): `?` placeholders as
 * written, index hints, and no row locks, because one connection writes at a time (the store's
 * mutex and `BEGIN IMMEDIATE`). Due deliveries are claimed in a transaction of their own
 * (./outboxClaim.ts), not by one statement.
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
};
