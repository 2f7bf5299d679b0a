/**
 * Runs every tenant's retention on a schedule (`gatehouse serve`): one run at a time, tenant by
 * tenant, each in bounded batches that yield between them (retentionOperations.ts), so decisions
 * keep flowing. Failures go to `onError`, never to an unhandled rejection; `close()` stops the
 * timer and waits for a run in progress, and is safe to call twice.
 */
import type { Gatehouse, RetentionReport } from '../gatehouseTypes.js';

/** Options of {@link startRetentionSchedule}. */
export interface RetentionScheduleOptions {
  gatehouse: Pick<Gatehouse, 'runRetention' | 'store'>;
  /** Time between the end of one run and the start of the next. @default 3_600_000 (1 h) */
  intervalMs?: number;
  /** A tenant's run that failed, or whose prune was refused. */
  onError?: (error: unknown, tenantId: string) => void;
  /** Every tenant's report. @default none */
  onReport?: (report: RetentionReport) => void;
  /**
   * Asked before each tenant's run: why no prune may run now, or undefined (see
   * `RunRetentionOptions.pruneHeld`). @default none: due prunes run
   */
  pruneHeld?: () => string | undefined;
}

/** A running schedule. */
export interface RetentionSchedule {
  /** Runs every tenant now (after a run in progress); resolves when done. */
  runNow(): Promise<void>;
  close(): Promise<void>;
}

/** Starts the schedule: the first run after one interval. */
export function startRetentionSchedule(options: RetentionScheduleOptions): RetentionSchedule {
  const interval = options.intervalMs ?? 3_600_000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let closed = false;

  const runAll = async () => {
    let tenants: string[];
    try {
      tenants = await options.gatehouse.store.listTenants();
    } catch (error) {
      options.onError?.(error, '*');
      return;
    }
    for (const tenantId of tenants) {
      if (closed) return;
      try {
        const pruneHeld = options.pruneHeld?.();
        const report = await options.gatehouse.runRetention(
          { tenantId, actor: 'retention' },
          pruneHeld === undefined ? {} : { pruneHeld },
        );
        options.onReport?.(report);
        if (report.problem !== null) options.onError?.(new Error(report.problem), tenantId);
      } catch (error) {
        options.onError?.(error, tenantId);
      }
    }
  };
  const runNow = () => {
    running = running.then(runAll);
    return running;
  };
  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => {
      void runNow().then(schedule);
    }, interval);
    timer.unref();
  };
  schedule();
  return {
    runNow,
    async close() {
      closed = true;
      clearTimeout(timer);
      await running;
    },
  };
}
