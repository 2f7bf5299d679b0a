/**
 * Approvals in the core, on a real SQLite store: a held action, released only by an approval
 * bound to exactly that action and state. Every replay attempt is refused; expiry follows the
 * injected clock; every transition is an event and the chain verifies.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type CallContext,
  compilePolicy,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  GatehouseError,
  type Store,
} from '../../src/index.js';
import { manualClock } from '../store/contract.js';
import { APPROVAL_POLICY } from '../support/policies.js';

const agent: CallContext = { keyId: 'key_agent', scopes: ['gate:evaluate'], labels: [] };
const finance: CallContext = { keyId: 'key_finance', scopes: ['approvals:decide'], labels: ['finance'] };
const ops: CallContext = { keyId: 'key_ops', scopes: ['approvals:decide'], labels: ['ops'] };

const transfer = (amount: unknown, session = 's1') => ({
  session_id: session,
  action: 'payments.transfer',
  params: { amount, to: 'acct-9' },
});

async function code(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatehouseError);
  return (error as GatehouseError).code;
}

let store: Store;
let gh: Gatehouse;
let clock: ReturnType<typeof manualClock>;

beforeEach(async () => {
  store = openSqliteStore();
  clock = manualClock();
  gh = createGatehouse({
    store,
    clock,
    ids: createIdGenerator(clock),
    policy: compilePolicy(APPROVAL_POLICY),
  });
  for (const session of ['s1', 's2']) {
    await gh.recordState({
      session_id: session,
      key: 'budget.limit',
      value: '5000',
      type: 'fact',
      source: 'user_input',
    });
  }
});
afterEach(async () => {
  await store.close();
});

/** Holds a transfer and approves it as finance; returns the approval ID. */
async function heldAndApproved(amount: unknown = 9000): Promise<string> {
  const held = await gh.evaluate(transfer(amount), agent);
  const id = held.approval!.id;
  await gh.approve(id, { comment: 'ok' }, finance);
  return id;
}

describe('a held action', () => {
  it('is a Block with approval_required and a pending approval; the same action again gets the same one', async () => {
    const first = await gh.evaluate(transfer(9000), agent);
    expect(first).toMatchObject({
      verdict: 'Block',
      allowed: false,
      approval: { status: 'pending', rules: ['large_transfer'], decided_by: null },
    });
    expect(first.approval!.id).toMatch(/^apr_/);
    expect(first.approval!.expires_at).toBe('2026-01-01T00:15:00.000Z');
    expect(first.reasons.map((r) => r.rule)).toEqual(['large_transfer', 'approval_required']);
    expect(first.reason).toBe(
      `Held for approval ${first.approval!.id} (expires 2026-01-01T00:15:00.000Z): Transfer of 9000 exceeds the budget of 5000. Do not perform this action until a person approves it.`,
    );

    const again = await gh.evaluate(transfer(9000), agent);
    expect(again.approval!.id).toBe(first.approval!.id);
    expect((await gh.listApprovals({}, agent)).approvals).toHaveLength(1);

    const approval = await gh.getApproval(first.approval!.id);
    expect(approval).toMatchObject({
      status: 'pending',
      session_id: 's1',
      action: 'payments.transfer',
      params: { amount: 9000, to: 'acct-9' },
      state_versions: { 'budget.limit': 1 },
      rules: ['large_transfer'],
      approvers: [['finance']],
      uses: 1,
      uses_left: 1,
      requested_by: 'key_agent',
      decision_id: first.decision_id,
    });
    expect(approval.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('an action within budget is not held, and a plain Block (missing key) has no approval', async () => {
    expect((await gh.evaluate(transfer(10), agent)).verdict).toBe('Allow');
    const missing = await gh.evaluate(transfer(9000, 's-empty'), agent);
    expect(missing.verdict).toBe('Block');
    expect(missing.approval).toBeUndefined();
    expect((await gh.listApprovals({}, agent)).approvals).toHaveLength(0);
  });

  it('once approved, the same evaluation is Allow citing the approval, once', async () => {
    const id = await heldAndApproved();
    const allowed = await gh.evaluate(transfer(9000), agent);
    expect(allowed).toMatchObject({
      verdict: 'Allow',
      allowed: true,
      reasons: [],
      approval: { id, status: 'used', decided_by: 'key_finance' },
    });
    expect(allowed.reason).toMatch(/^Approved by key_finance in approval apr_/);
    expect((await gh.getApproval(id)).status).toBe('used');

    // Second use: held again, under a new request.
    const second = await gh.evaluate(transfer(9000), agent);
    expect(second.verdict).toBe('Block');
    expect(second.approval!.status).toBe('pending');
    expect(second.approval!.id).not.toBe(id);
  });

  it('JSON spelling does not matter, types do: 9000.0 is the approved 9000, "9000" is not', async () => {
    await heldAndApproved(9000);
    const asString = await gh.evaluate(transfer('9000'), agent);
    expect(asString.verdict).toBe('Block');
    expect(asString.approval!.status).toBe('pending');
    expect((await gh.evaluate(transfer(9000.0), agent)).verdict).toBe('Allow');
  });
});

describe('replays are refused', () => {
  it('different params', async () => {
    const id = await heldAndApproved(9000);
    const other = await gh.evaluate(transfer(9001), agent);
    expect(other.verdict).toBe('Block');
    expect(other.approval!.id).not.toBe(id);
    const otherRecipient = await gh.evaluate(
      { session_id: 's1', action: 'payments.transfer', params: { amount: 9000, to: 'acct-666' } },
      agent,
    );
    expect(otherRecipient.verdict).toBe('Block');
    // A `__proto__` key (an own key, as JSON.parse makes it) is part of the params, so of the digest.
    const withProto = await gh.evaluate(
      JSON.parse(
        '{"session_id":"s1","action":"payments.transfer","params":{"amount":9000,"to":"acct-9","__proto__":{"to":"acct-666"}}}',
      ),
      agent,
    );
    expect(withProto.verdict).toBe('Block');
    expect(withProto.approval!.id).not.toBe(id);
    expect((await gh.getApproval(id)).status).toBe('approved');
  });

  it('a changed state item the decision read', async () => {
    const id = await heldAndApproved(9000);
    await gh.recordState({
      session_id: 's1',
      key: 'budget.limit',
      value: '6000',
      type: 'fact',
      source: 'user_input',
    });
    const after = await gh.evaluate(transfer(9000), agent);
    expect(after.verdict).toBe('Block');
    expect(after.state_versions).toEqual({ 'budget.limit': 2 });
    expect(after.approval!.id).not.toBe(id);
    // Setting it back is a new version: still not the approved state.
    await gh.recordState({
      session_id: 's1',
      key: 'budget.limit',
      value: '5000',
      type: 'fact',
      source: 'user_input',
    });
    expect((await gh.evaluate(transfer(9000), agent)).verdict).toBe('Block');
  });

  it('another session', async () => {
    const id = await heldAndApproved(9000);
    const elsewhere = await gh.evaluate(transfer(9000, 's2'), agent);
    expect(elsewhere.verdict).toBe('Block');
    expect(elsewhere.approval!.id).not.toBe(id);
  });

  it('another tenant cannot see, decide or use it', async () => {
    const held = await gh.evaluate(transfer(9000), agent);
    const id = held.approval!.id;
    expect(await code(gh.getApproval(id, {}, { tenantId: 'other' }))).toBe('not_found');
    expect(await code(gh.approve(id, {}, { ...finance, tenantId: 'other' }))).toBe('not_found');
  });

  it('after expiry (injected clock): approved but unused, and pending', async () => {
    const id = await heldAndApproved(9000);
    clock.advance(15 * 60 * 1000);
    const late = await gh.evaluate(transfer(9000), agent);
    expect(late.verdict).toBe('Block');
    expect(late.approval!.id).not.toBe(id);
    expect((await gh.getApproval(id)).status).toBe('expired');

    // A pending one expires when read; deciding it afterwards is refused.
    const pendingId = late.approval!.id;
    clock.advance(15 * 60 * 1000 + 1);
    expect((await gh.getApproval(pendingId)).status).toBe('expired');
    expect(await code(gh.approve(pendingId, {}, finance))).toBe('already_recorded');
    const expired = await gh.readHistory({ type: 'approval.expired', order: 'asc' });
    expect(expired.events.map((e) => e.data['approval_id'])).toEqual([id, pendingId]);
  });

  it('a second use', async () => {
    const id = await heldAndApproved(9000);
    expect((await gh.evaluate(transfer(9000), agent)).verdict).toBe('Allow');
    const again = await gh.evaluate(transfer(9000), agent);
    expect(again.verdict).toBe('Block');
    expect(again.approval!.id).not.toBe(id);
    expect(await code(gh.approve(id, {}, finance))).toBe('already_recorded');
  });

  it('a denied request: Block approval_denied until it would have expired, then a new request', async () => {
    const held = await gh.evaluate(transfer(9000), agent);
    const id = held.approval!.id;
    const denied = await gh.deny(id, { comment: 'not this month' }, finance);
    expect(denied).toMatchObject({ status: 'denied', decided_by: 'key_finance', comment: 'not this month' });
    const after = await gh.evaluate(transfer(9000), agent);
    expect(after).toMatchObject({
      verdict: 'Block',
      approval: { id, status: 'denied', decided_by: 'key_finance' },
    });
    expect(after.reasons.at(-1)!.rule).toBe('approval_denied');
    expect(await code(gh.approve(id, {}, finance))).toBe('already_recorded');
    clock.advance(15 * 60 * 1000);
    const later = await gh.evaluate(transfer(9000), agent);
    expect(later.approval).toMatchObject({ status: 'pending' });
    expect(later.approval!.id).not.toBe(id);
  });

  it('self-approval, and an approver without the label', async () => {
    const held = await gh.evaluate(transfer(9000), {
      ...finance,
      scopes: ['gate:evaluate', 'approvals:decide'],
    });
    const id = held.approval!.id;
    expect(await code(gh.approve(id, {}, finance))).toBe('forbidden');
    expect(await code(gh.approve(id, {}, ops))).toBe('forbidden');
    // An admin key holds every scope, not every label.
    expect(await code(gh.approve(id, {}, { keyId: 'key_admin', scopes: ['admin'] }))).toBe('forbidden');
    expect((await gh.getApproval(id)).status).toBe('pending');
    await gh.approve(id, {}, { keyId: 'key_finance_2', scopes: ['approvals:decide'], labels: ['finance'] });
    expect((await gh.getApproval(id)).status).toBe('approved');
  });

  it('every key that asked for the pending approval is refused as its approver, as the first one is', async () => {
    const a: CallContext = {
      keyId: 'key_a',
      scopes: ['gate:evaluate', 'approvals:decide'],
      labels: ['finance'],
    };
    const b: CallContext = {
      keyId: 'key_b',
      scopes: ['gate:evaluate', 'approvals:decide'],
      labels: ['finance'],
    };
    const held = await gh.evaluate(transfer(9000), a);
    const id = held.approval!.id;
    // B asks for the same call: the same pending approval, and B is now one of its requesters.
    expect((await gh.evaluate(transfer(9000), b)).approval!.id).toBe(id);
    expect((await gh.evaluate(transfer(9000), b)).approval!.id).toBe(id);
    expect(await gh.getApproval(id)).toMatchObject({ requested_by: 'key_a', requesters: ['key_a', 'key_b'] });

    const refusal = async (ctx: CallContext) => {
      const error = await gh.approve(id, {}, ctx).then(
        () => null,
        (e: unknown) => e as GatehouseError,
      );
      return error && { code: error.code, message: error.message };
    };
    const selfRefusal = await refusal(a);
    expect(selfRefusal).toEqual({
      code: 'forbidden',
      message: `The caller that asked for approval '${id}' cannot decide it; another approver must.`,
    });
    expect(await refusal(b)).toEqual(selfRefusal);
    expect(await code(gh.deny(id, {}, b))).toBe('forbidden');
    expect((await gh.getApproval(id)).status).toBe('pending');
    // Had B approved, its own next evaluate would have been released by it.
    await gh.approve(id, {}, finance);
    expect((await gh.evaluate(transfer(9000), b)).verdict).toBe('Allow');
  });

  it('the key that approved a call is not released by its approval, though it never asked for it', async () => {
    const held = await gh.evaluate(transfer(9000), agent);
    const id = held.approval!.id;
    await gh.approve(id, {}, finance);
    const own = await gh.evaluate(transfer(9000), finance);
    expect(own).toMatchObject({ verdict: 'Block', allowed: false, approval: { id, status: 'approved' } });
    expect(own.reason).toMatch(
      new RegExp(
        `^Approval ${id} was decided by this caller \\(key_finance\\): it cannot release the action it approved itself\\.`,
      ),
    );
    // Not used up: the agent that asked still gets it.
    expect((await gh.getApproval(id)).status).toBe('approved');
    expect((await gh.evaluate(transfer(9000), agent)).verdict).toBe('Allow');
  });

  it("an agent's key reads only the approvals it asked for; deciders and history readers read all", async () => {
    const other: CallContext = { keyId: 'key_other', scopes: ['gate:evaluate'], labels: [] };
    const id = (await gh.evaluate(transfer(9000), agent)).approval!.id;
    const error = await gh.getApproval(id, { wait: 30 }, other).then(
      () => null,
      (e: unknown) => e as GatehouseError,
    );
    expect(error).toMatchObject({ code: 'not_found', message: `Approval '${id}' was not found.` });
    expect((await gh.getApproval(id, {}, agent)).id).toBe(id);
    for (const reader of [
      finance,
      { keyId: 'key_audit', scopes: ['gate:evaluate', 'history:read'] },
      { keyId: 'key_admin', scopes: ['admin'] },
      undefined,
    ] as const) {
      expect((await gh.getApproval(id, {}, reader)).id).toBe(id);
    }
    await gh.evaluate(transfer(9000), other);
    expect((await gh.getApproval(id, {}, other)).id).toBe(id);
  });

  it('allow_self_approval lets every requester approve', async () => {
    const refund = { session_id: 's1', action: 'refunds.issue', params: { order: 'o-2' } };
    const held = await gh.evaluate(refund, agent);
    expect((await gh.evaluate(refund, finance)).approval!.id).toBe(held.approval!.id);
    expect((await gh.getApproval(held.approval!.id)).requesters).toEqual(['key_agent', 'key_finance']);
    expect(await gh.approve(held.approval!.id, {}, finance)).toMatchObject({ status: 'approved' });
  });
});

describe('policy options', () => {
  it('uses: 2 releases two evaluations; allow_self_approval lets the asker approve', async () => {
    const refund = { session_id: 's1', action: 'refunds.issue', params: { order: 'o-1' } };
    const held = await gh.evaluate(refund, finance);
    await gh.approve(held.approval!.id, {}, finance);
    const one = await gh.evaluate(refund, finance);
    expect(one.approval).toMatchObject({ status: 'approved' });
    expect(one.reason).toContain('1 use(s) left');
    expect((await gh.evaluate(refund, finance)).approval).toMatchObject({ status: 'used' });
    expect((await gh.evaluate(refund, finance)).verdict).toBe('Block');
  });

  it('refuses approval: on a Warn or a shadow rule, and a bad duration or approver, at load', () => {
    const bad = `
version: 1
rules:
  - name: w
    when: "true"
    verdict: Warn
    approval: { expires_in: 15m }
  - name: s
    when: "true"
    verdict: Block
    mode: shadow
    approval: {}
  - name: d
    when: "true"
    verdict: Block
    approval: { expires_in: 8d, approvers: ["Not A Label"], colour: red }
`;
    const error = (() => {
      try {
        compilePolicy(bad);
        return null;
      } catch (e) {
        return e as GatehouseError;
      }
    })();
    expect(error?.code).toBe('invalid_request');
    const paths = error!.errors.map((e) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'rules[0].approval',
        'rules[1].approval',
        'rules[2].approval.expires_in',
        'rules[2].approval.approvers[0]',
        'rules[2].approval.colour',
      ]),
    );
    expect(error!.message).toContain('expires_in, approvers, uses, allow_self_approval');
  });

  it('15m and 900s are the same policy revision', () => {
    const a = compilePolicy(APPROVAL_POLICY);
    const b = compilePolicy(APPROVAL_POLICY.replace('expires_in: 15m', 'expires_in: 900s'));
    expect(b.revision).toBe(a.revision);
  });
});

describe('history', () => {
  it('records every transition, in order, and the chain verifies', async () => {
    const id = await heldAndApproved(9000);
    await gh.evaluate(transfer(9000), agent);
    const denied = await gh.evaluate(transfer(7000), agent);
    await gh.deny(denied.approval!.id, {}, finance);
    const expiring = await gh.evaluate(transfer(8000), agent);
    clock.advance(16 * 60 * 1000);
    await gh.listApprovals({}, finance);
    const types = (await gh.readHistory({ order: 'asc', limit: 500 })).events
      .map((e) => e.type)
      .filter((t) => t.startsWith('approval.'));
    expect(types).toEqual([
      'approval.requested',
      'approval.approved',
      'approval.used',
      'approval.requested',
      'approval.denied',
      'approval.requested',
      'approval.expired',
    ]);
    const used = (await gh.readHistory({ type: 'approval.used' })).events[0]!;
    expect(used.data).toMatchObject({ approval_id: id, decided_by: 'key_finance', uses_left: 0 });
    expect((await gh.getApproval(expiring.approval!.id)).status).toBe('expired');
    expect(await gh.verifyHistory()).toMatchObject({ ok: true });
  });

  it('lists by status and session with a cursor', async () => {
    for (const amount of [6000, 7000, 8000]) await gh.evaluate(transfer(amount), agent);
    await gh.evaluate(transfer(6000, 's2'), agent);
    const first = await gh.listApprovals({ status: 'pending', session_id: 's1', limit: 2 }, finance);
    expect(first.approvals).toHaveLength(2);
    const second = await gh.listApprovals(
      { status: 'pending', session_id: 's1', limit: 2, cursor: first.next_cursor! },
      finance,
    );
    expect(second.approvals).toHaveLength(1);
    expect(second.next_cursor).toBeNull();
    expect([...first.approvals, ...second.approvals].map((a) => a.params['amount'])).toEqual([
      8000, 7000, 6000,
    ]);
    expect(await code(gh.listApprovals({ cursor: 'nonsense' }, finance))).toBe('invalid_request');
  });

  it('waits for a decision: a local decision wakes the wait', async () => {
    const held = await gh.evaluate(transfer(9000), agent);
    const waiting = gh.getApproval(held.approval!.id, { wait: 30 }, agent);
    await gh.approve(held.approval!.id, {}, finance);
    expect((await waiting).status).toBe('approved');
    expect(await code(gh.getApproval(held.approval!.id, { wait: 61 }))).toBe('invalid_request');
  });
});
