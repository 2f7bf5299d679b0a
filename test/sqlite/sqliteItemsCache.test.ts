/**
 * The SQLite store keeps the current items of recently read sessions (evaluations read the whole
 * session every time). These tests pin that no write can hide behind it: the store's own writes,
 * another store (another process) on the same file, raw SQL on the store's own connection, and a
 * rolled-back transaction.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../../adapters/sqlite/driver.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-items-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = () => join(dir, `cache-${n++}.db`);

const budget = (value: string, source = 'user_input') => ({
  session_id: 's1',
  key: 'budget.limit',
  value,
  type: 'fact',
  source,
});
const transfer = { session_id: 's1', action: 'payments.transfer', params: { amount: 700 } };

describe('SQLite store: cached session items stay current', () => {
  it("sees another store's writes to the same file (two instances, one database)", async () => {
    const filename = file();
    const a = openSqliteStore({ filename });
    const b = openSqliteStore({ filename });
    const ghA = createGatehouse({ store: a });
    const ghB = createGatehouse({ store: b });
    try {
      await ghA.recordState(budget('1000'));
      expect((await ghA.evaluate(transfer)).verdict).toBe('Allow');
      expect((await ghA.evaluate(transfer)).state_versions).toEqual({ 'budget.limit': 1 });

      await ghB.recordState(budget('500'));
      const decision = await ghA.evaluate(transfer);
      expect(decision.verdict).toBe('Block');
      expect(decision.state_versions).toEqual({ 'budget.limit': 2 });
      expect((await ghA.listItems('s1')).map((i) => i.value)).toEqual(['500']);

      await ghB.recordState(budget('9999', 'tool_output'));
      expect((await ghA.listItems('s1'))[0]).toMatchObject({ value: '500', status: 'conflicted' });
      expect((await ghA.evaluate(transfer)).reasons.map((r) => r.rule)).toContain('required_conflicted');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('sees a write by a plain SQLite connection from elsewhere', async () => {
    const filename = file();
    const store = openSqliteStore({ filename });
    const gh = createGatehouse({ store });
    const other = openSqliteDatabase(filename);
    try {
      await gh.recordState(budget('1000'));
      expect((await gh.listItems('s1'))[0]!.value).toBe('1000');
      other.prepare(`UPDATE state_versions SET value = '42' WHERE session_id = 's1'`).run();
      expect((await gh.listItems('s1'))[0]!.value).toBe('42');
    } finally {
      other.close();
      await store.close();
    }
  });

  it("sees raw SQL run on the store's own connection", async () => {
    const store = openSqliteStore({ filename: file() });
    const gh = createGatehouse({ store });
    try {
      await gh.recordState(budget('1000'));
      await gh.evaluate(transfer);
      expect((await gh.listItems('s1'))[0]!.value).toBe('1000');
      store.database.prepare(`UPDATE state_items SET status = 'conflicted' WHERE session_id = 's1'`).run();
      expect((await gh.listItems('s1'))[0]!.status).toBe('conflicted');
      store.database.prepare(`DELETE FROM state_items WHERE session_id = 's1'`).run();
      expect(await gh.listItems('s1')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('shows nothing of a rolled-back transaction, and its own writes at once', async () => {
    const store = openSqliteStore();
    const gh = createGatehouse({ store });
    try {
      await gh.recordState(budget('1000'));
      expect((await gh.listItems('s1'))[0]!.version).toBe(1);
      await expect(
        store.transaction(async (tx) => {
          const current = (await tx.getItem('default', 's1', 'budget.limit'))!;
          await tx.insertItemVersion('default', { ...current, value: '1', version: 2 });
          expect((await tx.listItems('default', 's1'))[0]!.value).toBe('1');
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect((await gh.listItems('s1'))[0]).toMatchObject({ value: '1000', version: 1 });
      await gh.recordState(budget('2000'));
      expect((await gh.listItems('s1'))[0]).toMatchObject({ value: '2000', version: 2 });
    } finally {
      await store.close();
    }
  });

  it('hands out fresh objects: changing a returned item changes nothing stored', async () => {
    const store = openSqliteStore();
    const gh = createGatehouse({ store });
    try {
      await gh.recordState({ ...budget('1000'), metadata: { note: 'a' } });
      const [first] = await gh.listItems('s1');
      first!.value = 'changed';
      (first!.metadata as Record<string, unknown>)['note'] = 'changed';
      expect((await gh.listItems('s1'))[0]).toMatchObject({ value: '1000', metadata: { note: 'a' } });
    } finally {
      await store.close();
    }
  });

  it('keeps serving correct items for more sessions than it caches', async () => {
    const store = openSqliteStore();
    const gh = createGatehouse({ store });
    try {
      const sessions = 300;
      for (let i = 0; i < sessions; i++) {
        await gh.recordState({ ...budget(String(i)), session_id: `s${i}` });
      }
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < sessions; i++) {
          expect((await gh.listItems(`s${i}`))[0]!.value).toBe(String(i));
        }
      }
    } finally {
      await store.close();
    }
  });
});
