/**
 * The 183-day floor holds for every event a prune deletes, not only the last one: an event dated
 * in the past (an instance whose clock stepped back, an NTP correction) must not let a prune, or
 * retention's `history_after`, delete the younger events before it. And `below_floor` in the
 * `retention.pruned` event says whether the prune went below the floor, not whether it was allowed to.
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

describe.each(STORE_TARGETS)('the prune floor on $name', (target) => {
  /**
   * Events 1-10 on day 0 and 11-20 on day 300, but 16 (when `skewed`) dated years back: the clock
   * stepped back for it. The clock then stands at day 301.
   */
  async function skewedHistory(retention: string, options: { skewed: boolean } = { skewed: true }) {
    const store = await target.open(target.place());
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      policy: compilePolicy(`version: 1\nretention:\n${retention}`),
      checkpointSigner: loadCheckpointSigner(key.privateKey),
    });
    const write = (i: number) =>
      gh.recordState({
        session_id: 's',
        key: 'agent.note',
        value: `v${i}`,
        type: 'fact',
        source: 'user_input',
      });
    for (let i = 1; i <= 20; i += 1) {
      clock.now =
        i <= 10 ? T0 + i * 1000 : i === 16 && options.skewed ? T0 - 2000 * DAY : T0 + 300 * DAY + i * 1000;
      await write(i);
    }
    clock.now = T0 + 301 * DAY;
    return { store, gh };
  }

  it('retention prunes only up to the first event younger than history_after, whatever the events after it say', async () => {
    const { store, gh } = await skewedHistory('  history_after: 200d\n');
    try {
      const run = await gh.runRetention();
      expect(run.problem).toBeNull();
      // Events 11-15 are a day old: they stay, and so does everything after them.
      expect(run.pruned).toMatchObject({ from_seq: 1, through_seq: 10, events: 10, below_floor: false });
      const kept = await gh.readHistory({ limit: 100, order: 'asc' });
      expect(kept.events[0]!.seq).toBe(11);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, pruned_through: 10 });
    } finally {
      await store.close();
    }
  });

  it('a prune through an old-dated event is refused while a younger event lies before it', async () => {
    const { store, gh } = await skewedHistory('  values_after: 30d\n');
    try {
      await expect(gh.pruneHistory({ through_seq: 16 })).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringMatching(/younger than the retention floor/),
      });
      expect((await gh.readHistory({ limit: 1, order: 'asc' })).events[0]!.seq).toBe(1);
      // Allowed below the floor, it goes, and says so.
      const below = await gh.pruneHistory({ through_seq: 16, allow_below_floor: true });
      expect(below).toMatchObject({ through_seq: 16, below_floor: true });
    } finally {
      await store.close();
    }
  });

  it('a prune above the floor records below_floor: false, even when lowering the floor is allowed', async () => {
    const { store, gh } = await skewedHistory('  history_after: 250d\n  allow_below_floor: true\n', {
      skewed: false,
    });
    try {
      const run = await gh.runRetention();
      expect(run.pruned).toMatchObject({ through_seq: 10, below_floor: false });
      const [event] = (await gh.readHistory({ type: 'retention.pruned', limit: 1 })).events;
      expect(event!.data).toMatchObject({ through_seq: 10, below_floor: false });
    } finally {
      await store.close();
    }
  });
});
