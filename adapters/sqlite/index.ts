/** `gatehouse/sqlite`: the embedded SQLite Store (WAL), the default backend. */

export { SQLITE_MIGRATIONS } from './migrations.js';
export { openSqliteStore, type SqliteStore, type SqliteStoreOptions } from './sqliteStore.js';
