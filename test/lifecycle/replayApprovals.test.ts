/**
 * Replay over decisions an approval touched: held, denied and released decisions replay
 * unchanged against their own policy; a candidate that no longer holds the action shows it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type CallContext,
  compilePolicy,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type ReplayedDecision,
  replayDecisions,
  type Store,
} from '../../src/index.js';
import { manualClock } from '../store/contract.js';
import { APPROVAL_POLICY } from '../support/policies.js';

const agent: CallContext = { keyId: 'key_agent', scopes: ['gate:evaluate'], labels: [] };
const finance: CallContext = { keyId: 'key_fin', scopes: ['approvals:decide'], labels: ['finance'] };
const transfer = (amount: number) => ({ session_id: 's1', action: 'payments.transfer', params: { amount } });

let store: Store;
let gh: Gatehouse;

beforeEach(async () => {
  store = openSqliteStore();
  const clock = manualClock();
  gh = createGatehouse({
    store,
    clock,
    ids: createIdGenerator(clock),
    policy: compilePolicy(APPROVAL_POLICY),
  });
  await gh.recordState({
    session_id: 's1',
    key: 'budget.limit',
    value: '5000',
    type: 'fact',
    source: 'user_input',
  });
  // Held, approved, released; held again (a second use); held and denied; denied again; in budget.
  const held = await gh.evaluate(transfer(9000), agent);
  await gh.approve(held.approval!.id, { comment: 'ok' }, finance);
  const releasedDecision = await gh.evaluate(transfer(9000), agent);
  expect(releasedDecision.verdict).toBe('Allow');
  expect((await gh.evaluate(transfer(9000), agent)).approval?.status).toBe('pending');
  const other = await gh.evaluate(transfer(7000), agent);
  await gh.deny(other.approval!.id, { comment: 'no' }, finance);
  expect((await gh.evaluate(transfer(7000), agent)).reasons.map((r) => r.rule)).toContain('approval_denied');
  expect((await gh.evaluate(transfer(10), agent)).verdict).toBe('Allow');
});

afterEach(async () => {
  await store.close();
});

async function replay(policy: string): Promise<ReplayedDecision[]> {
  const seen: ReplayedDecision[] = [];
  await replayDecisions({
    store,
    tenantId: 'default',
    candidate: compilePolicy(policy),
    onDecision: (d) => seen.push(d),
  });
  return seen;
}

describe('replay over approvals', () => {
  it('reproduces held, denied and released decisions against their own policy', async () => {
    const seen = await replay(APPROVAL_POLICY);
    expect(seen).toHaveLength(6);
    const differences = seen.filter((d) => d.comparison !== 'unchanged');
    expect(differences).toEqual([]);
    expect(seen.map((d) => d.replayed.verdict)).toEqual([
      'Block',
      'Allow',
      'Block',
      'Block',
      'Block',
      'Allow',
    ]);
  });

  it('shows a released decision as changed when the candidate blocks the action outright', async () => {
    const strict = APPROVAL_POLICY.replace('approval: { expires_in: 15m, approvers: [finance] }', '');
    const seen = await replay(strict);
    const released = seen[1]!;
    expect(released.recorded.verdict).toBe('Allow');
    expect(released.replayed.verdict).toBe('Block');
    expect(released.comparison).not.toBe('unchanged');
  });
});
