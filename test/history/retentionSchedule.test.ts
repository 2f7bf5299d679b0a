/**
 * The retention schedule `gatehouse serve` runs: every tenant's retention once per interval, one
 * run at a time; decisions made while it runs are answered; a refused prune goes to `onError`;
 * `close()` is safe twice and stops the timer.
 */
import { describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createGatehouse,
  type RetentionReport,
  startRetentionSchedule,
} from '../../src/index.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

describe('the retention schedule', () => {
  it('runs every tenant each interval, reports refusals, keeps answering, and closes', async () => {
    const store = openSqliteStore({ filename: ':memory:' });
    const clock = { now: T0 };
    const gh = createGatehouse({
      store,
      clock: () => new Date(clock.now),
      policy: compilePolicy('version: 1\nretention:\n  values_after: 30d\n  history_after: 200d\n'),
    });
    for (const tenantId of ['a', 'b']) {
      for (let i = 0; i < 600; i += 1) {
        await gh.recordState(
          { session_id: 's', key: 'agent.note', value: `v${i}`, type: 'fact', source: 'user_input' },
          { tenantId },
        );
      }
    }
    clock.now = T0 + 250 * DAY;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const reports: RetentionReport[] = [];
    const errors: string[] = [];
    const schedule = startRetentionSchedule({
      gatehouse: gh,
      intervalMs: 60_000,
      onReport: (r) => reports.push(r),
      onError: (e, tenantId) => errors.push(`${tenantId}: ${(e as Error).message}`),
    });
    try {
      vi.advanceTimersByTime(60_000);
      vi.useRealTimers();
      // A decision made while the run goes on is answered.
      await gh.recordState(
        { session_id: 'live', key: 'agent.note', value: 'x', type: 'fact', source: 'user_input' },
        { tenantId: 'c' },
      );
      expect((await gh.readHistory({}, { tenantId: 'c' })).events).toHaveLength(1);
      await schedule.runNow();
      // The first run (the timer's) erased every old value of both tenants in two batches each.
      expect(
        reports.filter((r) => r.erased.events > 0).map((r) => [r.tenant_id, r.erased.erasures.length]),
      ).toEqual([
        ['a', 2],
        ['b', 2],
      ]);
      // No checkpoint key: each prune is refused and reported.
      expect(errors.filter((e) => e.startsWith('a: ')).at(0)).toMatch(/No checkpoint key is configured/);
    } finally {
      vi.useRealTimers();
      await schedule.close();
      await schedule.close();
      await store.close();
    }
  }, 60_000);
});
