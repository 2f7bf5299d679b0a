/**
 * Two Gatehouse instances on one SQLite file whose clocks disagree by a second (NTP skew between
 * two hosts, or a clock stepped back across a restart): an approval's ID sorts by the clock of the
 * instance that made it, so "the newest approval of this digest" by ID is not the open one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { APPROVAL_POLICY } from '../support/policies.js';

const agent: CallContext = { keyId: 'key_agent', scopes: ['gate:evaluate'], labels: [] };
const finance: CallContext = { keyId: 'key_finance', scopes: ['approvals:decide'], labels: ['finance'] };
const transfer = { session_id: 's1', action: 'payments.transfer', params: { amount: 9000, to: 'acct-9' } };

let dir: string;
const stores: Store[] = [];
let ahead: Gatehouse;
let behind: Gatehouse;

function instance(clock: ReturnType<typeof manualClock>): Gatehouse {
  const store = openSqliteStore({ filename: join(dir, 'gatehouse.db') });
  stores.push(store);
  return createGatehouse({
    store,
    clock,
    ids: createIdGenerator(clock),
    policy: compilePolicy(APPROVAL_POLICY),
  });
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-skew-'));
  // The same moment, read by two hosts one second apart.
  ahead = instance(manualClock('2026-01-01T00:00:01.000Z'));
  behind = instance(manualClock('2026-01-01T00:00:00.000Z'));
  await ahead.recordState({
    session_id: 's1',
    key: 'budget.limit',
    value: '5000',
    type: 'fact',
    source: 'user_input',
  });
});
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('approvals across instances whose clocks disagree', () => {
  it('a request made after a use on the instance ahead is found, approved and released on the one behind', async () => {
    // Held, approved and used on the instance ahead.
    const first = await ahead.evaluate(transfer, agent);
    await ahead.approve(first.approval!.id, {}, finance);
    expect((await ahead.evaluate(transfer, agent)).verdict).toBe('Allow');

    // The agent asks again through the instance behind: a new request, whose ID sorts first.
    const held = await behind.evaluate(transfer, agent);
    expect(held.approval).toMatchObject({ status: 'pending' });
    const second = held.approval!.id;
    expect(second).not.toBe(first.approval!.id);

    // Asking again gets the same pending request (no error, no duplicate)…
    const again = await behind.evaluate(transfer, agent);
    expect(again.approval).toMatchObject({ id: second, status: 'pending' });
    // …and once a person approves it, it releases the call, on either instance.
    await behind.approve(second, {}, finance);
    const released = await ahead.evaluate(transfer, agent);
    expect(released).toMatchObject({ verdict: 'Allow', approval: { id: second, status: 'used' } });
  });

  it('a request denied on the instance behind stays denied there: asking again is no new request', async () => {
    const first = await ahead.evaluate(transfer, agent);
    await ahead.approve(first.approval!.id, {}, finance);
    expect((await ahead.evaluate(transfer, agent)).verdict).toBe('Allow');

    const held = await behind.evaluate(transfer, agent);
    await behind.deny(held.approval!.id, { comment: 'no' }, finance);

    for (const gh of [behind, ahead]) {
      const again = await gh.evaluate(transfer, agent);
      expect(again).toMatchObject({
        verdict: 'Block',
        approval: { id: held.approval!.id, status: 'denied' },
      });
    }
    expect((await behind.listApprovals({ status: 'pending' }, finance)).approvals).toEqual([]);
  });
});
