/**
 * Lowering the history floor is an admin's call however it is asked for: `PUT /v1/retention`
 * needs `admin`, and so does activating a policy whose `retention:` sets `allow_below_floor: true`
 * with `PUT /v1/policy` (else a `policy:write` key, a policy author's, would have the next retention
 * run prune history younger than the 183 days the floor keeps). Over real HTTP on loopback, with a
 * SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  type Gatehouse,
  generateCheckpointKeyPair,
  loadCheckpointSigner,
  type Scope,
  systemRandomBytes,
} from '../../src/index.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-policy-floor-'));
const clock = { now: T0 };
let gatehouse: Gatehouse;
let app: HttpApp;
let server: RunningServer;
let admin: string;
let author: string;

async function call(method: string, path: string, secret: string, body?: unknown, ifMatch?: string) {
  const res = await fetch(server.url + path, {
    method,
    headers: {
      authorization: `Bearer ${secret}`,
      ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    etag: res.headers.get('etag'),
    json: (await res.json()) as Record<string, unknown>,
  };
}

const BELOW = 'version: 1\nretention:\n  history_after: 1d\n  allow_below_floor: true\n';

beforeAll(async () => {
  const store = openSqliteStore({ filename: join(dir, 'gatehouse.db') });
  gatehouse = createGatehouse({
    store,
    clock: () => new Date(clock.now),
    checkpointSigner: loadCheckpointSigner(generateCheckpointKeyPair().privateKey),
  });
  const key = async (scopes: Scope[]) =>
    (
      await createApiKey(
        store,
        { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date(T0) },
        { scopes, tenantId: 'default', sources: ['user_input'] },
      )
    ).secret;
  admin = await key(['admin']);
  author = await key(['policy:write', 'history:read']);
  app = createHttpApp({ gatehouse, rateLimit: false });
  server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await server.close();
  app.close();
  await gatehouse.store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a policy that lowers the history floor', () => {
  it('needs admin to activate, as PUT /v1/retention does; keeping it as it is does not', async () => {
    for (let i = 0; i < 5; i += 1) {
      await gatehouse.recordState({
        session_id: 's',
        key: 'agent.note',
        value: `v${i}`,
        type: 'fact',
        source: 'user_input',
      });
    }
    // The same change through the retention route is refused to a policy author's key.
    expect(
      (await call('PUT', '/v1/retention', author, { history_after: '1d', allow_below_floor: true })).status,
    ).toBe(403);
    const first = await call('GET', '/v1/policy', author);
    const refused = await call('PUT', '/v1/policy', author, { policy: BELOW }, first.etag!);
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ code: 'forbidden' });

    // Ten days on, retention prunes nothing: the floor still holds.
    clock.now = T0 + 10 * DAY;
    expect((await gatehouse.runRetention()).pruned).toBeNull();
    expect((await gatehouse.readHistory({ limit: 1, order: 'asc' })).events[0]!.seq).toBe(1);

    // An admin may lower it; the author may then change rules and keep that retention as it is.
    const lowered = await call('PUT', '/v1/policy', admin, { policy: BELOW }, first.etag!);
    expect(lowered.status).toBe(200);
    const edited = `${BELOW}actions:\n  "mail.*":\n    rules:\n      - name: no_mail\n        when: "true"\n        verdict: Block\n        message: "No mail"\n`;
    expect((await call('PUT', '/v1/policy', author, { policy: edited }, lowered.etag!)).status).toBe(200);
  });
});
