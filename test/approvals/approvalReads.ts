/**
 * Counts a store's reads of approvals (`getApproval`): what a waiting long-poll or
 * `wait_for_approval` does on each of its polls, so a test can tell it is polling, and when it
 * stopped.
 */
import type { Store } from '../../src/index.js';

/** The reads counted so far, and a wait for their total to reach `n`. */
export interface ApprovalReads {
  count(): number;
  /** Resolves once the store has read approvals `n` times in all. */
  reach(n: number): Promise<void>;
}

/** Wraps `store.getApproval` in place to count its calls. */
export function countApprovalReads(store: Store): ApprovalReads {
  let reads = 0;
  let onRead = () => {};
  const getApproval = store.getApproval.bind(store);
  store.getApproval = (...args) => {
    reads += 1;
    onRead();
    return getApproval(...args);
  };
  return {
    count: () => reads,
    reach: (n) =>
      new Promise<void>((resolve) => {
        onRead = () => {
          if (reads >= n) resolve();
        };
        onRead();
      }),
  };
}
