/**
 * The SQLite store keeps each tenant's chain head and webhook list between transactions, so an
 * evaluation's append reads neither. These tests pin that no write hides behind them: another
 * store on the same file, another process, raw SQL on the store's connection, a webhook change,
 * and a rolled-back append. A stale head would chain an event on the wrong hash or collide on its
 * seq; a stale webhook list would miss a delivery.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse, type Gatehouse } from '../../src/index.js';

const root = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-tenant-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = () => join(dir, `tenant-cache-${n++}.db`);
const read = { session_id: 's1', action: 'files.read' };

/**
 * A connection opened past the store's driver, as another process's would be: its writes do not
 * move the count of this process's writes, so only `PRAGMA data_version` can tell of them.
 */
function foreignConnection(filename: string): { exec(sql: string): void; close(): void } {
  const nodeSqlite = process.getBuiltinModule?.('node:sqlite') as
    | { DatabaseSync: new (f: string) => { exec(sql: string): void; close(): void } }
    | undefined;
  if (nodeSqlite) return new nodeSqlite.DatabaseSync(filename);
  const Database = createRequire(import.meta.url)('better-sqlite3') as new (
    f: string,
  ) => { exec(sql: string): void; close(): void };
  return new Database(filename);
}

/** SQL appending a copy of the event at `seq` as the next event, its hash `marker`. */
const copyAsNextEvent = (seq: number, marker: string) =>
  `INSERT INTO events (tenant_id, seq, event_id, type, session_id, decision_id, occurred_at, data, prev_hash, hash)
   SELECT tenant_id, seq + 1, event_id || 'x', type, session_id, NULL, occurred_at, data, hash, '${marker}' FROM events WHERE seq = ${seq}`;

/** A store on a fresh file and a gatehouse over it, for `run`; the store is closed after. */
async function withStore(run: (store: SqliteStore, gh: Gatehouse, filename: string) => Promise<void>) {
  const filename = file();
  const store = openSqliteStore({ filename });
  try {
    await run(store, createGatehouse({ store }), filename);
  } finally {
    await store.close();
  }
}

async function deliveriesOf(gh: Gatehouse, webhookId: string): Promise<number> {
  return (await gh.listDeliveries(webhookId, { limit: 100 })).length;
}

describe('SQLite store: cached chain heads and webhook lists stay exact', () => {
  it("chains on another store's appends to the same file, and queues for its new webhook", async () => {
    const filename = file();
    const a = openSqliteStore({ filename });
    const b = openSqliteStore({ filename });
    const ghA = createGatehouse({ store: a });
    const ghB = createGatehouse({ store: b });
    try {
      for (let i = 0; i < 3; i += 1) {
        await ghA.evaluate(read);
        await ghB.evaluate(read);
        await ghA.evaluate(read);
      }
      const hook = await ghB.createWebhook({
        url: 'https://hooks.example.com/in',
        events: ['gate_evaluation'],
      });
      await ghA.evaluate(read);
      expect(await deliveriesOf(ghA, hook.id)).toBe(1);
      await b.disableWebhook('default', hook.id, new Date().toISOString());
      await ghA.evaluate(read);
      expect(await deliveriesOf(ghA, hook.id)).toBe(1);
      await ghA.enableWebhook(hook.id);
      await ghA.evaluate(read);
      expect(await deliveriesOf(ghA, hook.id)).toBe(2);
      // The store's own webhook write drops its list too.
      await a.disableWebhook('default', hook.id, new Date().toISOString());
      await ghA.evaluate(read);
      expect(await deliveriesOf(ghA, hook.id)).toBe(2);
      expect(await ghA.verifyHistory()).toMatchObject({ ok: true, checked: 13 });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('chains on appends by another process', () =>
    withStore(async (_store, gh, filename) => {
      await gh.evaluate(read);
      await gh.evaluate(read);
      // Another process has its own count of in-process writes: only data_version tells.
      const script = `
        const { openSqliteStore } = await import(${JSON.stringify(join(root, 'dist/adapters/sqlite/index.js'))});
        const { createGatehouse } = await import(${JSON.stringify(join(root, 'dist/src/index.js'))});
        const store = openSqliteStore({ filename: ${JSON.stringify(filename)} });
        const gh = createGatehouse({ store });
        for (let i = 0; i < 3; i++) await gh.evaluate({ session_id: 's2', action: 'files.read' });
        await gh.createWebhook({ url: 'https://hooks.example.com/other', events: ['*'] });
        await store.close();
      `;
      await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000 });
      const decision = await gh.evaluate(read);
      const [event] = (await gh.readHistory({ session_id: 's1', limit: 1 })).events;
      expect(event).toMatchObject({ seq: 6, data: { decision_id: decision.decision_id } });
      const [hook] = await gh.listWebhooks();
      expect(await deliveriesOf(gh, hook!.id)).toBe(1);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 6 });
    }));

  it('reads the head under the write lock: a commit elsewhere just before it is seen', () =>
    withStore(async (store, gh, filename) => {
      const other = foreignConnection(filename);
      try {
        // Enough lone transactions that the group commit flushes in a microtask, in the same turn.
        for (let i = 0; i < 40; i += 1) await gh.evaluate(read);
        await store.listItems('default', 's1'); // data_version read in this turn
        // Committed after that read, in the same turn, before the next BEGIN IMMEDIATE.
        other.exec(copyAsNextEvent(40, 'elsewhere'));
        await gh.evaluate(read);
        const [event] = (await gh.readHistory({ session_id: 's1', limit: 1 })).events;
        expect(event).toMatchObject({ seq: 42, prev_hash: 'elsewhere' });
      } finally {
        other.close();
      }
    }));

  it("chains on an event appended by raw SQL on the store's own connection", () =>
    withStore(async (store, gh) => {
      await gh.evaluate(read);
      await gh.evaluate(read);
      // A copy of the head event at the next seq: the store must read the head again, not reuse seq 3.
      store.database.exec(copyAsNextEvent(2, 'raw'));
      await gh.evaluate(read);
      const [event] = (await gh.readHistory({ session_id: 's1', limit: 1 })).events;
      expect(event).toMatchObject({ seq: 4, prev_hash: 'raw' });
    }));

  it('reads the head again after an append was rolled back', () =>
    withStore(async (store, gh) => {
      await gh.evaluate(read);
      const failed = store.transaction(async (tx) => {
        const head = await tx.lockChainHead('default');
        await tx.appendEvent('default', {
          event_id: 'evt_rolled_back',
          seq: head!.seq + 1,
          type: 'gate_evaluation',
          session_id: 's1',
          occurred_at: new Date().toISOString(),
          data: {},
          prev_hash: head!.hash,
          hash: 'f'.repeat(64),
          decision_id: null,
        });
        throw new Error('undone');
      });
      await expect(failed).rejects.toThrow('undone');
      await gh.evaluate(read);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 2 });
    }));
});
