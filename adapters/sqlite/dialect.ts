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
  lockChainHead: (tenantId) => ({
    sql: 'SELECT seq, hash FROM chain_heads WHERE tenant_id = ?',
    args: [tenantId],
  }),
};
