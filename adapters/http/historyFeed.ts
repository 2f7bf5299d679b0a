/**
 * What wakes the open history streams: a write answered by this instance (so a new event shows at
 * once) or, failing that, the poll interval (events written by another instance on the same
 * database, or through a face that does not ring). Bounded: a wait always ends at its timeout,
 * its signal, or {@link HistoryFeed.close}.
 */

/** Wakes waiting history streams. */
export interface HistoryFeed {
  /** Wakes every stream waiting now, so it reads the store again. */
  wake(): void;
  /**
   * Resolves after `ms`, at the next {@link wake}, when `signal` aborts, or at {@link close},
   * whichever comes first. Never rejects.
   */
  wait(ms: number, signal: AbortSignal): Promise<void>;
  /** Ends every wait and every later one at once: the streams see `closed` and finish. Safe twice. */
  close(): void;
  readonly closed: boolean;
}

/** Creates a feed. */
export function createHistoryFeed(): HistoryFeed {
  const waiting = new Set<() => void>();
  let closed = false;
  const wakeAll = () => {
    const now = [...waiting];
    waiting.clear();
    for (const resolve of now) resolve();
  };
  return {
    wake: wakeAll,
    wait(ms, signal) {
      if (closed || signal.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          waiting.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener('abort', done, { once: true });
        waiting.add(done);
      });
    },
    close() {
      closed = true;
      wakeAll();
    },
    get closed() {
      return closed;
    },
  };
}
