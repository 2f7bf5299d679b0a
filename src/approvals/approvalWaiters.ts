/**
 * Waking long-polls: `GET /v1/approvals/{id}?wait=…` sleeps between store reads and is woken at
 * once when this instance decides the approval. Another instance's decision is seen at the next
 * read (the store is the only shared truth), so the sleeps back off from 100 ms to 2 s.
 */

/** First pause between two reads of a pending approval, in ms. */
export const FIRST_POLL_MS = 100;
/** Longest pause between two reads, in ms: how late another instance's decision can be seen. */
export const MAX_POLL_MS = 2000;

/** Sleeps that a local decision cuts short. */
export interface ApprovalWaiters {
  /**
   * Resolves after `ms`, as soon as `notify(key)` is called, or when `signal` aborts (the caller
   * went away): the sleeper is removed either way.
   */
  sleep(key: string, ms: number, signal?: AbortSignal): Promise<void>;
  /** Wakes every sleeper on `key`. */
  notify(key: string): void;
  /** Sleepers now, on every key. */
  readonly sleeping: number;
}

/** Creates the waiters of one Gatehouse instance. */
export function createApprovalWaiters(): ApprovalWaiters {
  const sleepers = new Map<string, Set<() => void>>();
  return {
    sleep(key, ms, signal) {
      if (signal?.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const set = sleepers.get(key) ?? new Set();
        sleepers.set(key, set);
        const wake = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', wake);
          set.delete(wake);
          if (set.size === 0 && sleepers.get(key) === set) sleepers.delete(key);
          resolve();
        };
        // Unref'd: a waiting request must not keep a closing process alive.
        const timer = setTimeout(wake, Math.max(0, ms));
        timer.unref?.();
        signal?.addEventListener('abort', wake, { once: true });
        set.add(wake);
      });
    },
    notify(key) {
      for (const wake of [...(sleepers.get(key) ?? [])]) wake();
    },
    get sleeping() {
      let n = 0;
      for (const set of sleepers.values()) n += set.size;
      return n;
    },
  };
}
