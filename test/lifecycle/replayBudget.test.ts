/**
 * A replay stops at its time budget (20 s a call, docs/security.md) whatever its filters: the
 * budget was checked only once a decision had been replayed, so a filter that matched nothing
 * (an action no decision has) read the tenant's whole history in one call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, replayDecisions, type Store } from '../../src/index.js';
import { BUDGET_POLICY } from '../support/policies.js';

const DECISIONS = 400;
let store: Store;

beforeAll(async () => {
  store = openSqliteStore();
  const gatehouse = createGatehouse({ store, policy: compilePolicy(BUDGET_POLICY) });
  for (let i = 0; i < DECISIONS; i++) {
    await gatehouse.evaluate({ session_id: `s${i % 7}`, action: 'payments.transfer', params: { amount: i } });
    await gatehouse.recordState({
      session_id: `s${i % 7}`,
      key: 'notes.last',
      value: String(i),
      type: 'fact',
      source: 'user_input',
    });
  }
});
afterAll(async () => {
  await store.close();
});

describe('a replay whose filters match nothing', () => {
  const candidate = compilePolicy(BUDGET_POLICY);

  it('stops at its time budget, and continues from there', async () => {
    const filters = { action: 'nothing.*' };
    // A clock that moves 1 ms per reading: the budget runs out long before the history does.
    let now = 0;
    const timer = () => now++;
    const [head] = await store.queryEvents('default', { order: 'desc', limit: 1 });
    const first = await replayDecisions({
      store,
      tenantId: 'default',
      candidate,
      ...filters,
      timeBudgetMs: 100,
      timer,
    });
    expect(first).toMatchObject({
      decisions: 0,
      stopped_by: 'time_budget',
      next_after_seq: expect.any(Number),
    });
    expect(first.next_after_seq).toBeLessThan(head!.seq);

    // Each call goes further; together they read the history once.
    let calls = 1;
    let after = first.next_after_seq!;
    for (;;) {
      const next = await replayDecisions({
        store,
        tenantId: 'default',
        candidate,
        ...filters,
        afterSeq: after,
        timeBudgetMs: 100,
        timer,
      });
      calls += 1;
      expect(next.to_seq).toBeGreaterThan(after);
      if (next.next_after_seq === null) {
        expect(next).toMatchObject({ decisions: 0, stopped_by: null, to_seq: head!.seq });
        break;
      }
      after = next.next_after_seq;
    }
    expect(calls).toBeGreaterThan(2);
  });
});
