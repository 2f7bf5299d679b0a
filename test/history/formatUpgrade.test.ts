/**
 * A database written before history format 2 (the fixture: a dump written by the main branch's
 * build, format 1) upgrades when opened: its chain is verified, every event re-encoded with
 * commitments, a `history.upgraded` event names the old head, and every reader shows what it
 * showed before.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createGatehouse, type DumpRecord, type HistoryEvent, type Store } from '../../src/index.js';
import { STORE_TARGETS } from './storeTargets.js';

interface Fixture {
  rows: DumpRecord[];
  history: Record<string, HistoryEvent[]>;
}
const fixture = JSON.parse(
  readFileSync(new URL('./fixtures/format1-history.json', import.meta.url), 'utf8'),
) as Fixture;

async function* records(rows: readonly DumpRecord[]) {
  yield* rows;
}

afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

describe.each(STORE_TARGETS)('history format upgrade on $name', (target) => {
  /** A store as the previous version left it: schema before the format migration, format 1 rows. */
  async function formatOneStore(): Promise<string> {
    const place = target.place();
    const store = await target.open(place);
    await target.exec(store, 'DROP TABLE event_values');
    await target.exec(store, 'DROP TABLE session_subjects');
    await target.exec(store, `DELETE FROM schema_migrations WHERE version = ${target.formatMigration}`);
    await store.loadRows(records(fixture.rows));
    await store.close();
    return place;
  }

  it('verifies, re-encodes, appends history.upgraded naming the old head, and reads as before', async () => {
    const place = await formatOneStore();
    const store: Store = await target.open(place);
    try {
      const gh = createGatehouse({ store });
      for (const tenantId of ['default', 't2']) {
        const before = fixture.history[tenantId]!;
        const oldHead = before.at(-1)!;
        const verified = await gh.verifyHistory({ tenantId });
        expect(verified).toMatchObject({ ok: true, checked: before.length + 1, erased_fields: 0 });
        expect(verified.verified_fields).toBeGreaterThan(0);
        const after = (await gh.readHistory({ order: 'asc', limit: 500 }, { tenantId })).events;
        expect(after).toHaveLength(before.length + 1);
        const strip = (e: HistoryEvent) => ({ ...e, hash: undefined, prev_hash: undefined });
        expect(after.slice(0, -1).map(strip)).toEqual(before.map(strip));
        expect(after.at(-1)).toMatchObject({
          type: 'history.upgraded',
          seq: before.length + 1,
          data: { format: 2, previous_format: 1, previous_head: { seq: oldHead.seq, hash: oldHead.hash } },
        });
      }
      // Nothing a caller wrote is left in the chain itself.
      const raw = JSON.stringify(await target.query(store, 'SELECT data FROM events'));
      expect(raw).not.toContain('Alice Meyer');
      expect(raw).not.toContain('bob@example.com');
      expect(raw).toContain('commitments');
      // The chain is append-only again after the upgrade.
      await expect(target.exec(store, `UPDATE events SET data = '{}'`)).rejects.toThrow(/append-only/);
    } finally {
      await store.close();
    }
    // Opened again: nothing more to upgrade.
    const again = await target.open(place);
    try {
      const events = (await createGatehouse({ store: again }).readHistory({ type: 'history.upgraded' }))
        .events;
      expect(events).toHaveLength(1);
    } finally {
      await again.close();
    }
  });

  it('an export of the previous version imports into a new database and is upgraded on load', async () => {
    const store = await target.open(target.place());
    try {
      await store.loadRows(records(fixture.rows));
      const gh = createGatehouse({ store });
      for (const tenantId of ['default', 't2']) {
        const before = fixture.history[tenantId]!;
        expect(await gh.verifyHistory({ tenantId })).toMatchObject({ ok: true, checked: before.length + 1 });
        const after = (await gh.readHistory({ order: 'asc', limit: 500 }, { tenantId })).events;
        expect(after.at(-1)).toMatchObject({
          type: 'history.upgraded',
          data: { previous_head: { hash: before.at(-1)!.hash } },
        });
      }
      // Loaded again from its own export (format 2 now), it is not upgraded twice.
      const rows: DumpRecord[] = [];
      for await (const r of store.dumpRows()) rows.push(r);
      const copy = await target.open(target.place());
      try {
        await copy.loadRows(records(rows));
        const copied = createGatehouse({ store: copy });
        expect((await copied.readHistory({ type: 'history.upgraded' })).events).toHaveLength(1);
        expect((await copied.verifyHistory()).ok).toBe(true);
      } finally {
        await copy.close();
      }
    } finally {
      await store.close();
    }
  });

  it('refuses to upgrade a format 1 chain that does not verify, and changes nothing', async () => {
    const rows = fixture.rows.map((r) =>
      r.table === 'events' && r.row['seq'] === 3 && r.row['tenant_id'] === 'default'
        ? { ...r, row: { ...r.row, data: String(r.row['data']).replace('keep_current', 'accept_proposed') } }
        : r,
    );
    const place = target.place();
    const store = await target.open(place);
    await target.exec(store, 'DROP TABLE event_values');
    await target.exec(store, 'DROP TABLE session_subjects');
    await target.exec(store, `DELETE FROM schema_migrations WHERE version = ${target.formatMigration}`);
    await store.loadRows(records(rows));
    await store.close();
    await expect(target.open(place)).rejects.toThrow(/does not verify at seq 3/);
  });
});
