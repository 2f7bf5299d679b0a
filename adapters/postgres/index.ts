/**
 * `gatehouse/postgres`: the PostgreSQL Store, for many `gatehouse serve` instances on one
 * database. Same tables, rules and contract as `gatehouse/sqlite`.
 */

/** The versioned schema migrations, applied in order by {@link openPostgresStore}. */
export { POSTGRES_MIGRATIONS } from './migrations.js';
export {
  /** Opens (creating and migrating as needed) a PostgreSQL store. */
  openPostgresStore,
  /** The PostgreSQL Store, with its `pg.Pool`. */
  type PostgresStore,
  /** Options for {@link openPostgresStore}. */
  type PostgresStoreOptions,
} from './postgresStore.js';
