/**
 * "Every event a caller causes records its principal" (docs/identity.md) holds for a policy
 * activation too: `PUT /v1/policy` by a token holder records the issuer, subject, client and
 * actor on `policy.activated`, by a key holder its key ID; the instance recording its own policy
 * file, and an in-process call with no caller, record none. The subject stays out of the chain's
 * rows, as on every other event. Tokens from a scripted issuer on loopback, through /v1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type HttpApp } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  createTokenAuthenticator,
  type Gatehouse,
  parseIdentityConfig,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { BUDGET_POLICY } from '../support/policies.js';
import { type ScriptedIssuer, startScriptedIssuer } from './scriptedIssuer.js';

const PUBLIC_URL = 'http://gatehouse.test';
const AUDIENCE = `${PUBLIC_URL}/v1`;
const SUBJECT = 'alice-5f1c@idp.example';
const TENANT = { tenantId: 'acme' };

let idp: ScriptedIssuer;
let store: Store;
let gatehouse: Gatehouse;
let app: HttpApp;

/** `PUT /v1/policy` replacing the active revision with `source`. */
async function activate(bearer: string, source: string): Promise<void> {
  const headers = { authorization: `Bearer ${bearer}` };
  const etag = (await app.request('/v1/policy', { headers })).headers.get('etag')!;
  const res = await app.request('/v1/policy', {
    method: 'PUT',
    headers: { ...headers, 'content-type': 'application/json', 'if-match': etag },
    body: JSON.stringify({ policy: source }),
  });
  expect(res.status, await res.text()).toBe(200);
}

/** The principals of the tenant's `policy.activated` events, oldest first. */
async function activatedBy(): Promise<unknown[]> {
  const page = await gatehouse.readHistory({ type: 'policy.activated', order: 'asc' }, TENANT);
  return page.events.map((e) => e.data['principal']);
}

const variant = (n: number) =>
  `${BUDGET_POLICY}  "files.*":\n    rules:\n      - name: v${n}\n        when: "true"\n        verdict: Block\n        message: "v${n}"\n`;

beforeAll(async () => {
  idp = await startScriptedIssuer();
  store = openSqliteStore();
  gatehouse = createGatehouse({
    store,
    policy: compilePolicy(BUDGET_POLICY, { source: 'policy.yaml' }),
    policyOrigin: 'file',
  });
  const config = parseIdentityConfig({
    issuers: [
      {
        issuer: idp.issuer,
        jwks_uri: idp.jwksUri,
        audiences: [AUDIENCE],
        tenant: 'acme',
        map: [{ claim: 'scope', value: 'gatehouse.admin', scopes: ['admin'] }],
      },
    ],
  });
  app = createHttpApp({
    gatehouse,
    rateLimit: false,
    identity: { tokens: createTokenAuthenticator({ config }), publicUrl: PUBLIC_URL },
  });
});
afterAll(async () => {
  app.close();
  await store.close();
  await idp.close();
});

describe('who activated a policy', () => {
  it('records the token holder, the key holder, and no one for the instance or an in-process call', async () => {
    const token = await idp.sign({
      aud: AUDIENCE,
      scope: 'gatehouse.admin',
      sub: SUBJECT,
      client_id: 'ops-console',
      act: { sub: 'agent-7' },
    });
    await activate(token, variant(1));
    const key = await createApiKey(
      store,
      { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
      { scopes: ['admin'], tenantId: 'acme' },
    );
    await activate(key.secret, variant(2));
    const { revision } = await gatehouse.getActivePolicy(TENANT);
    await gatehouse.activatePolicy({ policy: variant(3), expected_revision: revision }, TENANT);

    expect(await activatedBy()).toEqual([
      undefined, // the instance's policy file, recorded at the tenant's first use
      { kind: 'oidc', iss: idp.issuer, sub: SUBJECT, client_id: 'ops-console', act: 'agent-7' },
      { kind: 'key', key_id: key.key.id },
      undefined,
    ]);

    // The subject is kept beside the chain (a salted commitment in the event), not in its rows.
    const chain: unknown[] = [];
    for await (const row of store.dumpRows()) {
      if ((row as { table?: string }).table === 'events') chain.push(row);
    }
    expect(JSON.stringify(chain)).toContain('ops-console');
    expect(JSON.stringify(chain)).not.toContain(SUBJECT);
    expect((await gatehouse.verifyHistory(TENANT)).ok).toBe(true);
  });
});
