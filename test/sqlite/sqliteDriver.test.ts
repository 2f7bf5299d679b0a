/**
 * The SQLite driver choice (issue 13, item 1): `node:sqlite` wherever the runtime has it, because
 * better-sqlite3 12 aborts the process on Node >= 24.19; better-sqlite3 only on Node 20, loaded
 * lazily, with a clear message when it is missing. Run this file under Node 20 and Node 24.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BETTER_SQLITE3_MISSING,
  openSqliteDatabase,
  type SqliteDriverResolver,
  sqliteDriverName,
} from '../../adapters/sqlite/driver.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-driver-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hasNodeSqlite = (() => {
  try {
    return process.getBuiltinModule('node:sqlite') !== undefined;
  } catch {
    return false;
  }
})();

const pragma = (store: ReturnType<typeof openSqliteStore>, name: string) =>
  Object.values(store.database.prepare(`PRAGMA ${name}`).get() ?? {})[0];

describe('SQLite driver', () => {
  it('uses node:sqlite where the runtime has it, better-sqlite3 only where it does not', async () => {
    const store = openSqliteStore();
    try {
      expect(store.database.driver).toBe(hasNodeSqlite ? 'node:sqlite' : 'better-sqlite3');
      expect(sqliteDriverName()).toBe(store.database.driver);
    } finally {
      await store.close();
    }
  });

  it('never loads better-sqlite3 on a runtime with node:sqlite', async () => {
    const store = openSqliteStore({ filename: join(dir, 'no-addon.db') });
    await store.close();
    const loaded = Object.keys(createRequire(import.meta.url).cache).some((path) =>
      path.includes('better-sqlite3'),
    );
    expect(loaded).toBe(!hasNodeSqlite);
  });

  it('sets every pragma it relies on, whatever the driver was built with', async () => {
    const normal = openSqliteStore({ filename: join(dir, 'pragmas.db'), walAutocheckpointPages: 1234 });
    const full = openSqliteStore({ filename: join(dir, 'pragmas-full.db'), durability: 'full' });
    try {
      expect(pragma(normal, 'journal_mode')).toBe('wal');
      expect(pragma(normal, 'synchronous')).toBe(1);
      expect(pragma(full, 'synchronous')).toBe(2);
      expect(pragma(normal, 'foreign_keys')).toBe(1);
      expect(pragma(normal, 'busy_timeout')).toBe(5000);
      expect(pragma(normal, 'wal_autocheckpoint')).toBe(1234);
      expect(pragma(full, 'wal_autocheckpoint')).toBe(10_000);
      expect(pragma(normal, 'cache_size')).toBe(-16000);
    } finally {
      await normal.close();
      await full.close();
    }
  });

  it('says what to install when a runtime without node:sqlite lacks better-sqlite3', () => {
    const missing: SqliteDriverResolver = {
      nodeSqlite: () => undefined,
      betterSqlite3: () => {
        throw Object.assign(new Error("Cannot find module 'better-sqlite3'"), { code: 'MODULE_NOT_FOUND' });
      },
    };
    expect(() => openSqliteDatabase(':memory:', {}, missing)).toThrow(
      expect.objectContaining({ code: 'unavailable', message: BETTER_SQLITE3_MISSING }),
    );
    expect(BETTER_SQLITE3_MISSING).toBe(
      'On Node 20 the SQLite store needs better-sqlite3@12: npm install better-sqlite3@12',
    );
  });

  it('reads rows as objects and as arrays, integers as numbers, on either driver', () => {
    const db = openSqliteDatabase(':memory:');
    try {
      db.exec('CREATE TABLE t (a INTEGER, b TEXT)');
      const insert = db.prepare('INSERT INTO t VALUES (?, ?)');
      expect(insert.run(2 ** 40, 'x').changes).toBe(1);
      expect(insert.run(2, null).changes).toBe(1);
      const select = db.prepare('SELECT a, b FROM t ORDER BY a');
      expect(select.all().map((r) => ({ ...r }))).toEqual([
        { a: 2, b: null },
        { a: 2 ** 40, b: 'x' },
      ]);
      expect(select.rows()).toEqual([
        [2, null],
        [2 ** 40, 'x'],
      ]);
      expect(db.prepare('SELECT a FROM t WHERE a = ?').get(3)).toBeUndefined();
      db.begin('IMMEDIATE');
      expect(db.inTransaction).toBe(true);
      db.prepare('DELETE FROM t').run();
      db.rollback();
      expect(db.inTransaction).toBe(false);
      expect(select.rows()).toHaveLength(2);
    } finally {
      db.close();
    }
  });

  it('publishes no declaration that names better-sqlite3 or pg', () => {
    // Consumers without @types/better-sqlite3 or @types/pg must type-check: the store modules
    // reach either driver only through Gatehouse's own interfaces and a lazy load.
    const modules = [
      'adapters/sqlite/sqliteStore.ts',
      'adapters/sqlite/driver.ts',
      'adapters/sqlite/index.ts',
      'adapters/postgres/postgresStore.ts',
      'adapters/postgres/pgPool.ts',
      'adapters/postgres/index.ts',
    ];
    for (const file of modules) {
      const source = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
      expect(source, file).not.toMatch(/^import[^;]*from '(better-sqlite3|pg)'/m);
      expect(source, file).not.toMatch(/import\('better-sqlite3'\)/);
    }
  });
});
