/**
 * An approval's params are shown with their secrets masked, but its binding digest is an unsalted
 * SHA-256 over the raw params and everything else the approval shows (session, action, state
 * versions, policy revision, rules). Shown beside the masked params, it gave a short secret away:
 * whoever reads approvals (a decider, a history reader, a webhook receiver of
 * `approval.requested`) found a masked 4-digit passcode by trying 10,000 guesses.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { approvalDigest } from '../../src/approvals/approvalDigest.js';
import {
  type Approval,
  type CallContext,
  compilePolicy,
  createGatehouse,
  type Gatehouse,
  type Store,
} from '../../src/index.js';
import { APPROVAL_POLICY } from '../support/policies.js';

const agent: CallContext = { keyId: 'key_agent', scopes: ['gate:evaluate'], labels: [] };
const decider: CallContext = { keyId: 'key_decider', scopes: ['approvals:decide'], labels: [] };
const refund = (passcode: string) => ({
  session_id: 's1',
  action: 'refunds.issue',
  params: { order: 'o-1', passcode },
});

let store: Store;
let gh: Gatehouse;
beforeEach(() => {
  store = openSqliteStore();
  gh = createGatehouse({ store, policy: compilePolicy(APPROVAL_POLICY) });
});
afterEach(async () => {
  await store.close();
});

/** The 4-digit passcode whose binding digest is `digest`, given what the approval shows. */
function guessPasscode(
  shown: Pick<Approval, 'session_id' | 'action' | 'params' | 'state_versions' | 'policy' | 'rules'>,
  digest: unknown,
) {
  for (let i = 0; i < 10_000; i += 1) {
    const guess = String(i).padStart(4, '0');
    const candidate = approvalDigest({
      tenantId: 'default',
      sessionId: shown.session_id,
      action: shown.action,
      params: { ...shown.params, passcode: guess },
      stateVersions: shown.state_versions,
      policyRevision: shown.policy.revision,
      rules: shown.rules,
    });
    if (candidate === digest) return guess;
  }
  return undefined;
}

describe('the digest an approval shows', () => {
  it('does not give away a secret its params show masked', async () => {
    const held = await gh.evaluate(refund('4821'), agent);
    const id = held.approval!.id;

    const read = await gh.getApproval(id, {}, decider);
    expect(read.params).toEqual({ order: 'o-1', passcode: '[secret masked]' });
    expect(read.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(guessPasscode(read, read.digest)).toBeUndefined();

    const listed = (await gh.listApprovals({}, decider)).approvals[0]!;
    expect(guessPasscode(listed, listed.digest)).toBeUndefined();

    const requested = (await gh.readHistory({ type: 'approval.requested' }, decider)).events[0]!;
    expect(guessPasscode(read, requested.data['digest'])).toBeUndefined();

    const approved = await gh.approve(id, {}, decider);
    expect(guessPasscode(approved, approved.digest)).toBeUndefined();

    // The binding itself is unchanged: only the exact call is released, once.
    expect((await gh.evaluate(refund('4822'), agent)).verdict).toBe('Block');
    const released = await gh.evaluate(refund('4821'), agent);
    expect(released).toMatchObject({ verdict: 'Allow', approval: { id } });
  });

  it('is the binding digest when nothing was masked', async () => {
    const held = await gh.evaluate(
      { session_id: 's1', action: 'refunds.issue', params: { order: 'o-2' } },
      agent,
    );
    const read = await gh.getApproval(held.approval!.id, {}, decider);
    expect(read.digest).toBe(
      approvalDigest({
        tenantId: 'default',
        sessionId: 's1',
        action: 'refunds.issue',
        params: { order: 'o-2' },
        stateVersions: read.state_versions,
        policyRevision: read.policy.revision,
        rules: read.rules,
      }),
    );
  });
});
