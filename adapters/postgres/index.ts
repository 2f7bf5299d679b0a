/**
 * `gatehouse/postgres`: the PostgreSQL Store, for many `gatehouse serve` instances on one
 * database. Same tables, rules and contract as `gatehouse/sqlite`.
 */

export { POSTGRES_MIGRATIONS } from './migrations.js';
export type { PostgresClient, PostgresPool, PostgresQueryable, PostgresQueryResult } from './pgPool.js';
export { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from './postgresStore.js';
