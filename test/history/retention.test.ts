/**
 * Retention from the policy's `retention:` block, on real stores (SQLite files always,
 * PostgreSQL when configured): `values_after` erases the values of older events in batches, each
 * batch an `erasure.completed` (reason `retention`) that verify accepts and reports; `history_after`
 * prunes older events behind a signed checkpoint; a period below the 183-day floor is refused
 * unless lowered explicitly. `values_after` also clears current state items last written before
 * the cut-off (their value lives in the state tables too), but not those of held sessions.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  compilePolicy,
  createGatehouse,
  generateCheckpointKeyPair,
  loadCheckpointSigner,
} from '../../src/index.js';
import { STORE_TARGETS } from './storeTargets.js';

afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const key = generateCheckpointKeyPair();

const policy = (retention: string) => compilePolicy(`version: 1\nretention:\n${retention}`);

describe('the retention block of a policy', () => {
  it('refuses history_after below the 183-day floor unless allow_below_floor', () => {
    expect(() => policy('  history_after: 90d\n')).toThrow(/below the floor of 183 days/);
    expect(policy('  history_after: 90d\n  allow_below_floor: true\n').retention).toEqual({
      history_after: 90,
      allow_below_floor: true,
    });
    expect(policy('  values_after: 30d\n  history_after: 365d\n').retention).toEqual({
      values_after: 30,
      history_after: 365,
      allow_below_floor: false,
    });
    expect(compilePolicy('version: 1\n').retention).toBeUndefined();
  });
});

describe.each(STORE_TARGETS)('retention runs on $name', (target) => {
  it('erases values older than values_after and prunes history older than history_after', async () => {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      policy: policy('  values_after: 30d\n  history_after: 200d\n'),
      checkpointSigner: loadCheckpointSigner(key.privateKey),
    });
    try {
      // 700 events on day 0, 300 on day 100.
      for (let i = 0; i < 1000; i += 1) {
        clock.now = T0 + (i < 700 ? 0 : 100 * DAY) + i * 1000;
        await gh.recordState({
          session_id: `s${i % 7}`,
          key: 'agent.note',
          value: `v${i}`,
          type: 'fact',
          source: 'user_input',
        });
      }
      clock.now = T0 + 110 * DAY;
      const first = await gh.runRetention();
      // Day 0 is older than 30 days: 700 events' values (value and metadata), in two batches (500 + 200).
      expect(first).toMatchObject({ erased: { events: 700, fields: 1400 }, pruned: null, problem: null });
      expect(first.erased.erasures).toEqual([1001, 1002]);
      const verified = await gh.verifyHistory();
      expect(verified).toMatchObject({ ok: true, erased_fields: 1400, verified_fields: 600 });
      expect(verified.erased).toContainEqual({ seq: 1, path: '/value' });
      const event = (await gh.readHistory({ type: 'erasure.completed', limit: 1 })).events[0]!;
      expect(event.data).toMatchObject({ reason: 'retention', events: 200, requested_by: 'retention' });
      expect(
        (await gh.readHistory({ session_id: 's0', limit: 1, order: 'asc' })).events[0]!.data['value'],
      ).toEqual({
        erased: true,
        by: 1001,
      });
      // Nothing new to erase; history is not yet older than 200 days.
      expect((await gh.runRetention()).erased.events).toBe(0);

      clock.now = T0 + 250 * DAY;
      const second = await gh.runRetention();
      // Day 100 values now go too; day 0 history (1..700) is pruned, and with it the first erasure events' subjects.
      expect(second.erased.events).toBe(300);
      expect(second.pruned).toMatchObject({ from_seq: 1, through_seq: 700, events: 700 });
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, pruned_through: 700, erased_fields: 600 });
    } finally {
      await store.close();
    }
  }, 120_000);

  it('values_after clears state items last written before the cut-off, but held ones, and names them without content', async () => {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      policy: policy('  values_after: 30d\n'),
    });
    const write = (session_id: string, key: string, value: string) =>
      gh.recordState({ session_id, key, value, type: 'fact', source: 'user_input' });
    try {
      // Day 0: old items in 600 sessions (two batches), one in a held session.
      for (let i = 0; i < 600; i += 1)
        await write(`old-${String(i).padStart(3, '0')}`, 'customer.name', `Old Name ${i}`);
      await write('held', 'customer.name', 'Held Name');
      await write('mixed', 'customer.name', 'Mixed Old');
      await gh.placeHold({ session_id: 'held', reference: 'CASE-1' });
      // Day 100: a newer write of one item, and a new item beside an old one.
      clock.now = T0 + 100 * DAY;
      await write('old-000', 'customer.name', 'Rewritten Name');
      await write('mixed', 'customer.email', 'new@example.com');

      clock.now = T0 + 110 * DAY;
      const run = await gh.runRetention();
      // 599 old items (old-000 was rewritten on day 100) and mixed's old one.
      expect(run.erased_items.items).toBe(600);
      expect(run.erased_items.erasures).toHaveLength(2);
      expect(run.problem).toBeNull();
      const item = await gh.getItem('old-001', 'customer.name');
      expect(item).toMatchObject({ status: 'erased', value: '' });
      expect(await gh.getItem('old-000', 'customer.name')).toMatchObject({ value: 'Rewritten Name' });
      expect(await gh.getItem('held', 'customer.name')).toMatchObject({ value: 'Held Name' });
      expect(await gh.getItem('mixed', 'customer.email')).toMatchObject({ value: 'new@example.com' });
      expect(await gh.getItem('mixed', 'customer.name')).toMatchObject({ status: 'erased' });
      // No version of a cleared item keeps its value; the rewritten item's old versions stay
      // until they age with it (its last write is younger).
      const [left] = await target.query(
        store,
        "SELECT count(*) AS n FROM state_versions WHERE value LIKE '%Old Name%' OR value LIKE '%Mixed Old%'",
      );
      expect(Number(left!['n'])).toBe(1);

      const events = (await gh.readHistory({ type: 'erasure.completed', order: 'asc' })).events;
      const itemEvents = events.filter((e) => Array.isArray(e.data['state_items']));
      expect(itemEvents.map((e) => e.seq)).toEqual(run.erased_items.erasures);
      expect(itemEvents[0]!.data).toMatchObject({
        reason: 'retention',
        requested_by: 'retention',
        events: 0,
      });
      expect(itemEvents[0]!.data['state_items']).toContainEqual({
        session_id: 'old-001',
        key: 'customer.name',
      });
      expect(JSON.stringify(itemEvents.map((e) => e.data))).not.toMatch(/Old Name|Mixed Old|Held Name/);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true });
      // Nothing more to clear; the hold released, the held item goes on the next run.
      expect((await gh.runRetention()).erased_items.items).toBe(0);
      const [hold] = (await gh.listHolds()).holds;
      await gh.releaseHold(hold!.hold_id);
      expect((await gh.runRetention()).erased_items.items).toBe(1);
      expect(await gh.getItem('held', 'customer.name')).toMatchObject({ status: 'erased' });
    } finally {
      await store.close();
    }
  }, 120_000);

  it('PUT retention takes the place of the policy and runs the same way', async () => {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({ store, clock: () => new Date(clock.now) });
    try {
      for (let i = 0; i < 10; i += 1) {
        await gh.recordState({
          session_id: 's',
          key: 'agent.note',
          value: `v${i}`,
          type: 'fact',
          source: 'user_input',
        });
      }
      clock.now = T0 + 40 * DAY;
      expect((await gh.runRetention()).erased.events).toBe(0);
      await expect(gh.putRetention({ history_after: '100d' })).rejects.toMatchObject({
        code: 'invalid_request',
      });
      expect(await gh.putRetention({ values_after: '30d' })).toMatchObject({
        source: 'api',
        values_after_days: 30,
      });
      expect((await gh.runRetention()).erased).toMatchObject({ events: 10, fields: 20 });
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, erased_fields: 20 });
    } finally {
      await store.close();
    }
  }, 60_000);
});
