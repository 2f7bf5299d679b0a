// Where the benchmarks load Gatehouse from, and scratch space.
//
// GATEHOUSE_BENCH_DIST=<dir> loads another build (a copy of dist/ made before a change, kept under
// bench/results/ so that node_modules still resolves) for before/after comparisons in one run.

import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
export const REPO_DIR = dirname(BENCH_DIR);
export const RESULTS_DIR = join(BENCH_DIR, 'results');
export const DIST_DIR = process.env.GATEHOUSE_BENCH_DIST
  ? resolve(process.env.GATEHOUSE_BENCH_DIST)
  : join(REPO_DIR, 'dist');

/** Imports a module of the built package: `load('src/index.js')`, `load('adapters/sqlite/index.js')`. */
export function load(path) {
  return import(pathToFileURL(join(DIST_DIR, path)).href);
}

/** A fresh scratch folder under bench/results/tmp (git-ignored), removed by the returned function. */
export function scratchDir(name) {
  const dir = join(RESULTS_DIR, 'tmp', `${name}-${process.pid}-${Date.now().toString(36)}`);
  mkdirSync(dir, { recursive: true });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A bare SQLite connection through the driver the store picks on this runtime (node:sqlite, or
 * better-sqlite3 on Node 20), from this checkout's build (dist/), so a baseline measures the same
 * driver as the store whichever build GATEHOUSE_BENCH_DIST names.
 */
export async function openBareSqlite(filename) {
  const { openSqliteDatabase } = await import(
    pathToFileURL(join(REPO_DIR, 'dist/adapters/sqlite/driver.js')).href
  );
  return openSqliteDatabase(filename);
}

/** True when `name` is a table of the SQLite connection `db` (not a view, not absent): schemas differ by build. */
export function isTable(db, name) {
  return db.prepare(`SELECT type FROM sqlite_master WHERE name = ?`).get(name)?.type === 'table';
}

/** The pragmas of the SQLite store (adapters/sqlite/sqliteStore.ts), for baselines on a bare connection. */
export function applyStorePragmas(db) {
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('PRAGMA foreign_keys = ON');
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA wal_autocheckpoint = 10000');
  db.exec('PRAGMA cache_size = -16000');
}
