import { describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../adapters/postgres/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createGatehouse,
  createIdGenerator,
  type ReplayedDecision,
  replayDecisions,
  type Store,
} from '../../src/index.js';
import { manualClock } from '../store/contract.js';
import { freshSchemas } from '../support/pgSchemas.js';
import { REPLAY_POLICY, runReplayWorkload } from '../support/replayWorkload.js';

const DECISIONS = 10_000;
const url = process.env['GATEHOUSE_TEST_DATABASE_URL'];
const freshSchema = freshSchemas('gh_replay');

async function proveExact(store: Store, workers: number, variants: boolean) {
  const clock = manualClock('2026-03-02T08:00:00.000Z');
  const policy = compilePolicy(REPLAY_POLICY);
  const gatehouse = createGatehouse({ store, policy, clock, ids: createIdGenerator(clock) });
  const counts = await runReplayWorkload(gatehouse, {
    decisions: DECISIONS,
    sessions: 200,
    workers,
    seed: 17,
    advance: clock.advance,
  });
  expect(counts.decisions).toBe(DECISIONS);

  const mismatches: ReplayedDecision[] = [];
  const seen = { Warn: 0, Block: 0, shadow: 0, open_conflicts: 0, stale_budget: 0, weekend_freeze: 0 };
  const report = await replayDecisions({
    store,
    tenantId: 'default',
    candidate: policy,
    // Small enough that sessions are dropped and rebuilt from the store many times over.
    cacheRows: 300,
    // This proves exactness over every decision, not speed: on a loaded machine the pass (which
    // rebuilds sessions thousands of times here) can outlast the default budget and stop early.
    timeBudgetMs: Number.POSITIVE_INFINITY,
    onDecision: (d) => {
      const { recorded, replayed } = d;
      const same =
        recorded.verdict === replayed.verdict &&
        recorded.reason === replayed.reason &&
        JSON.stringify(recorded.reasons) === JSON.stringify(replayed.reasons) &&
        JSON.stringify(recorded.shadow) === JSON.stringify(replayed.shadow);
      if (!same && mismatches.length < 5) mismatches.push(d);
      if (recorded.verdict === 'Warn') seen.Warn += 1;
      if (recorded.verdict === 'Block') seen.Block += 1;
      if (recorded.shadow.length > 0) seen.shadow += 1;
      for (const rule of ['open_conflicts', 'stale_budget', 'weekend_freeze'] as const) {
        if (recorded.reasons.some((r) => r.rule === rule)) seen[rule] += 1;
      }
    },
  });
  expect(mismatches).toEqual([]);
  expect(report).toMatchObject({
    decisions: DECISIONS,
    unchanged: DECISIONS,
    changed: 0,
    rules_changed: 0,
    pinned: 0,
  });
  // The workload really exercised what it claims.
  expect(counts.conflicts).toBeGreaterThan(300);
  expect(counts.resolutions).toBeGreaterThan(100);
  for (const [what, n] of Object.entries(seen)) expect(n, what).toBeGreaterThan(50);
  // The other replays read the same rows the same way: once, on SQLite, keeps the suite short.
  if (!variants) return;

  // A different candidate: the same comparison finds the differences.
  const looser = compilePolicy(REPLAY_POLICY.replace("> duration('3600s')", "> duration('36000s')"));
  const changed = await replayDecisions({ store, tenantId: 'default', candidate: looser, examples: 3 });
  expect(changed.decisions).toBe(DECISIONS);
  expect(changed.changed + changed.rules_changed).toBeGreaterThan(50);
  expect(changed.rules.find((r) => r.rule === 'stale_budget')!.now).toBeLessThan(
    changed.rules.find((r) => r.rule === 'stale_budget')!.before,
  );
  expect(changed.examples).toHaveLength(3);

  // One session alone, and a time window, replay exactly too.
  const one = await replayDecisions({ store, tenantId: 'default', candidate: policy, sessionId: 'w0-s3' });
  expect(one.decisions).toBeGreaterThan(10);
  expect(one).toMatchObject({ changed: 0, rules_changed: 0, unchanged: one.decisions });
  const window = await replayDecisions({
    store,
    tenantId: 'default',
    candidate: policy,
    since: '2026-03-20T00:00:00.000Z',
    until: '2026-03-25T00:00:00.000Z',
  });
  expect(window.decisions).toBeGreaterThan(100);
  expect(window.decisions).toBeLessThan(DECISIONS);
  expect(window).toMatchObject({ changed: 0, rules_changed: 0 });
}

describe('replay is exact', () => {
  it(`SQLite: ${DECISIONS} recorded decisions replay with 0 differences`, async () => {
    const store = openSqliteStore();
    try {
      await proveExact(store, 1, true);
    } finally {
      await store.close();
    }
  }, 180_000);

  it.skipIf(!url)(
    `PostgreSQL: ${DECISIONS} recorded decisions replay with 0 differences`,
    async () => {
      const schema = freshSchema();
      const store = await openPostgresStore({ connectionString: url!, schema, pool: { max: 8 } });
      try {
        await proveExact(store, 8, false);
      } finally {
        await store.close();
      }
    },
    600_000,
  );
});
