/**
 * Gatehouse as an OAuth resource server, through the web-standard handler, with tokens from a
 * real OpenID Provider on loopback: the RFC 9728 metadata, the 401 and 403 challenges, /v1 and
 * /mcp accepting the IdP's JWT access tokens, API keys still working, and each refusal on its own.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type HttpApp } from '../../adapters/http/index.js';
import { stepUpChallenge } from '../../adapters/http/pipeline.js';
import { protectedResourceUrls } from '../../adapters/http/protectedResource.js';
import { createMcpHttpHandler } from '../../adapters/mcp/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createApiKey,
  createGatehouse,
  createIdGenerator,
  createTokenAuthenticator,
  type Gatehouse,
  type IdentityConfig,
  parseIdentityConfig,
  systemRandomBytes,
} from '../../src/index.js';
import { CLIENT_SECRET, startTestIdp, type TestIdp } from './testIdp.js';

const PUBLIC_URL = 'http://gatehouse.test';
const MCP_RESOURCE = `${PUBLIC_URL}/mcp`;
const V1_AUDIENCE = `${PUBLIC_URL}/v1`;
const METADATA_URL = `${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp`;

const RULES = [
  { claim: 'scope', value: 'gatehouse.read', scopes: ['state:read', 'history:read'] },
  { claim: 'scope', value: 'gatehouse.write', scopes: ['state:write', 'gate:evaluate'] },
  { claim: 'scope', value: 'gatehouse.approve', scopes: ['approvals:decide'], labels: ['finance'] },
];

let idp: TestIdp;
let gatehouse: Gatehouse;
let app: HttpApp;
let adminKey: string;

function buildApp(config: IdentityConfig): HttpApp {
  const tokens = createTokenAuthenticator({ config, mcpResource: MCP_RESOURCE });
  const metadata = protectedResourceUrls(PUBLIC_URL).metadata;
  return createHttpApp({
    gatehouse,
    rateLimit: false,
    identity: { tokens, publicUrl: PUBLIC_URL },
    mcp: createMcpHttpHandler({
      gatehouse,
      insufficientScopeChallenge: stepUpChallenge({ tokens, resourceMetadataUrl: metadata }),
    }),
  });
}

beforeAll(async () => {
  idp = await startTestIdp();
  const store = openSqliteStore();
  gatehouse = createGatehouse({ store });
  adminKey = (
    await createApiKey(
      store,
      { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
      { scopes: ['admin'], tenantId: 'acme' },
    )
  ).secret;
  app = buildApp(
    parseIdentityConfig({
      issuers: [{ issuer: idp.issuer, audiences: [V1_AUDIENCE], tenant: 'acme', map: RULES }],
    }),
  );
});

afterAll(async () => {
  app.close();
  await gatehouse.store.close();
  await idp.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function get(path: string, token?: string) {
  return app.request(path, { headers: token === undefined ? {} : bearer(token) });
}

async function mcpCall(token: string, method: string, params: Record<string, unknown>, target = app) {
  return target.request('/mcp', {
    method: 'POST',
    headers: {
      ...bearer(token),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

/** A write by a token holding only `gatehouse.read`, on `/v1` (an item) and on `/mcp` (`record_state`). */
async function readerWrites(target: HttpApp): Promise<{ v1: Response; mcp: Response }> {
  const reader = (resource: string) =>
    idp.clientCredentials({ clientId: 'reader', resource, scope: 'gatehouse.read' });
  const item = { session_id: 's1', key: 'budget.limit', value: '11', type: 'fact', source: 'user_input' };
  const v1 = await target.request('/v1/state/items', {
    method: 'POST',
    headers: { ...bearer(await reader(V1_AUDIENCE)), 'content-type': 'application/json' },
    body: JSON.stringify(item),
  });
  const mcp = await mcpCall(
    await reader(MCP_RESOURCE),
    'tools/call',
    { name: 'record_state', arguments: item },
    target,
  );
  return { v1, mcp };
}

/** A token signed with the IdP's own key but with claims the IdP would never issue. */
async function forge(
  claims: Record<string, unknown>,
  options: { alg?: string; key?: JWK & { kid: string } } = {},
): Promise<string> {
  const jwk = options.key ?? idp.privateJwk;
  const key = await importJWK(jwk, 'ES256');
  const seconds = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: idp.issuer,
    sub: 'user-1',
    aud: V1_AUDIENCE,
    iat: seconds,
    exp: seconds + 300,
    scope: 'gatehouse.read',
    client_id: 'forged',
    ...claims,
  })
    .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: jwk.kid, typ: 'at+jwt' })
    .sign(key);
}

describe('Protected Resource Metadata (RFC 9728)', () => {
  it('is served at the path-aware and the root well-known URLs, with the configured resource', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]) {
      // A Host header of an attacker's choosing changes nothing: the resource is configured.
      const res = await app.request(`http://evil.example${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        resource: MCP_RESOURCE,
        authorization_servers: [idp.issuer],
        scopes_supported: ['gatehouse.read', 'gatehouse.write', 'gatehouse.approve'],
        bearer_methods_supported: ['header'],
      });
    }
  });

  it('every 401 names the metadata and the scopes to ask for, on /mcp and /v1', async () => {
    for (const res of [
      await app.request('/mcp', { method: 'POST' }),
      await get('/v1/me'),
      await get('/v1/me', 'not-a-token'),
    ]) {
      expect(res.status).toBe(401);
      const challenge = res.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer /);
      expect(challenge).toContain(`resource_metadata="${METADATA_URL}"`);
      expect(challenge).toContain('scope="gatehouse.read gatehouse.write gatehouse.approve"');
    }
    // A presented but invalid token is `invalid_token` (RFC 6750 §3.1); a missing one is not.
    expect((await get('/v1/me', 'a.b.c')).headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await get('/v1/me')).headers.get('www-authenticate')).not.toContain('error=');
  });
});

describe('tokens from the IdP', () => {
  it('a client-credentials token for the /v1 audience reads and writes /v1 in its tenant, with its principal', async () => {
    const token = await idp.clientCredentials({
      clientId: 'writer',
      resource: V1_AUDIENCE,
      scope: 'gatehouse.read gatehouse.write',
    });
    const me = await get('/v1/me', token);
    expect(me.status).toBe(200);
    const body = (await me.json()) as { tenant_id: string; scopes: string[]; key_id: string };
    expect(body.tenant_id).toBe('acme');
    expect(body.scopes.sort()).toEqual(['gate:evaluate', 'history:read', 'state:read', 'state:write']);
    expect(body.key_id).toMatch(/^sub_/);
    const write = await app.request('/v1/state/items', {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({
        session_id: 's1',
        key: 'budget.limit',
        value: '10',
        type: 'fact',
        source: 'user_input',
      }),
    });
    expect(write.status).toBe(201);
  });

  it('a token for the MCP resource drives the MCP SDK client over /mcp', async () => {
    const token = await idp.clientCredentials({
      clientId: 'writer',
      resource: MCP_RESOURCE,
      scope: 'gatehouse.read gatehouse.write',
    });
    const client = new Client({ name: 'identity-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
      requestInit: { headers: bearer(token) },
      fetch: (input, init) => app.fetch(new Request(input, init)),
    });
    await client.connect(transport);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('record_state');
    const result = await client.callTool({
      name: 'record_state',
      arguments: { session_id: 's2', key: 'trip.city', value: 'Lyon', type: 'fact', source: 'user_input' },
    });
    expect(result.isError).toBeFalsy();
    await client.close();
  });

  it('a tool call beyond the token scopes is HTTP 403 insufficient_scope naming the scope to ask for (step-up)', async () => {
    const token = await idp.clientCredentials({
      clientId: 'reader',
      resource: MCP_RESOURCE,
      scope: 'gatehouse.read',
    });
    const res = await mcpCall(token, 'tools/call', {
      name: 'record_state',
      arguments: { session_id: 's3', key: 'trip.city', value: 'Lyon', type: 'fact', source: 'user_input' },
    });
    expect(res.status).toBe(403);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="gatehouse.write"');
    expect(challenge).toContain(`resource_metadata="${METADATA_URL}"`);
    // A tool within its scopes still answers.
    const read = await mcpCall(token, 'tools/call', {
      name: 'read_history',
      arguments: { session_id: 's3' },
    });
    expect(read.status).toBe(200);
  });

  it('a /v1 operation beyond the token scopes is 403 insufficient_scope with the scope value', async () => {
    const { v1 } = await readerWrites(app);
    expect(v1.status).toBe(403);
    expect(v1.headers.get('www-authenticate')).toContain(
      'error="insufficient_scope", scope="gatehouse.write"',
    );
  });

  it("a step-up names the scope value the token's own issuer maps, not another issuer's", async () => {
    // Another trusted issuer, listed first, maps its own value to the same scopes; its keys are
    // never fetched (no token of it is sent).
    const other = {
      issuer: 'https://other-idp.test',
      jwks_uri: 'https://other-idp.test/jwks',
      audiences: [V1_AUDIENCE],
      tenant: 'acme',
      map: [{ claim: 'scope', value: 'other.write', scopes: ['state:write', 'gate:evaluate'] }],
    };
    const twoApp = buildApp(
      parseIdentityConfig({
        issuers: [other, { issuer: idp.issuer, audiences: [V1_AUDIENCE], tenant: 'acme', map: RULES }],
      }),
    );
    try {
      const { v1, mcp } = await readerWrites(twoApp);
      for (const res of [v1, mcp]) {
        expect(res.status).toBe(403);
        expect(res.headers.get('www-authenticate')).toContain(
          'error="insufficient_scope", scope="gatehouse.write"',
        );
      }
      // A first authorization (401) still offers every issuer's values: the client has not said whose token it holds.
      expect((await twoApp.request('/v1/me')).headers.get('www-authenticate')).toContain('other.write');
    } finally {
      twoApp.close();
    }
  });

  it('API keys keep working on /v1 and /mcp beside tokens', async () => {
    expect((await get('/v1/me', adminKey)).status).toBe(200);
    const res = await mcpCall(adminKey, 'tools/list', {});
    expect(res.status).toBe(200);
  });
});

describe('refusals, each on its own', () => {
  async function refused(token: string, path = '/v1/me'): Promise<string> {
    const res = path === '/mcp' ? await mcpCall(token, 'tools/list', {}) : await get(path, token);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    return ((await res.json()) as { detail: string }).detail;
  }

  it('the control: a forged-but-valid token is accepted (so each refusal below is about one thing)', async () => {
    expect((await get('/v1/me', await forge({}))).status).toBe(200);
  });

  it('wrong audience: a /v1 token on /mcp, an /mcp token on /v1', async () => {
    const v1 = await idp.clientCredentials({
      clientId: 'reader',
      resource: V1_AUDIENCE,
      scope: 'gatehouse.read',
    });
    expect(await refused(v1, '/mcp')).toMatch(/audience/);
    const mcp = await idp.clientCredentials({
      clientId: 'reader',
      resource: MCP_RESOURCE,
      scope: 'gatehouse.read',
    });
    expect(await refused(mcp, '/v1/me')).toMatch(/audience/);
  });

  it('a token the IdP issued for another resource', async () => {
    const other = await idp.clientCredentials({
      clientId: 'reader',
      resource: 'http://other.test/mcp',
      scope: 'gatehouse.read',
    });
    expect(await refused(other, '/mcp')).toMatch(/audience/);
    expect(await refused(other, '/v1/me')).toMatch(/audience/);
  });

  it('wrong issuer: an untrusted iss, and a trusted iss signed by another key', async () => {
    expect(await refused(await forge({ iss: 'http://127.0.0.1:1/other' }))).toMatch(/trusted issuer/);
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const stranger = { ...(await exportJWK(privateKey)), kid: idp.privateJwk.kid };
    expect(await refused(await forge({}, { key: stranger }))).toMatch(/signature/);
  });

  it('expired, beyond the clock tolerance', async () => {
    const past = Math.floor(Date.now() / 1000) - 120;
    expect(await refused(await forge({ exp: past, iat: past - 300 }))).toMatch(/expired/);
  });

  it('not yet valid (nbf in the future, beyond the clock tolerance)', async () => {
    expect(await refused(await forge({ nbf: Math.floor(Date.now() / 1000) + 600 }))).toMatch(/not valid yet/);
  });

  it('alg none', async () => {
    const valid = await forge({});
    const [, payload] = valid.split('.');
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url');
    await refused(`${header}.${payload}.`);
  });

  it('HS256 signed with the public key as the secret (algorithm confusion)', async () => {
    const valid = await forge({});
    const [, payload] = valid.split('.');
    const header = Buffer.from(JSON.stringify({ alg: 'HS256', kid: idp.privateJwk.kid })).toString(
      'base64url',
    );
    const { createHmac } = await import('node:crypto');
    const secret = JSON.stringify(idp.publicJwk);
    const signature = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
    expect(await refused(`${header}.${payload}.${signature}`)).toMatch(/algorithm/);
  });

  it('maps a namespaced claim by its whole name and a nested one by its path', async () => {
    const claimsApp = buildApp(
      parseIdentityConfig({
        issuers: [
          {
            issuer: idp.issuer,
            audiences: [V1_AUDIENCE],
            tenant: 'acme',
            map: [
              { claim: 'https://gatehouse.test/roles', value: 'approver', scopes: ['approvals:decide'] },
              { claim: 'realm_access.roles', value: 'reader', scopes: ['state:read'] },
            ],
          },
        ],
      }),
    );
    try {
      const scopesOf = async (claims: Record<string, unknown>) => {
        const res = await claimsApp.request('/v1/me', {
          headers: bearer(await forge({ scope: '', ...claims })),
        });
        return res.status === 200 ? ((await res.json()) as { scopes: string[] }).scopes : res.status;
      };
      expect(await scopesOf({ 'https://gatehouse.test/roles': ['approver'] })).toEqual(['approvals:decide']);
      expect(await scopesOf({ realm_access: { roles: ['reader'] } })).toEqual(['state:read']);
      expect(await scopesOf({ realm_access: { roles: ['nobody'] } })).toBe(403);
    } finally {
      claimsApp.close();
    }
  });

  it('a valid token that maps to no Gatehouse scope is a clear 403', async () => {
    const res = await get('/v1/me', await forge({ scope: 'profile email' }));
    expect(res.status).toBe(403);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/map to no Gatehouse scope/);
  });
});

describe('key rotation', () => {
  let jwksServer: Server;
  let keys: JWK[];
  let fetches = 0;
  let rotatingApp: HttpApp;

  beforeAll(async () => {
    keys = [idp.publicJwk];
    jwksServer = createServer((_req, res) => {
      fetches++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys }));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    const port = (jwksServer.address() as AddressInfo).port;
    rotatingApp = buildApp(
      parseIdentityConfig({
        issuers: [
          {
            issuer: idp.issuer,
            jwks_uri: `http://127.0.0.1:${port}/jwks`,
            jwks_cooldown_seconds: 1,
            audiences: [V1_AUDIENCE],
            tenant: 'acme',
            map: RULES,
          },
        ],
      }),
    );
  });
  afterAll(async () => {
    rotatingApp.close();
    await new Promise<void>((resolve) => jwksServer.close(() => resolve()));
  });

  it('an unknown kid refetches the key set once, is refused, and is accepted once the issuer publishes the key', async () => {
    const me = (token: string) => rotatingApp.request('/v1/me', { headers: bearer(token) });
    expect((await me(await forge({}))).status).toBe(200);
    expect(fetches).toBe(1);
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const next = { ...(await exportJWK(privateKey)), kid: 'idp-key-2' };
    const rotated = await forge({}, { key: next });
    // The first fetch was at start-up's first token: past the cooldown, an unknown kid refetches.
    await setTimeout(1100);
    const refused = await me(rotated);
    expect(refused.status).toBe(401);
    expect(fetches).toBe(2);
    // A burst of made-up kids within the cooldown fetches nothing more.
    const made = await Promise.all(
      Array.from({ length: 20 }, async (_, i) =>
        me(await forge({}, { key: { ...next, kid: `made-up-${i}` } })),
      ),
    );
    expect(made.every((r) => r.status === 401)).toBe(true);
    expect(fetches).toBe(2);
    keys = [idp.publicJwk, { ...(await exportJWK(publicKey)), kid: 'idp-key-2', alg: 'ES256' }];
    await setTimeout(1100);
    expect((await me(rotated)).status).toBe(200);
    expect(fetches).toBe(3);
    // Known keys need no fetch.
    expect((await me(await forge({}))).status).toBe(200);
    expect(fetches).toBe(3);
  });
});

describe('tenants', () => {
  it('a token reaches only the tenant its claim names, from the allowed list; another is a 403', async () => {
    const store = gatehouse.store;
    const ids = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
    const betaKey = (await createApiKey(store, ids, { scopes: ['admin'], tenantId: 'beta' })).secret;
    await app.request('/v1/state/items', {
      method: 'POST',
      headers: { ...bearer(betaKey), 'content-type': 'application/json' },
      body: JSON.stringify({
        session_id: 'b1',
        key: 'beta.secret',
        value: 'x',
        type: 'fact',
        source: 'user_input',
      }),
    });
    const claimApp = buildApp(
      parseIdentityConfig({
        issuers: [
          {
            issuer: idp.issuer,
            audiences: [V1_AUDIENCE],
            tenant_claim: 'org',
            tenants: ['acme', 'beta'],
            map: RULES,
          },
        ],
      }),
    );
    try {
      const acme = await forge({ org: 'acme' });
      const me = await claimApp.request('/v1/me', { headers: bearer(acme) });
      expect(((await me.json()) as { tenant_id: string }).tenant_id).toBe('acme');
      // Tenant A's token reads nothing of tenant B.
      const read = await claimApp.request('/v1/state/items?session_id=b1', { headers: bearer(acme) });
      expect(read.status).toBe(200);
      expect(JSON.stringify(await read.json())).not.toContain('beta.secret');
      const beta = await forge({ org: 'beta' });
      const seen = await claimApp.request('/v1/state/items?session_id=b1', { headers: bearer(beta) });
      expect(JSON.stringify(await seen.json())).toContain('beta.secret');
      for (const org of ['gamma', undefined]) {
        const res = await claimApp.request('/v1/me', { headers: bearer(await forge({ org })) });
        expect(res.status).toBe(403);
      }
      // An issuer bound to one tenant ignores any tenant claim.
      const bound = await get('/v1/me', await forge({ org: 'beta' }));
      expect(((await bound.json()) as { tenant_id: string }).tenant_id).toBe('acme');
    } finally {
      claimApp.close();
    }
  });
});

describe('who did what', () => {
  async function write(token: string, session: string) {
    const res = await app.request('/v1/state/items', {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({
        session_id: session,
        key: 'trip.city',
        value: 'Oslo',
        type: 'fact',
        source: 'user_input',
      }),
    });
    expect(res.status).toBe(201);
  }
  async function principalsOf(session: string) {
    const res = await get(`/v1/history/events?session_id=${session}`, adminKey);
    const { events } = (await res.json()) as { events: Array<{ data: { principal?: unknown } }> };
    return events.map((e) => e.data.principal);
  }

  it('an event records the token holder (issuer, subject, client) or the key, as one principal object', async () => {
    const token = await idp.clientCredentials({
      clientId: 'writer',
      resource: V1_AUDIENCE,
      scope: 'gatehouse.read gatehouse.write',
    });
    await write(token, 'who-1');
    expect(await principalsOf('who-1')).toEqual([
      { kind: 'oidc', iss: idp.issuer, sub: 'writer', client_id: 'writer' },
    ]);
    await write(adminKey, 'who-2');
    const me = (await (await get('/v1/me', adminKey)).json()) as { key_id: string; principal: unknown };
    expect(me.principal).toEqual({ kind: 'key', key_id: me.key_id });
    expect(await principalsOf('who-2')).toEqual([{ kind: 'key', key_id: me.key_id }]);
  });

  it('a delegated token records its actor (act), and /v1/me shows the caller as events will', async () => {
    const token = await forge({ scope: 'gatehouse.read gatehouse.write', act: { sub: 'agent-7' } });
    await write(token, 'who-3');
    const recorded = { kind: 'oidc', iss: idp.issuer, sub: 'user-1', client_id: 'forged', act: 'agent-7' };
    expect(await principalsOf('who-3')).toEqual([recorded]);
    const me = (await (await get('/v1/me', token)).json()) as { principal: unknown };
    expect(me.principal).toEqual(recorded);
  });
});

describe('opaque tokens (RFC 7662 introspection)', () => {
  it('an opaque token is introspected at the issuer and mapped like a JWT; an unknown one is refused', async () => {
    const OPAQUE = `${PUBLIC_URL}/opaque`;
    const opaqueIdp = await startTestIdp({ opaqueResources: [OPAQUE] });
    const introspecting = buildApp(
      parseIdentityConfig({
        issuers: [
          {
            issuer: opaqueIdp.issuer,
            audiences: [OPAQUE],
            tenant: 'acme',
            map: RULES,
            introspection: {
              endpoint: `${opaqueIdp.issuer}/token/introspection`,
              client_id: 'reader',
              client_secret: CLIENT_SECRET,
            },
          },
        ],
      }),
    );
    try {
      const token = await opaqueIdp.clientCredentials({
        clientId: 'reader',
        resource: OPAQUE,
        scope: 'gatehouse.read',
      });
      expect(token.split('.')).toHaveLength(1);
      const me = await introspecting.request('/v1/me', { headers: bearer(token) });
      expect(me.status, await me.clone().text()).toBe(200);
      expect(((await me.json()) as { principal: unknown }).principal).toMatchObject({
        kind: 'oidc',
        iss: opaqueIdp.issuer,
        client_id: 'reader',
      });
      const unknown = await introspecting.request('/v1/me', { headers: bearer('not-issued-by-anyone') });
      expect(unknown.status).toBe(401);
      expect(unknown.headers.get('www-authenticate')).toContain('error="invalid_token"');
    } finally {
      introspecting.close();
      await opaqueIdp.close();
    }
  });
});

describe('approvers named by IdP groups', () => {
  it('a policy approver label mapped from a groups claim lets that group decide, and the event says who', async () => {
    const { DEFAULT_POLICY_YAML } = await import('../../src/gate/index.js');
    const { compilePolicy } = await import('../../src/index.js');
    const policy = DEFAULT_POLICY_YAML.replace(
      "exceeds the budget of {state['budget.limit'].value}.\"\n",
      "exceeds the budget of {state['budget.limit'].value}.\"\n        approval: { expires_in: 15m, approvers: [finance] }\n",
    );
    const store = openSqliteStore();
    const held = createGatehouse({ store, policy: compilePolicy(policy) });
    const tokens = createTokenAuthenticator({
      config: parseIdentityConfig({
        issuers: [
          {
            issuer: idp.issuer,
            audiences: [V1_AUDIENCE],
            tenant: 'default',
            map: [
              RULES[0]!,
              RULES[1]!,
              // Deciding at all is a scope; being an approver of `finance` rules is the group.
              { claim: 'scope', value: 'gatehouse.approve', scopes: ['approvals:decide'] },
              {
                claim: 'groups',
                value: 'finance-approvers',
                scopes: ['approvals:decide'],
                labels: ['finance'],
              },
            ],
          },
        ],
      }),
      mcpResource: MCP_RESOURCE,
    });
    const approvalsApp = createHttpApp({
      gatehouse: held,
      rateLimit: false,
      identity: { tokens, publicUrl: PUBLIC_URL },
    });
    const post = (token: string, path: string, body: unknown) =>
      approvalsApp.request(path, {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    try {
      const agent = await forge({ sub: 'agent-svc', scope: 'gatehouse.read gatehouse.write' });
      await post(agent, '/v1/state/items', {
        session_id: 'pay',
        key: 'budget.limit',
        value: '5000',
        type: 'fact',
        source: 'user_input',
      });
      const evaluation = await post(agent, '/v1/gates/evaluate', {
        session_id: 'pay',
        action: 'payments.transfer',
        params: { amount: 9000 },
      });
      const decision = (await evaluation.json()) as { approval?: { id: string } };
      const approvalId = decision.approval!.id;
      // Decide scope but not in the group: not an approver of this rule.
      const outsider = await forge({ sub: 'bob', scope: 'gatehouse.approve' });
      expect((await post(outsider, `/v1/approvals/${approvalId}/approve`, {})).status).toBe(403);
      const approver = await forge({ sub: 'carol', scope: 'gatehouse.read', groups: ['finance-approvers'] });
      const approved = await post(approver, `/v1/approvals/${approvalId}/approve`, {});
      expect(approved.status).toBe(200);
      const events = await held.readHistory(
        { session_id: 'pay', type: 'approval.approved' },
        { tenantId: 'default' },
      );
      expect(events.events[0]?.data['principal']).toEqual({
        kind: 'oidc',
        iss: idp.issuer,
        sub: 'carol',
        client_id: 'forged',
      });
    } finally {
      approvalsApp.close();
      await store.close();
    }
  });
});
