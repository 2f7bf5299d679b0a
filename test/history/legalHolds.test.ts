/**
 * Legal holds on real stores (SQLite files always, PostgreSQL when configured): a hold on a
 * session or the tenant refuses erasure and pruning of what it covers; an explicit override goes
 * through and is recorded as `legal_hold.overridden`; retention skips held sessions and stops at
 * a tenant hold; placing and releasing are events; the chain still verifies.
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

describe.each(STORE_TARGETS)('legal holds on $name', (target) => {
  it('refuse erasure and pruning of what they cover; an override is recorded; retention respects them', async () => {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      policy: compilePolicy('version: 1\nretention:\n  values_after: 30d\n  history_after: 200d\n'),
      checkpointSigner: loadCheckpointSigner(key.privateKey),
    });
    const write = (session_id: string, value: string) =>
      gh.recordState({ session_id, key: 'agent.note', value, type: 'fact', source: 'user_input' });
    try {
      for (let i = 0; i < 20; i += 1) await write(i < 10 ? 'held' : 'free', `v${i}`);
      const hold = await gh.placeHold({ session_id: 'held', reference: 'CASE-2026-7' });
      expect(hold).toMatchObject({ session_id: 'held', reference: 'CASE-2026-7', placed_by: 'in-process' });
      expect((await gh.listHolds()).holds).toEqual([hold]);

      await expect(gh.eraseSession({ session_id: 'held' })).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringMatching(
          /Legal hold hld_.* \(CASE-2026-7\) covers this erasure of session held: refused/,
        ),
      });
      // Nothing was erased.
      expect(
        (await gh.readHistory({ session_id: 'held', type: 'state_change', limit: 1 })).events[0]!.data[
          'value'
        ],
      ).toBe('v9');
      // A dry run says the hold will refuse it; another session is not covered.
      expect((await gh.eraseSession({ session_id: 'held', dry_run: true })).legal_holds).toEqual([
        { hold_id: hold.hold_id, reference: 'CASE-2026-7', session_id: 'held' },
      ]);
      const free = await gh.eraseSession({ session_id: 'free', dry_run: true });
      expect(free.fields).toBeGreaterThan(0);
      expect(free.legal_holds).toEqual([]);

      clock.now = T0 + 250 * DAY;
      await expect(gh.pruneHistory({ through_seq: 15 })).rejects.toMatchObject({
        message: expect.stringMatching(/covers this prune through seq 15/),
      });
      // Retention keeps the held session's values and stops pruning before its first event (seq 1).
      const run = await gh.runRetention();
      expect(run).toMatchObject({ erased: { events: 10 }, pruned: null, problem: null });
      expect(
        (await gh.readHistory({ session_id: 'held', type: 'state_change', limit: 1 })).events[0]!.data[
          'value'
        ],
      ).toBe('v9');

      // A tenant hold stops retention altogether.
      const tenantHold = await gh.placeHold({ reference: 'AUDIT-1' });
      expect((await gh.runRetention()).problem).toMatch(/covers the tenant: retention did not run/);
      await gh.releaseHold(tenantHold.hold_id);
      await expect(gh.releaseHold(tenantHold.hold_id)).rejects.toMatchObject({ code: 'not_found' });

      // The explicit override goes through and leaves its trace.
      const erased = await gh.eraseSession({ session_id: 'held', override_hold: true, reference: 'DSR-9' });
      expect(erased.erasure).not.toBeNull();
      const overridden = (await gh.readHistory({ type: 'legal_hold.overridden' })).events[0]!;
      expect(overridden.data).toMatchObject({
        holds: [hold.hold_id],
        references: ['CASE-2026-7'],
        operation: 'erasure of session held',
        by: 'in-process',
      });
      const types = (await gh.readHistory({ limit: 100 })).events.map((e) => e.type);
      expect(types).toContain('legal_hold.placed');
      expect(types).toContain('legal_hold.released');
      expect(await gh.verifyHistory()).toMatchObject({ ok: true });
    } finally {
      await store.close();
    }
  }, 60_000);

  it('a tenant hold placed while retention runs stops it at the next batch', async () => {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      policy: compilePolicy('version: 1\nretention:\n  values_after: 30d\n  history_after: 200d\n'),
      checkpointSigner: loadCheckpointSigner(key.privateKey),
    });
    try {
      // Two values batches' worth (500 events each), and the items, a year old.
      for (let i = 0; i < 700; i += 1) {
        clock.now = T0 + i;
        await gh.recordState({
          session_id: `s${i % 7}`,
          key: 'agent.note',
          value: `v${i}`,
          type: 'fact',
          source: 'user_input',
        });
      }
      clock.now = T0 + 365 * DAY;
      // The hold is placed (and committed) as soon as the first retention batch has committed.
      const transaction = store.transaction.bind(store);
      let placed: number | null = null;
      store.transaction = (async (
        fn: Parameters<typeof transaction>[0],
        options?: Parameters<typeof transaction>[1],
      ) => {
        const result = await transaction(fn, options);
        if (
          placed === null &&
          (await gh.readHistory({ type: 'erasure.completed', limit: 1 })).events.length > 0
        ) {
          placed = 0;
          await gh.placeHold({ reference: 'AUDIT-2' });
          placed = (await gh.readHistory({ type: 'legal_hold.placed', limit: 1 })).events[0]!.seq;
        }
        return result;
      }) as typeof store.transaction;

      const report = await gh.runRetention();
      expect(placed).toBeGreaterThan(0);
      expect(report.problem).toMatch(/covers the tenant: retention stopped/);
      expect(report.erased.erasures).toHaveLength(1);
      expect(report.erased_items.items).toBe(0);
      expect(report.pruned).toBeNull();
      const { events } = await gh.readHistory({ limit: 5 });
      expect(events[0]).toMatchObject({ seq: placed, type: 'legal_hold.placed' });
      expect(await gh.verifyHistory()).toMatchObject({ ok: true });
    } finally {
      await store.close();
    }
  }, 60_000);
});
