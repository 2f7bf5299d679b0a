/**
 * Verifying a chain while the service goes on, on real stores (SQLite files always, PostgreSQL
 * when configured): the scan lets other work run between its pages (a verification of a long
 * chain, open to any key that reads history, held a SQLite process for its whole run); callers
 * that ask while one runs share it; and a prune that deletes a prefix in the middle of a
 * verification leaves no false alarm.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  createGatehouse,
  type Gatehouse,
  generateCheckpointKeyPair,
  loadCheckpointSigner,
  type SealedEvent,
  type Store,
} from '../../src/index.js';
import { STORE_TARGETS } from './storeTargets.js';

afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const key = generateCheckpointKeyPair();

/** `store` with a hook run after each page its scans hand out, and a count of scans. */
function observed(store: Store, afterPage: (page: number) => Promise<void> | void) {
  const counts = { scans: 0 };
  const scanEvents: Store['scanEvents'] = (tenantId, options) => {
    counts.scans += 1;
    const pages = store.scanEvents(tenantId, options);
    return (async function* () {
      let n = 0;
      for await (const page of pages) {
        yield page as SealedEvent[];
        n += 1;
        await afterPage(n);
      }
    })();
  };
  // A proxy, not a subclass: the stores keep their state in private fields.
  const wrapped = new Proxy(store, {
    get(target, name) {
      if (name === 'scanEvents') return scanEvents;
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: wrapped, counts };
}

describe.each(STORE_TARGETS)('verifying a chain on $name', (target) => {
  async function world(afterPage: (page: number) => Promise<void> | void = () => {}) {
    const raw = await target.open(target.place());
    const { store, counts } = observed(raw, (n) => afterPage(n));
    const clock = { now: T0 };
    const gh: Gatehouse = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      checkpointSigner: loadCheckpointSigner(key.privateKey),
    });
    for (let i = 0; i < 1200; i += 1) {
      clock.now = T0 + i * 60_000;
      await gh.recordState({
        session_id: `s${i % 7}`,
        key: 'agent.note',
        value: `note ${i}`,
        type: 'fact',
        source: 'user_input',
      });
    }
    return { raw, gh, clock, counts };
  }

  it('lets other work run between pages, and callers asking at once share one pass', async () => {
    const { raw, gh, counts } = await world();
    try {
      let turns = 0;
      let ticking = true;
      const tick = () => {
        turns += 1;
        if (ticking) setImmediate(tick);
      };
      setImmediate(tick);
      const [a, b, c] = await Promise.all([gh.verifyHistory(), gh.verifyHistory(), gh.verifyHistory()]);
      ticking = false;
      expect(a).toMatchObject({ ok: true, checked: 1200 });
      expect(b).toBe(a);
      expect(c).toBe(a);
      expect(counts.scans).toBe(1);
      // 1,200 events are several pages: the event loop turned between them.
      expect(turns).toBeGreaterThan(2);
      // The next request after it ended runs a new pass.
      expect((await gh.verifyHistory()).ok).toBe(true);
      expect(counts.scans).toBe(2);
    } finally {
      await raw.close();
    }
  });

  it('a prune that deletes a prefix during a verification is no tampering', async () => {
    let prune: (() => Promise<unknown>) | undefined;
    const { raw, gh, clock } = await world(async (page) => {
      // After the first scan's first page, the oldest 600 events go.
      if (page === 1 && prune) {
        const once = prune;
        prune = undefined;
        await once();
      }
    });
    try {
      clock.now = T0 + 400 * DAY;
      prune = () => gh.pruneHistory({ through_seq: 600 });
      const result = await gh.verifyHistory();
      // The 600 kept events and the prune's own retention.pruned event.
      expect(result).toMatchObject({ ok: true, pruned_through: 600, checked: 601 });
    } finally {
      await raw.close();
    }
  });
});
