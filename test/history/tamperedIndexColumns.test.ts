/**
 * Tampering by someone who can write the database directly (SQLite files always, PostgreSQL when
 * configured): each change below must make `verify` fail at the right event.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { compilePolicy, createGatehouse, type Gatehouse, type Store } from '../../src/index.js';
import { STORE_TARGETS, type StoreTarget } from './storeTargets.js';

const POLICY = `
version: 1
actions:
  "payments.*":
    rules:
      - name: over_budget
        when: "double(params.amount) > 100.0"
        verdict: Block
        message: "Transfer of {params.amount} is over the budget"
`;

afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

interface World {
  store: Store;
  gh: Gatehouse;
  allowed: { decision_id: string; seq: number };
  blocked: { decision_id: string; seq: number };
}

async function world(target: StoreTarget): Promise<World> {
  const store = await target.open(target.place());
  const gh = createGatehouse({ store, policy: compilePolicy(POLICY), checkWebhookUrl: async () => {} });
  const blocked = await gh.evaluate({
    session_id: 's1',
    action: 'payments.transfer',
    params: { amount: 9000 },
  });
  const allowed = await gh.evaluate({
    session_id: 's1',
    action: 'payments.transfer',
    params: { amount: 10 },
  });
  const seqOf = async (id: string) =>
    (await gh.readHistory({ decision_id: id, type: 'gate_evaluation' })).events[0]!.seq;
  expect((await gh.verifyHistory()).ok).toBe(true);
  return {
    store,
    gh,
    blocked: { decision_id: blocked.decision_id, seq: await seqOf(blocked.decision_id) },
    allowed: { decision_id: allowed.decision_id, seq: await seqOf(allowed.decision_id) },
  };
}

const liftTrigger = (t: StoreTarget) =>
  t.name === 'sqlite'
    ? 'DROP TRIGGER events_no_update'
    : 'ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete';

describe.each(STORE_TARGETS)('database-level tampering on $name', (target) => {
  it('a decision_id index column pointed at another decision fails verify', async () => {
    const w = await world(target);
    try {
      // GET /v1/decisions/<blocked> would now answer the Allow decision.
      await target.exec(w.store, liftTrigger(target));
      await target.exec(
        w.store,
        `UPDATE events SET decision_id = 'dec_moved' WHERE seq = ${w.blocked.seq};
         UPDATE events SET decision_id = '${w.blocked.decision_id}' WHERE seq = ${w.allowed.seq}`,
      );
      expect(await w.gh.verifyHistory()).toMatchObject({ ok: false, first_bad_seq: w.blocked.seq });
    } finally {
      await w.store.close();
    }
  });

  it('a decision_id index column cleared (the decision hidden) fails verify', async () => {
    const w = await world(target);
    try {
      await target.exec(w.store, liftTrigger(target));
      await target.exec(w.store, `UPDATE events SET decision_id = NULL WHERE seq = ${w.blocked.seq}`);
      expect(await w.gh.verifyHistory()).toMatchObject({ ok: false, first_bad_seq: w.blocked.seq });
    } finally {
      await w.store.close();
    }
  });
});
