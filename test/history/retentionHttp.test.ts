/**
 * Retention and legal holds over /v1 (the web-standard handler, no port): `PUT /v1/retention`
 * takes the place of the policy's retention and is recorded; the floor holds unless lowered
 * explicitly; both need scope `admin`; a hold placed over HTTP refuses an erasure over HTTP.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type Scope,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';

let store: Store;
let gh: Gatehouse;
let app: ReturnType<typeof createHttpApp>;

async function key(scopes: Scope[]) {
  const { secret } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes, tenantId: 'default', sources: ['user_input'] },
  );
  return secret;
}

async function call(method: string, path: string, secret: string, body?: unknown) {
  const res = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${secret}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

beforeEach(() => {
  store = openSqliteStore({ filename: ':memory:' });
  gh = createGatehouse({ store });
  app = createHttpApp({ gatehouse: gh });
});
afterEach(async () => {
  await store.close();
});

describe('/v1/retention and /v1/legal-holds', () => {
  it('sets retention with the floor, records it, and needs admin', async () => {
    const admin = await key(['admin']);
    const writer = await key(['state:write', 'data:erase']);
    expect((await call('GET', '/v1/retention', admin)).json).toMatchObject({
      source: 'none',
      history_after_days: null,
    });
    expect((await call('PUT', '/v1/retention', writer, { history_after: '365d' })).status).toBe(403);
    const low = await call('PUT', '/v1/retention', admin, { history_after: '30d' });
    expect(low.status).toBe(422);
    expect(JSON.stringify(low.json)).toMatch(/below the floor of 183 days/);
    const set = await call('PUT', '/v1/retention', admin, {
      values_after: '90d',
      history_after: '30d',
      allow_below_floor: true,
    });
    expect(set.status).toBe(200);
    expect(set.json).toMatchObject({
      values_after_days: 90,
      history_after_days: 30,
      allow_below_floor: true,
      source: 'api',
    });
    expect((await call('GET', '/v1/retention', admin)).json).toMatchObject({
      source: 'api',
      values_after_days: 90,
    });
    const event = (await gh.readHistory({ type: 'retention.configured' })).events[0]!;
    expect(event.data).toMatchObject({ history_after_days: 30, allow_below_floor: true });
  });

  it('places, lists and releases holds; a hold refuses an erasure', async () => {
    const admin = await key(['admin']);
    const eraser = await key(['state:write', 'data:erase']);
    await gh.recordState({
      session_id: 's1',
      key: 'agent.note',
      value: 'x',
      type: 'fact',
      source: 'user_input',
    });
    expect(
      (await call('POST', '/v1/legal-holds', eraser, { session_id: 's1', reference: 'CASE-1' })).status,
    ).toBe(403);
    const placed = await call('POST', '/v1/legal-holds', admin, { session_id: 's1', reference: 'CASE-1' });
    expect(placed.status).toBe(200);
    expect((await call('GET', '/v1/legal-holds', admin)).json.holds).toHaveLength(1);
    const refused = await call('POST', '/v1/erasures', eraser, { session_id: 's1' });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.json)).toMatch(/Legal hold .* covers this erasure/);
    expect((await call('DELETE', `/v1/legal-holds/${placed.json.hold_id}`, admin)).status).toBe(200);
    expect((await call('POST', '/v1/erasures', eraser, { session_id: 's1' })).status).toBe(200);
  });
});
