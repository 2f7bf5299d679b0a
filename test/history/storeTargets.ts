/**
 * The real stores the history-format tests run on: SQLite files always, PostgreSQL when
 * GATEHOUSE_TEST_DATABASE_URL is set. Each target opens a store at a place it can reopen, and
 * runs raw SQL behind the store's back (what an attacker with the database file could do).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openPostgresStore, type PostgresStore } from '../../adapters/postgres/index.js';
import { openSqliteStore, type SqliteStore } from '../../adapters/sqlite/index.js';
import type { Store } from '../../src/index.js';

/** A store kind the tests run on. */
export interface StoreTarget {
  name: 'sqlite' | 'postgres';
  /** The migration version that adds history format 2. */
  formatMigration: number;
  /** The migration version that adds `conflicts.values_erased_by`. */
  conflictErasureMigration: number;
  /** A new place for a database (a file, a schema). */
  place(): string;
  open(place: string): Promise<Store>;
  /** Runs SQL on the store's own database, outside the Store interface. */
  exec(store: Store, sql: string): Promise<void>;
  query(store: Store, sql: string): Promise<Array<Record<string, unknown>>>;
  /** Removes every place made. */
  cleanup(): Promise<void>;
}

const url = process.env['GATEHOUSE_TEST_DATABASE_URL'];

function sqliteTarget(): StoreTarget {
  const dirs: string[] = [];
  return {
    name: 'sqlite',
    formatMigration: 9,
    conflictErasureMigration: 13,
    place() {
      const dir = mkdtempSync(join(tmpdir(), 'gh-format-'));
      dirs.push(dir);
      return join(dir, 'gatehouse.db');
    },
    async open(place) {
      return openSqliteStore({ filename: place });
    },
    async exec(store, sql) {
      (store as SqliteStore).database.exec(sql);
    },
    async query(store, sql) {
      return (store as SqliteStore).database.prepare(sql).all();
    },
    async cleanup() {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

function postgresTarget(connectionString: string): StoreTarget {
  const schemas: string[] = [];
  return {
    name: 'postgres',
    formatMigration: 8,
    conflictErasureMigration: 12,
    place() {
      const schema = `gh_format_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      return schema;
    },
    async open(schema) {
      return openPostgresStore({ connectionString, schema, pool: { max: 3 } });
    },
    async exec(store, sql) {
      await (store as PostgresStore).pool.query(sql);
    },
    async query(store, sql) {
      return (await (store as PostgresStore).pool.query(sql)).rows;
    },
    async cleanup() {
      if (schemas.length === 0) return;
      const client = new pg.Client({ connectionString });
      await client.connect();
      try {
        for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/** SQLite, and PostgreSQL when configured. */
export const STORE_TARGETS: StoreTarget[] = [sqliteTarget(), ...(url ? [postgresTarget(url)] : [])];
