/**
 * The hard time limit of delivery attempts, kept by one coarse timer for all attempts in flight:
 * `AbortSignal.timeout` per attempt costs a timer, a weak reference and a finalizer each, a
 * visible share of a drain's CPU and garbage collection.
 */

/** Hands out abort signals that fire once their attempt has run out of time. */
export interface AttemptDeadlines {
  /** A signal that aborts with a `TimeoutError` after the limit; call `done` when the attempt ends. */
  start(): { signal: AbortSignal; done: () => void };
}

/**
 * Deadlines of `timeoutMs` each, checked every `max(10, min(1000, timeoutMs / 10))` ms while any
 * attempt is in flight: an attempt is aborted at most a tenth of its limit (and never more than a
 * second) late, and the timer stops by itself once no attempt is in flight.
 * @example
 * const deadlines = createAttemptDeadlines(15_000);
 * const { signal, done } = deadlines.start();
 * try { await request(url, { signal }); } finally { done(); }
 */
export function createAttemptDeadlines(timeoutMs: number): AttemptDeadlines {
  const tickMs = Math.max(10, Math.min(1000, Math.floor(timeoutMs / 10)));
  const live = new Map<AbortController, number>();
  let timer: NodeJS.Timeout | undefined;

  function sweep(): void {
    const now = performance.now();
    // Every deadline is `timeoutMs` after its start, so insertion order is deadline order.
    for (const [controller, deadline] of live) {
      if (deadline > now) break;
      live.delete(controller);
      // The reason AbortSignal.timeout gives, so callers tell a timeout from other aborts alike.
      controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }
    if (live.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  }

  return {
    start() {
      const controller = new AbortController();
      live.set(controller, performance.now() + timeoutMs);
      if (timer === undefined) {
        timer = setInterval(sweep, tickMs);
        // Attempts in flight keep the process alive through their sockets, not through this.
        timer.unref();
      }
      return { signal: controller.signal, done: () => live.delete(controller) };
    },
  };
}
