/**
 * The hard time limit of delivery attempts, kept by one coarse timer for all attempts in flight:
 * a timer (or an `AbortSignal.timeout`, with its weak reference and finalizer) per attempt was a
 * visible share of a drain's CPU and garbage collection.
 */

/** Calls each attempt's `onExpired` once it has run out of time. */
export interface AttemptDeadlines {
  /**
   * Starts the clock of one attempt: `onExpired` is called with a `TimeoutError` after the limit,
   * unless the returned `done` was called first.
   */
  start(onExpired: (reason: Error) => void): () => void;
}

/**
 * Deadlines of `timeoutMs` each, checked every `max(10, min(1000, timeoutMs / 10))` ms while any
 * attempt is in flight: an attempt is ended at most a tenth of its limit (and never more than a
 * second) late, and the timer stops by itself once no attempt is in flight.
 * @example
 * const deadlines = createAttemptDeadlines(15_000);
 * const done = deadlines.start((reason) => handle.abort(reason));
 * try { await send(); } finally { done(); }
 */
export function createAttemptDeadlines(timeoutMs: number): AttemptDeadlines {
  const tickMs = Math.max(10, Math.min(1000, Math.floor(timeoutMs / 10)));
  const live = new Set<{ deadline: number; onExpired: (reason: Error) => void }>();
  let timer: NodeJS.Timeout | undefined;

  function sweep(): void {
    const now = performance.now();
    // Every deadline is `timeoutMs` after its start, so insertion order is deadline order.
    for (const entry of live) {
      if (entry.deadline > now) break;
      live.delete(entry);
      // The reason AbortSignal.timeout gives, so callers tell a timeout from other aborts alike.
      entry.onExpired(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }
    if (live.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  }

  return {
    start(onExpired) {
      const entry = { deadline: performance.now() + timeoutMs, onExpired };
      live.add(entry);
      if (timer === undefined) {
        timer = setInterval(sweep, tickMs);
        // Attempts in flight keep the process alive through their sockets, not through this.
        timer.unref();
      }
      return () => live.delete(entry);
    },
  };
}
