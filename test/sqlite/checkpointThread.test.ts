/**
 * The SQLite store's background checkpoints: after CHECKPOINT_THREAD_AFTER_COMMITS commits a
 * worker thread copies the WAL into the database file, so the committing call no longer does.
 * Each test turns the connection's own autocheckpoint off (`walAutocheckpointPages: 0`), so the
 * database file can only grow through the thread.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CHECKPOINT_THREAD_AFTER_COMMITS,
  openSqliteStore,
  type SqliteStoreOptions,
} from '../../adapters/sqlite/sqliteStore.js';
import { createGatehouse } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = join(import.meta.dirname, '../..');

let n = 0;
/** A store on a fresh file, and `count` evaluations committed one at a time. */
async function storeWithCommits(count: number, options: SqliteStoreOptions = {}) {
  const filename = join(dir, `ckpt-${n++}.db`);
  const store = openSqliteStore({ filename, walAutocheckpointPages: 0, ...options });
  const gatehouse = createGatehouse({ store });
  const before = statSync(filename).size;
  for (let i = 0; i < count; i++)
    await gatehouse.evaluate({ session_id: 's', action: 'files.read', params: { i } });
  return { filename, store, gatehouse, before };
}

/** Polls until `check` holds (the thread works a few ms after commits); false after `ms`. */
async function eventually(check: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}

describe('SQLite background checkpoints', () => {
  it('copies the WAL into the database file once the store has committed enough, and every event stays readable', async () => {
    const { filename, store, before } = await storeWithCommits(CHECKPOINT_THREAD_AFTER_COMMITS + 50);
    expect(await eventually(() => statSync(filename).size > before)).toBe(true);
    const events = await store.queryEvents('default', { type: 'gate_evaluation', order: 'asc', limit: 1000 });
    expect(events).toHaveLength(CHECKPOINT_THREAD_AFTER_COMMITS + 50);
    await store.close();
    // Reopened from the file alone: the chain the thread copied verifies.
    const reopened = openSqliteStore({ filename });
    expect((await createGatehouse({ store: reopened }).verifyHistory()).ok).toBe(true);
    await reopened.close();
  });

  it('starts no thread before that many commits, nor ever with walCheckpoints: commit', async () => {
    const few = await storeWithCommits(CHECKPOINT_THREAD_AFTER_COMMITS - 10);
    const inline = await storeWithCommits(CHECKPOINT_THREAD_AFTER_COMMITS + 50, { walCheckpoints: 'commit' });
    // Ten times the thread's gathering interval: it would have copied by now.
    await new Promise((r) => setTimeout(r, 100));
    expect(statSync(few.filename).size).toBe(few.before);
    expect(statSync(inline.filename).size).toBe(inline.before);
    await few.store.close();
    await inline.store.close();
  });

  it('stops the thread on close, so the store is the last connection and removes its WAL; close twice is safe', async () => {
    const { filename, store } = await storeWithCommits(CHECKPOINT_THREAD_AFTER_COMMITS + 5);
    expect(existsSync(`${filename}-wal`)).toBe(true);
    await store.close();
    await store.close();
    expect(existsSync(`${filename}-wal`)).toBe(false);
  });

  it('reports a failed thread to onError and keeps committing without it', async () => {
    const errors: Error[] = [];
    const sub = join(dir, 'gone');
    const filename = join(sub, 'store.db');
    const store = openSqliteStore({ filename, walAutocheckpointPages: 0, onError: (e) => errors.push(e) });
    const gatehouse = createGatehouse({ store });
    // The folder goes: the open connection keeps its files, the thread's new one cannot open it.
    rmSync(sub, { recursive: true });
    for (let i = 0; i < CHECKPOINT_THREAD_AFTER_COMMITS + 5; i++) {
      await gatehouse.evaluate({ session_id: 's', action: 'files.read' });
    }
    expect(await eventually(() => errors.length > 0)).toBe(true);
    expect(errors[0]!.message).toMatch(/open database/i);
    await gatehouse.evaluate({ session_id: 's', action: 'files.read' });
    const events = await store.queryEvents('default', { type: 'gate_evaluation', order: 'asc', limit: 1000 });
    expect(events).toHaveLength(CHECKPOINT_THREAD_AFTER_COMMITS + 6);
    await store.close();
  });

  it('does not keep a process alive when its store is never closed, and a close waits for the thread', async () => {
    // The built store (npm test builds first), in a process of its own: one store is closed at the
    // end (nothing else left to wait on: the close must hold the process until the thread is gone),
    // the other never is (the process must still end).
    const script = `
      const { openSqliteStore } = await import(${JSON.stringify(join(root, 'dist/adapters/sqlite/index.js'))});
      const { createGatehouse } = await import(${JSON.stringify(join(root, 'dist/src/index.js'))});
      const closed = openSqliteStore({ filename: ${JSON.stringify(join(dir, 'closed.db'))} });
      const unclosed = openSqliteStore({ filename: ${JSON.stringify(join(dir, 'unclosed.db'))} });
      for (const store of [closed, unclosed]) {
        const gatehouse = createGatehouse({ store });
        for (let i = 0; i < ${CHECKPOINT_THREAD_AFTER_COMMITS + 20}; i++) await gatehouse.evaluate({ session_id: 's', action: 'files.read' });
      }
      await closed.close();
      console.log('closed');
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 20_000,
    });
    expect(stdout.trim()).toBe('closed');
    expect(existsSync(join(dir, 'closed.db-wal'))).toBe(false);
  });
});
