/**
 * Who may override a legal hold, over real HTTP on loopback with a SQLite file: placing and
 * releasing a hold needs `admin`, so overriding one does too. A `data:erase` key that is not admin
 * is refused with 403 on both erasure routes and erases nothing; an admin's override goes through
 * and is recorded.
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
  type Scope,
  systemRandomBytes,
} from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hold-override-'));
let gatehouse: Gatehouse;
let app: HttpApp;
let server: RunningServer;
let admin: string;
let eraser: string;

async function call(method: string, path: string, secret: string, body?: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: {
      authorization: `Bearer ${secret}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    json: (await res.json()) as Record<string, unknown>,
  };
}

beforeAll(async () => {
  const store = openSqliteStore({ filename: join(dir, 'gatehouse.db') });
  gatehouse = createGatehouse({ store });
  const key = async (scopes: Scope[]) =>
    (
      await createApiKey(
        store,
        { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
        { scopes, tenantId: 'default', sources: ['user_input'] },
      )
    ).secret;
  admin = await key(['admin']);
  eraser = await key(['data:erase', 'state:write', 'history:read']);
  app = createHttpApp({ gatehouse, rateLimit: false });
  server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await server.close();
  app.close();
  await gatehouse.store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('overriding a legal hold', () => {
  it('needs admin, the scope that places and releases holds; an admin override is recorded', async () => {
    const item = {
      session_id: 'case-s1',
      key: 'user.name',
      value: 'Alice Meyer',
      type: 'fact',
      source: 'user_input',
    };
    expect((await call('POST', '/v1/state/items', eraser, item)).status).toBe(201);
    expect(
      (await call('POST', '/v1/subject-tags', eraser, { session_id: 'case-s1', subject: 'p-1' })).status,
    ).toBe(200);
    const hold = await call('POST', '/v1/legal-holds', admin, { session_id: 'case-s1', reference: 'CASE-7' });
    expect(hold.status).toBe(200);

    for (const [path, body] of [
      ['/v1/erasures', { session_id: 'case-s1', override_hold: true }],
      ['/v1/erasures/subject', { subject: 'p-1', override_hold: true }],
    ] as const) {
      const refused = await call('POST', path, eraser, body);
      expect(refused.status, JSON.stringify(refused.json)).toBe(403);
      expect(refused.type).toBe('application/problem+json');
      expect(refused.json['detail']).toMatch(/override_hold needs the 'admin' scope/);
    }
    // Nothing was erased, and no override was recorded.
    const items = await call('GET', '/v1/state/items?session_id=case-s1', admin);
    expect(items.json['items']).toEqual([expect.objectContaining({ value: 'Alice Meyer' })]);
    const overridden = await call('GET', '/v1/history/events?type=legal_hold.overridden', admin);
    expect(overridden.json['events']).toEqual([]);
    // Without the override a data:erase key still gets the hold's own refusal.
    const held = await call('POST', '/v1/erasures', eraser, { session_id: 'case-s1' });
    expect(held.status).toBe(422);
    expect(held.json['detail']).toMatch(/Legal hold hld_.* \(CASE-7\) covers this erasure/);

    const erased = await call('POST', '/v1/erasures', admin, { session_id: 'case-s1', override_hold: true });
    expect(erased.status, JSON.stringify(erased.json)).toBe(200);
    const recorded = await call('GET', '/v1/history/events?type=legal_hold.overridden', admin);
    expect(recorded.json['events']).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ references: ['CASE-7'] }) }),
    ]);
  });

  it('an override flag where no hold covers the session needs no admin', async () => {
    const item = {
      session_id: 'free-s1',
      key: 'user.name',
      value: 'Bob',
      type: 'fact',
      source: 'user_input',
    };
    expect((await call('POST', '/v1/state/items', eraser, item)).status).toBe(201);
    const erased = await call('POST', '/v1/erasures', eraser, { session_id: 'free-s1', override_hold: true });
    expect(erased.status, JSON.stringify(erased.json)).toBe(200);
  });
});
