/**
 * Tokens whose claims or keys are unusual for the issuer that signed them, over real HTTP on
 * loopback with a SQLite file and an issuer on 127.0.0.1 (its key set and introspection endpoint
 * answer what the test puts there):
 * - a token bound to a key (`cnf`: DPoP's `jkt`, mTLS's `x5t#S256`) is refused as a bearer:
 *   Gatehouse checks no proof of possession, so taking it would turn a stolen bound token into a
 *   usable one (RFC 8705 §3, RFC 9449 §7);
 * - a `sub` that is there but not a non-empty string is refused: it was read as absent, and every
 *   user of a client became that client's one principal;
 * - a token without `kid` verifies when the key set holds several keys of its type (an issuer
 *   rotating keys publishes two): it was refused as "not a valid signed JWT".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createHttpApp,
  type HttpApp,
  type RunningServer,
  startHttpServer,
} from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createGatehouse,
  createTokenAuthenticator,
  type Gatehouse,
  parseIdentityConfig,
} from '../../src/index.js';

const PUBLIC_URL = 'http://gatehouse.test';
const V1_AUDIENCE = `${PUBLIC_URL}/v1`;
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-token-claims-'));

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
let current: KeyPair;
let next: KeyPair;
/** What the issuer's key set holds. */
let published: JWK[];
/** What the introspection endpoint answers, by token. */
const introspection = new Map<string, Record<string, unknown>>();
let idpServer: Server;
let issuer: string;
let gatehouse: Gatehouse;
let app: HttpApp;
let server: RunningServer;

async function publicJwk(pair: KeyPair, kid?: string): Promise<JWK> {
  return { ...(await exportJWK(pair.publicKey)), alg: 'ES256', use: 'sig', ...(kid ? { kid } : {}) };
}

/** A token of the issuer, signed with `key`; `kid` names it in the header unless undefined. */
function token(
  claims: Record<string, unknown>,
  options: { key?: KeyPair; kid?: string | undefined } = {},
): Promise<string> {
  const seconds = Math.floor(Date.now() / 1000);
  const kid = 'kid' in options ? options.kid : 'current';
  return new SignJWT({
    iss: issuer,
    sub: 'user-1',
    aud: V1_AUDIENCE,
    exp: seconds + 300,
    scope: 'gatehouse.read',
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', ...(kid === undefined ? {} : { kid }) })
    .sign((options.key ?? current).privateKey);
}

async function me(bearer: string) {
  const res = await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${bearer}` } });
  return {
    status: res.status,
    challenge: res.headers.get('www-authenticate'),
    json: (await res.json()) as Record<string, unknown>,
  };
}

beforeAll(async () => {
  current = await generateKeyPair('ES256');
  next = await generateKeyPair('ES256');
  // Two keys, as while the issuer rotates: the next one is published before it signs.
  published = [await publicJwk(current, 'current'), await publicJwk(next, 'next')];
  idpServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/jwks') return res.end(JSON.stringify({ keys: published }));
      const sent = new URLSearchParams(Buffer.concat(chunks).toString()).get('token') ?? '';
      res.end(JSON.stringify(introspection.get(sent) ?? { active: false }));
    });
  });
  await new Promise<void>((resolve) => idpServer.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(idpServer.address() as AddressInfo).port}`;

  gatehouse = createGatehouse({ store: openSqliteStore({ filename: join(dir, 'gatehouse.db') }) });
  const config = parseIdentityConfig({
    issuers: [
      {
        issuer,
        jwks_uri: `${issuer}/jwks`,
        jwks_cooldown_seconds: 1,
        audiences: [V1_AUDIENCE],
        tenant: 'acme',
        map: [{ claim: 'scope', value: 'gatehouse.read', scopes: ['state:read', 'history:read'] }],
        introspection: { endpoint: `${issuer}/introspect`, client_id: 'gatehouse', client_secret: 's' },
      },
    ],
  });
  app = createHttpApp({
    gatehouse,
    rateLimit: false,
    identity: { tokens: createTokenAuthenticator({ config }), publicUrl: PUBLIC_URL },
  });
  server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await server.close();
  app.close();
  await gatehouse.store.close();
  idpServer.closeAllConnections();
  await new Promise<void>((resolve) => idpServer.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('a token bound to a key (cnf)', () => {
  it('the control: the same token without cnf is accepted', async () => {
    expect((await me(await token({}))).status).toBe(200);
  });

  it('a DPoP-bound or certificate-bound JWT sent as a bearer is 401 invalid_token', async () => {
    for (const cnf of [
      { jkt: '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I' },
      { 'x5t#S256': 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2' },
    ]) {
      const answer = await me(await token({ cnf }));
      expect(answer.status).toBe(401);
      expect(answer.challenge).toContain('error="invalid_token"');
    }
  });

  it('an opaque token the issuer says is bound to a key is 401 invalid_token', async () => {
    const opaque = 'opaque-bound-token';
    introspection.set(opaque, {
      active: true,
      iss: issuer,
      sub: 'user-1',
      aud: V1_AUDIENCE,
      scope: 'gatehouse.read',
      exp: Math.floor(Date.now() / 1000) + 300,
      cnf: { jkt: '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I' },
    });
    const answer = await me(opaque);
    expect(answer.status).toBe(401);
    expect(answer.challenge).toContain('error="invalid_token"');
  });
});

describe('a subject that is not a string', () => {
  it("is refused, not read as absent: two users would become their client's one principal", async () => {
    for (const sub of [1001, 1002, '', null, ['user-1']]) {
      const answer = await me(await token({ sub, client_id: 'shared-app' }));
      expect(answer.status).toBe(401);
      expect(answer.challenge).toContain('error="invalid_token"');
    }
    // A token without `sub` is still its client's.
    const client = await me(await token({ sub: undefined, client_id: 'shared-app' }));
    expect(client.status).toBe(200);
    expect(client.json['key_id']).toMatch(/^cli_/);
  });
});

describe('a token without kid', () => {
  it('verifies against the key of a set of several that signed it, and no other key passes', async () => {
    expect((await me(await token({}, { kid: undefined }))).status).toBe(200);
    expect((await me(await token({}, { key: next, kid: undefined }))).status).toBe(200);
    const stranger = await generateKeyPair('ES256');
    const forged = await me(await token({}, { key: stranger, kid: undefined }));
    expect(forged.status).toBe(401);
    expect(forged.challenge).toContain('error="invalid_token"');
  });
});
