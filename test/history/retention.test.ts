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

  it('values_after erases the values of older conflicts and approvals: open ones resolved, pending denied, approved expired', async () => {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      policy: compilePolicy(`version: 1
retention:
  values_after: 1d
actions:
  "refunds.*":
    rules:
      - name: refund_review
        when: "true"
        verdict: Block
        message: "Refund for {params.to} needs a second look"
        approval: { expires_in: 7d, allow_self_approval: true }
`),
    });
    const write = (session_id: string, value: string, source: 'user_input' | 'tool_output') =>
      gh.recordState({ session_id, key: 'budget.limit', value, type: 'fact', source });
    const refund = async (session_id: string, to: string) =>
      (await gh.evaluate({ session_id, action: 'refunds.issue', params: { to } })).approval!.id;
    try {
      // Day 0: an open conflict and three approvals (pending, approved, denied) in 'old', the same in a held session.
      await write('old', '5000', 'user_input');
      const oldConflict = (await write('old', 'Old Secret 6000', 'tool_output')).conflict!.conflict_id;
      const pending = await refund('old', 'Old Pending');
      const approved = await refund('old', 'Old Approved');
      await gh.approve(approved, { comment: 'ok' });
      const denied = await refund('old', 'Old Denied');
      await gh.deny(denied, { comment: 'no' });
      await write('held', '5000', 'user_input');
      const heldConflict = (await write('held', 'Held Secret', 'tool_output')).conflict!.conflict_id;
      const heldApproval = await refund('held', 'Held Refundee');
      await gh.placeHold({ session_id: 'held', reference: 'CASE-9' });
      // Day 1.5: younger than the cut-off.
      clock.now = T0 + 1.5 * DAY;
      await write('new', '5000', 'user_input');
      const newConflict = (await write('new', 'New Secret', 'tool_output')).conflict!.conflict_id;
      const newApproval = await refund('new', 'New Refundee');
      // Erased by a session erasure: retention has nothing left of it to erase.
      await write('new-erased', '5000', 'user_input');
      const erasedConflict = (await write('new-erased', 'Erased Secret', 'tool_output')).conflict!
        .conflict_id;
      await refund('new-erased', 'Erased Refundee');
      const sessionErasure = (await gh.eraseSession({ session_id: 'new-erased' })).erasure!.seq;
      const sessionMarker = { erased: true, by: sessionErasure };
      expect(await gh.getConflict(erasedConflict)).toMatchObject({
        status: 'resolved',
        resolution: 'erased',
        current: { value: sessionMarker },
        proposed: { value: sessionMarker },
      });

      clock.now = T0 + 2 * DAY;
      const run = await gh.runRetention();
      expect(run.erased_records).toMatchObject({ conflicts: 1, approvals: 3 });
      expect(run.erased_records.erasures).toHaveLength(1);
      const by = run.erased_records.erasures[0]!;
      const marker = { erased: true, by };
      expect(await gh.getConflict(oldConflict)).toMatchObject({
        status: 'resolved',
        resolution: 'erased',
        current: { value: marker },
        proposed: { value: marker },
      });
      expect(await gh.getApproval(pending)).toMatchObject({
        status: 'denied',
        params: marker,
        reason: marker,
      });
      expect(await gh.getApproval(approved)).toMatchObject({ status: 'expired', params: marker });
      expect(await gh.getApproval(denied)).toMatchObject({ status: 'denied', params: marker, comment: null });
      expect(await gh.getConflict(heldConflict)).toMatchObject({
        status: 'open',
        proposed: { value: 'Held Secret' },
      });
      expect(await gh.getConflict(newConflict)).toMatchObject({
        status: 'open',
        proposed: { value: 'New Secret' },
      });
      expect(await gh.getApproval(heldApproval)).toMatchObject({
        status: 'pending',
        params: { to: 'Held Refundee' },
      });
      expect(await gh.getApproval(newApproval)).toMatchObject({
        status: 'pending',
        params: { to: 'New Refundee' },
      });

      // What went is named, with no content; the pending one's denial and the approved one's expiry are recorded.
      const [erasure] = (await gh.readHistory({ type: 'erasure.completed', limit: 1 })).events;
      expect(erasure).toMatchObject({
        seq: by,
        data: { reason: 'retention', conflicts: [oldConflict], approvals: [pending, approved, denied] },
      });
      const [denial] = (await gh.readHistory({ type: 'approval.denied', limit: 1 })).events;
      expect(denial!.data).toMatchObject({
        approval_id: pending,
        reason_code: 'retention',
        decided_by: 'retention',
      });
      const [expiry] = (await gh.readHistory({ type: 'approval.expired', limit: 1 })).events;
      expect(expiry!.data).toMatchObject({ approval_id: approved, previous_status: 'approved' });
      // Not a byte of the old values is left in either table; the held and the young ones are.
      const rows = await target.query(
        store,
        "SELECT body AS text FROM conflicts UNION ALL SELECT body || coalesce(comment, '') || digest FROM approvals",
      );
      const tables = rows.map((r) => String(r['text'])).join('\n');
      expect(tables).not.toMatch(/Old Secret|Old Pending|Old Approved|Old Denied|"ok"|"no"/);
      expect(tables).toMatch(/Held Secret/);
      expect(tables).toMatch(/New Refundee/);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true });

      // Nothing more; the young ones go once they are old enough.
      expect((await gh.runRetention()).erased_records.erasures).toEqual([]);
      clock.now = T0 + 3 * DAY;
      expect((await gh.runRetention()).erased_records).toMatchObject({ conflicts: 1, approvals: 1 });
      expect(await gh.getApproval(newApproval)).toMatchObject({ status: 'denied' });
    } finally {
      await store.close();
    }
  }, 60_000);

  it('the migration that lets retention skip erased conflicts marks those an earlier session erasure erased', async () => {
    const place = target.place();
    let store = await target.open(place);
    const clock = { now: T0 };
    const open = (s: typeof store) =>
      createGatehouse({ store: s, clock: () => new Date(clock.now), policy: policy('  values_after: 1d\n') });
    let gh = open(store);
    const conflictIn = async (session_id: string, proposed: string) => {
      clock.now += 1000;
      await gh.recordState({ session_id, key: 'k.v', value: 'user', type: 'fact', source: 'user_input' });
      const r = await gh.recordState({
        session_id,
        key: 'k.v',
        value: proposed,
        type: 'fact',
        source: 'tool_output',
      });
      return r.conflict!.conflict_id;
    };
    try {
      const before = await conflictIn('gone', 'Before Erasure');
      clock.now += 1000;
      const erasure = await gh.eraseSession({ session_id: 'gone' });
      const after = await conflictIn('gone', 'After Erasure');
      const never = await conflictIn('kept', 'Never Erased');
      // As the previous version left it: no column, the migration not applied.
      for (const sql of [
        'DROP INDEX conflicts_values_kept',
        'DROP INDEX approvals_params_kept',
        'ALTER TABLE conflicts DROP COLUMN values_erased_by',
      ]) {
        await target.exec(store, sql);
      }
      await target.exec(
        store,
        `DELETE FROM schema_migrations WHERE version = ${target.conflictErasureMigration}`,
      );
      await store.close();
      store = await target.open(place);
      gh = open(store);
      const rows = await target.query(store, 'SELECT conflict_id, values_erased_by FROM conflicts');
      const marks = Object.fromEntries(rows.map((r) => [r['conflict_id'], r['values_erased_by']]));
      expect(Number(marks[before])).toBe(erasure.erasure!.seq);
      expect(marks[after]).toBeNull();
      expect(marks[never]).toBeNull();
      clock.now = T0 + 2 * DAY;
      const run = await gh.runRetention();
      expect(run.erased_records.conflicts).toBe(2);
      const [event] = (await gh.readHistory({ type: 'erasure.completed', limit: 1 })).events;
      expect(event!.data['conflicts']).toEqual([after, never]);
      // The session erasure's marker is kept as it was.
      expect(await gh.getConflict(before)).toMatchObject({
        proposed: { value: { erased: true, by: erasure.erasure!.seq } },
      });
    } finally {
      await store.close();
    }
  }, 60_000);

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
