/**
 * An approval is bound to the state the evaluation actually read, on a real SQLite store: a key
 * computed from the params, an enumeration of the whole state, a key read while it was absent,
 * and the session's open conflicts (a conflict contests an item without a new version).
 * Each scenario holds an action, approves it, changes that state in a way the rule still fires
 * on, and checks the same evaluation is held again rather than released.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type CallContext,
  compilePolicy,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type Store,
} from '../../src/index.js';
import { manualClock } from '../store/contract.js';

const POLICY = `
version: 1
actions:
  "payments.transfer":
    rules:
      - name: over_limit
        when: "double(params.amount) > state[params.limit_key].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds {state[params.limit_key].value}"
        approval: { expires_in: 15m, approvers: [finance] }
  "payments.payout":
    rules:
      - name: risk_flagged
        when: "state.exists(k, k.startsWith('risk.') && state[k].value == 'high')"
        verdict: Block
        approval: { expires_in: 15m, approvers: [finance] }
  "payments.refund":
    rules:
      - name: over_default_cap
        when: "double(params.amount) > (params.cap_key in state ? state[params.cap_key].number : 1000.0)"
        verdict: Block
        approval: { expires_in: 15m, approvers: [finance] }
`;

const agent: CallContext = { keyId: 'key_agent', scopes: ['gate:evaluate'], labels: [] };
const finance: CallContext = { keyId: 'key_finance', scopes: ['approvals:decide'], labels: ['finance'] };

let store: Store;
let gh: Gatehouse;

beforeEach(() => {
  store = openSqliteStore();
  const clock = manualClock();
  gh = createGatehouse({ store, clock, ids: createIdGenerator(clock), policy: compilePolicy(POLICY) });
});
afterEach(async () => {
  await store.close();
});

const record = (key: string, value: string) =>
  gh.recordState({ session_id: 's1', key, value, type: 'fact', source: 'user_input' });

/** Evaluates, expects a hold, approves it as finance; returns the approval. */
async function holdAndApprove(request: Parameters<Gatehouse['evaluate']>[0]) {
  const held = await gh.evaluate(request, agent);
  expect(held).toMatchObject({ verdict: 'Block', approval: { status: 'pending' } });
  await gh.approve(held.approval!.id, {}, finance);
  return gh.getApproval(held.approval!.id);
}

describe('an approval is bound to the state its evaluation read', () => {
  it('a key computed from the params: lowering the limit after approval holds the transfer again', async () => {
    await record('limits.daily', '5000');
    const transfer = {
      session_id: 's1',
      action: 'payments.transfer',
      params: { amount: 9000, limit_key: 'limits.daily' },
    };
    const approval = await holdAndApprove(transfer);
    expect(approval.state_versions).toEqual({ 'limits.daily': 1 });

    await record('limits.daily', '1000');
    const after = await gh.evaluate(transfer, agent);
    expect(after.verdict).toBe('Block');
    expect(after.state_versions).toEqual({ 'limits.daily': 2 });
    expect(after.approval).toMatchObject({ status: 'pending' });
    expect(after.approval!.id).not.toBe(approval.id);
    expect((await gh.getApproval(approval.id)).status).toBe('approved');
  });

  it('an enumeration of the state: a key that appears after approval holds the payout again', async () => {
    await record('risk.country', 'high');
    await record('user.name', 'Ada');
    const payout = { session_id: 's1', action: 'payments.payout', params: { amount: 50 } };
    const approval = await holdAndApprove(payout);
    // Every current key, and the whole key set (`*`: how many items there were).
    expect(approval.state_versions).toEqual({ '*': 2, 'risk.country': 1, 'user.name': 1 });

    await record('risk.fraud', 'high');
    const after = await gh.evaluate(payout, agent);
    expect(after.verdict).toBe('Block');
    expect(after.state_versions).toEqual({ '*': 3, 'risk.country': 1, 'risk.fraud': 1, 'user.name': 1 });
    expect(after.approval!.id).not.toBe(approval.id);
    expect((await gh.getApproval(approval.id)).status).toBe('approved');
  });

  it('a key read while absent: its appearing after approval holds the refund again', async () => {
    const refund = {
      session_id: 's1',
      action: 'payments.refund',
      params: { amount: 3000, cap_key: 'limits.refund_cap' },
    };
    const approval = await holdAndApprove(refund);
    // Version 0: the key was read and did not exist.
    expect(approval.state_versions).toEqual({ 'limits.refund_cap': 0 });

    await record('limits.refund_cap', '2000');
    const after = await gh.evaluate(refund, agent);
    expect(after.verdict).toBe('Block');
    expect(after.state_versions).toEqual({ 'limits.refund_cap': 1 });
    expect(after.approval!.id).not.toBe(approval.id);
  });

  it('a conflict opened after approval (no new version) holds the transfer again', async () => {
    await record('limits.daily', '5000');
    const transfer = {
      session_id: 's1',
      action: 'payments.transfer',
      params: { amount: 9000, limit_key: 'limits.daily' },
    };
    const approval = await holdAndApprove(transfer);
    // A tool contradicts the user's limit: the item is contested, its version stays 1.
    await gh.recordState(
      { session_id: 's1', key: 'limits.daily', value: '20000', type: 'fact', source: 'tool_output' },
      { allowedSources: ['tool_output'] },
    );
    const after = await gh.evaluate(transfer, agent);
    expect(after.state_versions).toEqual({ 'limits.daily': 1 });
    expect(after.verdict).toBe('Block');
    expect(after.approval).toMatchObject({ status: 'pending' });
    expect(after.approval!.id).not.toBe(approval.id);
    expect((await gh.getApproval(approval.id)).status).toBe('approved');
  });

  it('an approval given while a conflict was open does not outlive its settling', async () => {
    await record('limits.daily', '5000');
    await gh.recordState(
      { session_id: 's1', key: 'limits.daily', value: '20000', type: 'fact', source: 'tool_output' },
      { allowedSources: ['tool_output'] },
    );
    const transfer = {
      session_id: 's1',
      action: 'payments.transfer',
      params: { amount: 9000, limit_key: 'limits.daily' },
    };
    const approval = await holdAndApprove(transfer);
    // The same evaluation, conflict still open: the approval releases it (a Warn: open conflicts).
    const again = await gh.evaluate(transfer, agent);
    expect(again).toMatchObject({ allowed: true, approval: { id: approval.id, status: 'used' } });

    const approval2 = await holdAndApprove(transfer);
    const [conflict] = await gh.listConflicts({ session_id: 's1', status: 'open' });
    await gh.resolveConflict(conflict!.conflict_id, { resolution: 'keep_current' });
    const after = await gh.evaluate(transfer, agent);
    expect(after.state_versions).toEqual({ 'limits.daily': 1 });
    expect(after.approval).toMatchObject({ status: 'pending' });
    expect(after.approval!.id).not.toBe(approval2.id);
  });

  it('unchanged state still releases the approved action, once', async () => {
    await record('limits.daily', '5000');
    const transfer = {
      session_id: 's1',
      action: 'payments.transfer',
      params: { amount: 9000, limit_key: 'limits.daily' },
    };
    const approval = await holdAndApprove(transfer);
    // Another item, one the rule never reads, changes nothing.
    await record('user.name', 'Ada');
    const released = await gh.evaluate(transfer, agent);
    expect(released).toMatchObject({ verdict: 'Allow', approval: { id: approval.id, status: 'used' } });
  });
});
