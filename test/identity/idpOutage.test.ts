/**
 * While the token issuer is down or answers garbage, Gatehouse cannot tell a good token from a
 * bad one: it answers 503 `unavailable`, never 401 `invalid_token` (which tells an MCP client to
 * throw its valid token away, and ends a history stream as if the key were revoked) and never a
 * 500. Against a scripted issuer on loopback, through the /v1 handler.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type HttpApp } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createGatehouse,
  createTokenAuthenticator,
  type Gatehouse,
  parseIdentityConfig,
} from '../../src/index.js';
import { type ScriptedIssuer, startScriptedIssuer } from './scriptedIssuer.js';

const PUBLIC_URL = 'http://gatehouse.test';
const AUDIENCE = `${PUBLIC_URL}/v1`;

let idp: ScriptedIssuer;
let gatehouse: Gatehouse;

/** A fresh app (so a fresh key set cache) trusting the scripted issuer. */
function app(extra: Record<string, unknown> = {}): HttpApp {
  const config = parseIdentityConfig({
    issuers: [
      {
        issuer: idp.issuer,
        jwks_uri: idp.jwksUri,
        audiences: [AUDIENCE],
        tenant: 'acme',
        map: [{ claim: 'scope', value: 'gatehouse.read', scopes: ['state:read', 'history:read'] }],
        ...extra,
      },
    ],
  });
  return createHttpApp({
    gatehouse,
    rateLimit: false,
    identity: { tokens: createTokenAuthenticator({ config }), publicUrl: PUBLIC_URL },
  });
}

async function me(on: HttpApp, bearer: string) {
  const res = await on.request('/v1/me', { headers: { authorization: `Bearer ${bearer}` } });
  return {
    status: res.status,
    challenge: res.headers.get('www-authenticate') ?? '',
    retryAfter: res.headers.get('retry-after'),
    body: await res.text(),
  };
}

beforeAll(async () => {
  idp = await startScriptedIssuer();
  gatehouse = createGatehouse({ store: openSqliteStore() });
});
afterEach(() => idp.heal());
afterAll(async () => {
  await gatehouse.store.close();
  await idp.close();
});

describe('the key set cannot be fetched', () => {
  it.each([
    ['HTTP 500', { status: 500, body: '{"error":"boom"}' }],
    ['HTTP 503 with an HTML page', { status: 503, contentType: 'text/html', body: '<html>down</html>' }],
    ['200 with a maintenance page', { contentType: 'text/html', body: '<html>maintenance</html>' }],
  ])('%s: a valid token gets 503, not 401 invalid_token, and so does the next', async (_, answer) => {
    const token = await idp.sign({ aud: AUDIENCE, scope: 'gatehouse.read' });
    const gate = app();
    idp.fail('/jwks', answer);
    const first = await me(gate, token);
    expect(first.status, first.body).toBe(503);
    expect(first.challenge).not.toContain('invalid_token');
    // Within the cooldown the key set is not fetched again; the answer says when to retry.
    const second = await me(gate, token);
    expect(second.status, second.body).toBe(503);
    expect(Number(second.retryAfter)).toBeGreaterThan(0);

    idp.heal();
    expect((await me(app(), token)).status).toBe(200);
  });
});

describe('the introspection endpoint is broken', () => {
  const introspecting = () =>
    app({ introspection: { endpoint: idp.introspectionUri, client_id: 'gatehouse', client_secret: 's' } });

  it.each([
    ['200 with a proxy error page', { contentType: 'text/html', body: '<html>bad gateway</html>' }],
    ['JSON null', { body: 'null' }],
  ])('%s: an opaque token gets 503, not a 500, and the failure is not kept', async (_, answer) => {
    const gate = introspecting();
    idp.fail('/introspect', answer);
    const r = await me(gate, 'opaque-token-of-a-user');
    expect(r.status, r.body).toBe(503);
    expect(r.challenge).not.toContain('invalid_token');

    idp.heal(); // it now says the token is not active
    const healed = await me(gate, 'opaque-token-of-a-user');
    expect(healed.status).toBe(401);
    expect(healed.challenge).toContain('invalid_token');
  });
});
