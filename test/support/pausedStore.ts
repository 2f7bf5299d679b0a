/**
 * A store whose first call of one read method answers only when the test says so: an evaluation
 * can be held between its read and its transaction while another writer (an erasure) commits.
 */
import type { Store } from '../../src/index.js';

/**
 * `store`, whose first `method` call resolves only once `resume()` is called (after `read`, which
 * settles when that call has read). Every other call passes through to `store`.
 */
export function pausedOnce<S extends Store>(store: S, method: 'listItems' | 'listConflicts') {
  let resume!: () => void;
  const resumed = new Promise<void>((r) => (resume = r));
  let readDone!: () => void;
  const read = new Promise<void>((r) => (readDone = r));
  let first = true;
  const paused = new Proxy(store, {
    get(target, property) {
      if (property === method) {
        return async (...args: unknown[]) => {
          const answer = await (target[method] as (...a: unknown[]) => Promise<unknown>)(...args);
          if (first) {
            first = false;
            readDone();
            await resumed;
          }
          return answer;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Store;
  return { paused, read, resume };
}
