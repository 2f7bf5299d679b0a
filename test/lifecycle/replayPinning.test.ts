/**
 * Replay reads each decision's state as the decision read it, also when another write landed
 * between the evaluation's read and its `gate_evaluation` event: the recorded `state_versions`
 * pin a key computed from the params, a key that was absent (version 0) and, after an
 * enumeration, the whole key set (`*`). The race is made deterministic by a store whose
 * `listItems` lets one write through before it returns.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type ReplayedDecision,
  replayDecisions,
  type Store,
} from '../../src/index.js';
import { manualClock } from '../store/contract.js';

const POLICY = compilePolicy(`
version: 1
actions:
  "payments.transfer":
    rules:
      - name: over_limit
        when: "double(params.amount) > state[params.limit_key].number"
        verdict: Block
  "payments.refund":
    rules:
      - name: over_default_cap
        when: "double(params.amount) > (params.cap_key in state ? state[params.cap_key].number : 1000.0)"
        verdict: Block
  "payments.payout":
    rules:
      - name: risk_flagged
        when: "state.exists(k, k.startsWith('risk.'))"
        verdict: Block
`);

let store: Store;
let gh: Gatehouse;
let writer: Gatehouse;
/** Runs once, after the next evaluation read the session's items and before it records its decision. */
let between: (() => Promise<unknown>) | undefined;

beforeEach(() => {
  store = openSqliteStore();
  const clock = manualClock();
  const racing = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (prop !== 'listItems') return value.bind(target);
      return async (...args: Parameters<Store['listItems']>) => {
        const items = await target.listItems(...args);
        const step = between;
        between = undefined;
        await step?.();
        return items;
      };
    },
  });
  gh = createGatehouse({ store: racing, clock, ids: createIdGenerator(clock), policy: POLICY });
  writer = createGatehouse({ store, clock, ids: createIdGenerator(clock), policy: POLICY });
});
afterEach(async () => {
  await store.close();
});

const record = (key: string, value: string) =>
  writer.recordState({ session_id: 's1', key, value, type: 'fact', source: 'user_input' });

async function replayAll(): Promise<ReplayedDecision[]> {
  const replayed: ReplayedDecision[] = [];
  await replayDecisions({
    store,
    tenantId: 'default',
    candidate: POLICY,
    onDecision: (d) => replayed.push(d),
  });
  return replayed;
}

describe('replay pins the state each decision read', () => {
  it('a key computed from the params, changed between the read and the decision', async () => {
    await record('limits.daily', '5000');
    between = () => record('limits.daily', '1000');
    const decision = await gh.evaluate({
      session_id: 's1',
      action: 'payments.transfer',
      params: { amount: 3000, limit_key: 'limits.daily' },
    });
    expect(decision).toMatchObject({ verdict: 'Allow', state_versions: { 'limits.daily': 1 } });
    const [replayed] = await replayAll();
    expect(replayed).toMatchObject({ replayed: { verdict: 'Allow' }, pinned: true });
  });

  it('a key read while absent, created between the read and the decision', async () => {
    between = () => record('limits.refund_cap', '5000');
    const decision = await gh.evaluate({
      session_id: 's1',
      action: 'payments.refund',
      params: { amount: 3000, cap_key: 'limits.refund_cap' },
    });
    expect(decision).toMatchObject({ verdict: 'Block', state_versions: { 'limits.refund_cap': 0 } });
    const [replayed] = await replayAll();
    expect(replayed).toMatchObject({ replayed: { verdict: 'Block' }, pinned: true });
  });

  it('the whole key set, a key added between the read and the decision', async () => {
    await record('user.name', 'Ada');
    between = () => record('risk.fraud', 'high');
    const decision = await gh.evaluate({ session_id: 's1', action: 'payments.payout', params: {} });
    expect(decision).toMatchObject({ verdict: 'Allow', state_versions: { '*': 1, 'user.name': 1 } });
    const [replayed] = await replayAll();
    expect(replayed).toMatchObject({ replayed: { verdict: 'Allow' }, pinned: true });

    // Decided after the write, the same payout is a Block, and replays as one, unpinned.
    expect((await gh.evaluate({ session_id: 's1', action: 'payments.payout', params: {} })).verdict).toBe(
      'Block',
    );
    const [, later] = await replayAll();
    expect(later).toMatchObject({ replayed: { verdict: 'Block' }, pinned: false });
  });
});
