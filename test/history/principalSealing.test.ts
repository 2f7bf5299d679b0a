/**
 * Who acted, under the data-lifecycle rules: an IdP token's subject (and a delegated actor) can
 * name a person, so history keeps it beside the chain as a salted commitment, like the caller's
 * own fields, and a session's erasure removes it; a key ID, the issuer and the client stay in the
 * envelope. The chain verifies before and after.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { sealEventData } from '../../src/history/commitments.js';
import { type CallContext, createGatehouse, type Gatehouse, type Store } from '../../src/index.js';

const SUBJECT = 'alice-4f1d9c@idp.example';
const token: CallContext = {
  keyId: 'sub_0123456789abcdef',
  principal: {
    kind: 'oidc',
    iss: 'https://idp.example',
    sub: SUBJECT,
    client_id: 'agent-app',
    act: 'bob-7e21@idp.example',
  },
};

let store: Store;
let gh: Gatehouse;

beforeEach(() => {
  store = openSqliteStore();
  gh = createGatehouse({ store });
});
afterEach(async () => {
  await store.close();
});

async function rawChain(): Promise<string> {
  const rows: unknown[] = [];
  for await (const row of store.dumpRows()) {
    if ((row as { table?: string }).table === 'events') rows.push(row);
  }
  return JSON.stringify(rows);
}

describe('the principal under the data-lifecycle rules', () => {
  it('seals a token subject and actor on every event type, and leaves a key ID in the envelope', () => {
    const salts = () => '0'.repeat(32);
    const oidc = sealEventData('policy.activated', { revision: 'r', principal: token.principal }, salts);
    expect(oidc.envelope['principal']).toEqual({
      kind: 'oidc',
      iss: 'https://idp.example',
      sub: null,
      client_id: 'agent-app',
      act: null,
    });
    expect(Object.keys(oidc.envelope['commitments'] as object).sort()).toEqual([
      '/principal/act',
      '/principal/sub',
    ]);
    const key = sealEventData('gate_evaluation', { principal: { kind: 'key', key_id: 'key_1' } }, salts);
    expect(key).toEqual({ envelope: { principal: { kind: 'key', key_id: 'key_1' } }, fields: null });
  });

  it("reads back the subject, keeps it out of the chain's rows, and erases it with the session", async () => {
    await gh.recordState(
      { session_id: 's1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' },
      token,
    );
    const [event] = (await gh.readHistory({ session_id: 's1' })).events;
    expect(event!.data['principal']).toMatchObject({
      kind: 'oidc',
      sub: SUBJECT,
      act: 'bob-7e21@idp.example',
    });
    const chain = await rawChain();
    expect(chain).toContain('https://idp.example'); // the scan reads the events' rows
    expect(chain).not.toContain(SUBJECT);

    await gh.eraseSession({ session_id: 's1', reference: 'DSR-1' });
    const after = (await gh.readHistory({ session_id: 's1', order: 'asc' })).events[0]!;
    expect(after.data['principal']).toMatchObject({
      kind: 'oidc',
      iss: 'https://idp.example',
      sub: { erased: true },
      client_id: 'agent-app',
    });
    expect(JSON.stringify(after)).not.toContain(SUBJECT);
    const verify = await gh.verifyHistory();
    expect(verify.ok).toBe(true);
  });
});
