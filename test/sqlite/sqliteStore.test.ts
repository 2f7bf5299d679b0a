import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expiredApprovals, expiredConflicts } from '../../adapters/sql/pruneStatements.js';
import { queryEvents } from '../../adapters/sql/statements.js';
import { sqliteDialect } from '../../adapters/sqlite/dialect.js';
import { openSqliteDatabase } from '../../adapters/sqlite/driver.js';
import { openSqliteStore, SQLITE_MIGRATIONS, type SqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, type Store } from '../../src/index.js';
import { runStoreContract } from '../store/contract.js';
import { APPROVAL_POLICY } from '../support/policies.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
const exec = async (store: Store, sql: string) => {
  (store as SqliteStore).database.exec(sql);
};

runStoreContract({
  name: 'SQLite file',
  open: async () => openSqliteStore({ filename: join(dir, `contract-${n++}.db`) }),
  exec,
});

runStoreContract({ name: 'SQLite :memory:', open: async () => openSqliteStore(), exec });

describe('SQLite store specifics', () => {
  it('commits the transactions of one event-loop turn in one COMMIT, visible to another connection once settled', async () => {
    const filename = join(dir, 'group.db');
    const store = openSqliteStore({ filename });
    const gh = createGatehouse({ store });
    const commit = store.database.commit.bind(store.database);
    let commits = 0;
    (store.database as { commit: () => void }).commit = () => {
      commits += 1;
      commit();
    };
    const decisions = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        gh.evaluate({ session_id: 's', action: 'files.read', params: { i } }),
      ),
    );
    expect(commits).toBe(1);
    // A caller alone at a time stops the wait for the turn's end; concurrency brings it back.
    for (let i = 0; i < 40; i++) await gh.evaluate({ session_id: 's', action: 'files.read' });
    commits = 0;
    decisions.push(
      ...(await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          gh.evaluate({ session_id: 's', action: 'files.read', params: { i } }),
        ),
      )),
    );
    expect(commits).toBeLessThanOrEqual(3);
    const other = openSqliteDatabase(filename, { readOnly: true });
    const row = other.prepare(`SELECT count(*) AS n FROM events WHERE type = 'gate_evaluation'`).get();
    expect({ ...row }).toEqual({ n: decisions.length + 40 });
    other.close();
    expect((await gh.verifyHistory()).ok).toBe(true);
    await store.close();
  });

  it('a database another connection keeps locked is unavailable (retry), not an internal error', async () => {
    const filename = join(dir, 'locked.db');
    const store = openSqliteStore({ filename });
    store.database.exec('PRAGMA busy_timeout = 50');
    const gh = createGatehouse({ store });
    const other = openSqliteDatabase(filename);
    const item = { session_id: 's1', key: 'budget.limit', value: '5', type: 'fact', source: 'user_input' };
    try {
      other.exec('BEGIN EXCLUSIVE');
      const error = await gh.recordState(item).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'unavailable',
        message:
          'The SQLite database is locked by another connection (it stayed locked past the busy timeout); retry.',
      });
      other.exec('ROLLBACK');
      expect((await gh.recordState(item)).outcome).toBe('created');
    } finally {
      other.close();
      await store.close();
    }
  });

  it('persists across reopen and migrates once', async () => {
    const filename = join(dir, 'reopen.db');
    const a = openSqliteStore({ filename });
    const gh = createGatehouse({ store: a });
    await gh.recordState({ session_id: 's', key: 'a.b', value: '1', type: 'fact', source: 'user_input' });
    await a.close();
    await a.close();
    const b = openSqliteStore({ filename });
    const gh2 = createGatehouse({ store: b });
    expect((await gh2.getItem('s', 'a.b')).value).toBe('1');
    expect((await gh2.verifyHistory()).ok).toBe(true);
    await b.close();
    const db = openSqliteDatabase(filename, { readOnly: true });
    expect({ ...db.prepare('SELECT count(*) AS n FROM schema_migrations').get() }).toEqual({
      n: SQLITE_MIGRATIONS.length,
    });
    expect(db.prepare('PRAGMA journal_mode').get()?.['journal_mode']).toBe('wal');
    db.close();
  });

  it("migration 8 lists an older approval's one requester, its requested_by", async () => {
    const filename = join(dir, 'requesters.db');
    const store = openSqliteStore({ filename });
    const gh = createGatehouse({ store, policy: compilePolicy(APPROVAL_POLICY) });
    await gh.recordState({
      session_id: 's',
      key: 'budget.limit',
      value: '10',
      type: 'fact',
      source: 'user_input',
    });
    const params = (amount: number) => ({ session_id: 's', action: 'payments.transfer', params: { amount } });
    const byKey = (await gh.evaluate(params(50), { keyId: 'key_old' })).approval!.id;
    const inProcess = (await gh.evaluate(params(60))).approval!.id;
    await store.close();
    // The database as it was before migration 8.
    const db = openSqliteDatabase(filename);
    db.exec('ALTER TABLE approvals DROP COLUMN requesters; DELETE FROM schema_migrations WHERE version = 8;');
    db.close();
    const reopened = openSqliteStore({ filename });
    expect((await reopened.getApproval('default', byKey))?.requesters).toEqual(['key_old']);
    expect((await reopened.getApproval('default', inProcess))?.requesters).toEqual(['in-process']);
    await reopened.close();
    const raw = openSqliteDatabase(filename, { readOnly: true });
    expect(
      raw
        .prepare('SELECT requesters FROM approvals ORDER BY approval_id')
        .all()
        .map((r) => r['requesters']),
    ).toEqual(['["key_old"]', '["in-process"]']);
    raw.close();
  });

  it('detects a tampered row', async () => {
    const filename = join(dir, 'tamper.db');
    const store = openSqliteStore({ filename });
    const gh = createGatehouse({ store });
    for (let i = 0; i < 3; i++) {
      await gh.recordState({
        session_id: 's',
        key: `a.k${i}`,
        value: '1',
        type: 'fact',
        source: 'user_input',
      });
    }
    await store.close();
    const db = openSqliteDatabase(filename);
    db.exec('DROP TRIGGER events_no_update');
    db.prepare(`UPDATE events SET data = json_set(data, '$.value', '2') WHERE seq = 2`).run();
    db.close();
    const reopened = openSqliteStore({ filename });
    const result = await createGatehouse({ store: reopened }).verifyHistory();
    expect(result).toMatchObject({ ok: false, checked: 1, first_bad_seq: 2 });
    expect(result.problem).toContain('altered');
    await reopened.close();
  });

  it('answers every history query shape from an index, never a scan of the log', () => {
    const store = openSqliteStore();
    const shapes = [
      {},
      { type: 'gate_evaluation' as const },
      { type: 'state_change' as const },
      { session_id: 's' },
      { session_id: 's', type: 'gate_evaluation' as const },
      { session_id: 's', type: 'state_change' as const },
      { decision_id: 'dec_x' },
      { decision_id: 'dec_x', type: 'action_outcome' as const, after_seq: 3 },
    ];
    for (const shape of shapes) {
      for (const order of ['asc', 'desc'] as const) {
        const q = queryEvents(sqliteDialect, 't', { ...shape, order, limit: 50 });
        const plan = store.database
          .prepare(`EXPLAIN QUERY PLAN ${q.sql}`)
          .all(...(q.args as never[]))
          .map((r) => String(r['detail']));
        // A SEARCH on an index by the tenant (and more): reads grow with the page asked for, not the
        // log; each event's values are found by their primary key.
        expect(plan, `${JSON.stringify(shape)} ${order}`).toEqual([
          expect.stringMatching(/^SEARCH e USING /),
          expect.stringMatching(/^SEARCH v USING PRIMARY KEY \(tenant_id=\? AND seq=\?\) LEFT-JOIN/),
        ]);
      }
    }
    void store.close();
  });

  it("finds retention's conflicts and approvals through their partial indexes, oldest first, without a sort", () => {
    const store = openSqliteStore();
    for (const [sql, index] of [
      [expiredConflicts, 'conflicts_values_kept'],
      [expiredApprovals, 'approvals_params_kept'],
    ] as const) {
      const plan = store.database
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all('t', '2026-01-01T00:00:00.000Z', 't', 500)
        .map((r) => String(r['detail']));
      expect(plan[0]).toMatch(
        new RegExp(`^SEARCH \\w+ USING INDEX ${index} \\(tenant_id=\\? AND created_at<\\?\\)$`),
      );
      expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
    }
    void store.close();
  });
});
