/**
 * Where a token's reach ends, over real HTTP on loopback with a SQLite file and tokens signed by
 * the in-process test IdP's key: an `Idempotency-Key` replays only within the tenant the token
 * reaches, and an `scp` claim written as one space-separated string (Entra ID's) grants each of
 * its values.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createHttpApp,
  type HttpApp,
  type RunningServer,
  startHttpServer,
} from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createApiKey,
  createGatehouse,
  createIdGenerator,
  createTokenAuthenticator,
  type Gatehouse,
  parseIdentityConfig,
  systemRandomBytes,
} from '../../src/index.js';
import { startTestIdp, type TestIdp } from './testIdp.js';

const PUBLIC_URL = 'http://gatehouse.test';
const V1_AUDIENCE = `${PUBLIC_URL}/v1`;
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-token-boundaries-'));

let idp: TestIdp;
let gatehouse: Gatehouse;
let app: HttpApp;
let server: RunningServer;
let betaAdmin: string;

/** A token signed with the IdP's key, with the claims a test needs. */
async function token(claims: Record<string, unknown>): Promise<string> {
  const key = await importJWK(idp.privateJwk, 'ES256');
  const seconds = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: idp.issuer, sub: 'user-1', aud: V1_AUDIENCE, exp: seconds + 300, ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: idp.privateJwk.kid, typ: 'at+jwt' })
    .sign(key);
}

async function call(
  path: string,
  bearer: string,
  init: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const res = await fetch(server.url + path, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  idp = await startTestIdp();
  const store = openSqliteStore({ filename: join(dir, 'gatehouse.db') });
  gatehouse = createGatehouse({ store });
  const ids = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
  betaAdmin = (await createApiKey(store, ids, { scopes: ['admin'], tenantId: 'beta' })).secret;
  const config = parseIdentityConfig({
    issuers: [
      {
        issuer: idp.issuer,
        audiences: [V1_AUDIENCE],
        tenant_claim: 'org',
        tenants: ['acme', 'beta'],
        map: [
          { claim: 'scope', value: 'gatehouse.read', scopes: ['state:read', 'history:read'] },
          { claim: 'scope', value: 'gatehouse.write', scopes: ['state:write'] },
          { claim: 'scp', value: 'access_as_user', scopes: ['state:read'] },
          { claim: 'scp', value: 'gatehouse.write', scopes: ['state:write'] },
        ],
      },
    ],
  });
  app = createHttpApp({
    gatehouse,
    rateLimit: false,
    identity: {
      tokens: createTokenAuthenticator({ config, mcpResource: `${PUBLIC_URL}/mcp` }),
      publicUrl: PUBLIC_URL,
    },
  });
  server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await server.close();
  app.close();
  await gatehouse.store.close();
  await idp.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a token whose claim picks the tenant', () => {
  it('replays an Idempotency-Key only in the tenant it was used in: the other tenant gets its own write', async () => {
    const item = { session_id: 's1', key: 'order.total', value: '120', type: 'fact', source: 'user_input' };
    const headers = { 'idempotency-key': 'retry-7' };
    const scope = 'gatehouse.read gatehouse.write';
    const inAcme = await call('/v1/state/items', await token({ org: 'acme', scope }), {
      body: item,
      headers,
    });
    expect(inAcme.status, JSON.stringify(inAcme.json)).toBe(201);
    // The same subject, the same key and body, now for tenant beta: a new request, not a retry.
    const inBeta = await call('/v1/state/items', await token({ org: 'beta', scope }), {
      body: item,
      headers,
    });
    expect(inBeta.status).toBe(201);
    expect(inBeta.headers.get('idempotent-replayed')).toBeNull();
    const read = await call('/v1/state/items?session_id=s1', betaAdmin);
    expect(read.json['items']).toEqual([expect.objectContaining({ key: 'order.total', value: '120' })]);
    // Within one tenant the key still replays.
    const again = await call('/v1/state/items', await token({ org: 'beta', scope }), { body: item, headers });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('claims', () => {
  it('an scp claim written as one space-separated string (Entra ID) grants each of its values', async () => {
    const me = await call('/v1/me', await token({ org: 'acme', scp: 'access_as_user gatehouse.write' }));
    expect(me.status, JSON.stringify(me.json)).toBe(200);
    expect(me.json['scopes']).toEqual(expect.arrayContaining(['state:read', 'state:write']));
    // As a list (Okta's) it already did.
    const listed = await call('/v1/me', await token({ org: 'acme', scp: ['access_as_user'] }));
    expect(listed.json['scopes']).toEqual(['state:read']);
  });
});

describe('a token without a subject', () => {
  it("is its client's: a user whose sub is that client's ID is another principal", async () => {
    const scope = 'gatehouse.read';
    const client = await call(
      '/v1/me',
      await token({ org: 'acme', scope, sub: undefined, client_id: 'svc-7' }),
    );
    const user = await call('/v1/me', await token({ org: 'acme', scope, sub: 'svc-7' }));
    expect(client.status).toBe(200);
    expect(user.status).toBe(200);
    expect(client.json['key_id']).toMatch(/^cli_/);
    expect(user.json['key_id']).toMatch(/^sub_/);
    expect(client.json['key_id']).not.toBe(user.json['key_id']);
  });
});
