/** `gatehouse/sqlite`: the embedded SQLite Store (WAL), the default backend. */

export type { SqliteDatabase, SqliteRow, SqliteStatement } from './driver.js';
export { SQLITE_MIGRATIONS } from './migrations.js';
export { openSqliteStore, type SqliteStore, type SqliteStoreOptions } from './sqliteStore.js';
