/**
 * Idempotent responses kept in memory are bounded: in entries and in bytes, the oldest out
 * first; a response too large to keep is answered with `Idempotency-Status: not-stored`.
 */
import Keyv from 'keyv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readServeConfig } from '../../adapters/cli/config.js';
import { createBoundedMemoryStore } from '../../adapters/http/boundedMemoryStore.js';
import { createHttpApp, type HttpApp } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';

describe('the bounded in-memory store', () => {
  it('drops the oldest entry first when it holds maxEntries', () => {
    const store = createBoundedMemoryStore({ maxEntries: 3 });
    for (const k of ['a', 'b', 'c']) store.set(k, k);
    // Reading an entry does not keep it longer: the order is insertion.
    expect(store.get('a')).toBe('a');
    store.set('d', 'd');
    expect(['a', 'b', 'c', 'd'].map((k) => store.has(k))).toEqual([false, true, true, true]);
    store.set('e', 'e');
    expect(['b', 'c', 'd', 'e'].map((k) => store.has(k))).toEqual([false, true, true, true]);
    expect(store.size).toBe(3);
  });

  it('drops the oldest entries first to stay within maxBytes', () => {
    const store = createBoundedMemoryStore({ maxBytes: 800 });
    // Each entry: a 1-byte key and a 99-byte value.
    for (const k of 'abcdefgh') store.set(k, 'x'.repeat(99));
    expect(store.bytes).toBe(800);
    store.set('i', 'x'.repeat(99));
    expect(store.has('a')).toBe(false);
    expect(store.has('b')).toBe(true);
    expect(store.bytes).toBe(800);
    // A smaller entry after a larger one: still only what must go.
    store.set('j', 'x'.repeat(49));
    expect(store.has('b')).toBe(false);
    expect(store.has('c')).toBe(true);
    expect(store.bytes).toBe(750);
  });

  it('refuses an entry over an eighth of maxBytes, and keeps what it held', () => {
    const store = createBoundedMemoryStore({ maxBytes: 800 });
    store.set('a', 'x');
    expect(store.set('b', 'x'.repeat(100))).toBe(false);
    expect(store.has('b')).toBe(false);
    expect(store.has('a')).toBe(true);
    expect(store.maxEntryBytes).toBe(100);
  });

  it('drops expired entries from the front as new ones arrive, and never answers one', () => {
    let now = 0;
    const store = createBoundedMemoryStore({ now: () => now });
    store.set('a', 'a', 1000);
    store.set('b', 'b', 1000);
    now = 500;
    store.set('c', 'c', 1000);
    now = 1000;
    expect(store.get('a')).toBeUndefined();
    store.set('d', 'd', 1000);
    expect(store.size).toBe(2);
    expect(store.get('c')).toBe('c');
  });

  it('holds 5,000 unique 16 KB responses within the default 32 MiB', () => {
    const store = createBoundedMemoryStore();
    const body = 'x'.repeat(16 * 1024);
    for (let i = 0; i < 5000; i++) expect(store.set(`key-${i}`, body, 86_400_000)).toBe(true);
    expect(store.bytes).toBeLessThanOrEqual(32 * 2 ** 20);
    expect(store.has('key-4999')).toBe(true);
    expect(store.has('key-0')).toBe(false);
  });
});

describe('Idempotency-Key through the app, in memory', () => {
  let store: Store;
  let gh: Gatehouse;
  let app: HttpApp;
  let admin: string;

  beforeEach(async () => {
    store = openSqliteStore();
    gh = createGatehouse({ store });
    admin = (
      await createApiKey(store, { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() })
    ).secret;
  });
  afterEach(async () => {
    app.close();
    await store.close();
  });

  /** An evaluation: each run has a new decision ID, a replay the first one's. */
  const evaluate = async (idempotencyKey: string, action = 'email.send') => {
    const res = await app.request('/v1/gates/evaluate', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${admin}`,
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
      },
      body: JSON.stringify({ session_id: 's1', action }),
    });
    const body = (await res.json()) as { decision_id: string };
    return {
      decisionId: body.decision_id,
      replayed: res.headers.get('idempotent-replayed') === 'true',
      status: res.headers.get('idempotency-status'),
    };
  };

  it('runs concurrent requests with one key once when the store answers after a round trip (Redis)', async () => {
    const memory = createBoundedMemoryStore();
    const roundTrip = () => new Promise((resolve) => setTimeout(resolve, 5));
    const slow = {
      ...memory,
      on: () => slow,
      async get(key: string) {
        await roundTrip();
        return memory.get(key);
      },
      async set(key: string, value: unknown, ttl?: number) {
        await roundTrip();
        return memory.set(key, value, ttl);
      },
      delete: async (key: string) => memory.delete(key),
      clear: async () => memory.clear(),
    };
    app = createHttpApp({ gatehouse: gh, rateLimit: false, ttlStore: new Keyv({ store: slow }) });
    const answers = await Promise.all([evaluate('same'), evaluate('same'), evaluate('same')]);
    expect(new Set(answers.map((a) => a.decisionId)).size).toBe(1);
    expect(answers.filter((a) => a.replayed)).toHaveLength(2);
    expect((await gh.readHistory({ type: 'gate_evaluation' })).events).toHaveLength(1);
  });

  it('does not run a request whose key the store cannot look up in time (Redis away), and answers one it cannot keep in time not-stored', async () => {
    const memory = createBoundedMemoryStore();
    const broken = { get: false, set: false };
    const never = new Promise<never>(() => {});
    const away = {
      ...memory,
      on: () => away,
      get: async (key: string) => (broken.get ? never : memory.get(key)),
      set: async (key: string, value: unknown, ttl?: number) =>
        broken.set ? never : memory.set(key, value, ttl),
      delete: async (key: string) => memory.delete(key),
      clear: async () => memory.clear(),
    };
    app = createHttpApp({
      gatehouse: gh,
      rateLimit: false,
      ttlStore: new Keyv({ store: away }),
      idempotency: { storeTimeoutMs: 50 },
    });
    broken.get = true;
    const res = await app.request('/v1/gates/evaluate', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${admin}`,
        'content-type': 'application/json',
        'idempotency-key': 'k',
      },
      body: JSON.stringify({ session_id: 's1', action: 'email.send' }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(((await res.json()) as { detail: string }).detail).toMatch(
      /does not answer: the request was not run/,
    );
    expect((await gh.readHistory({ type: 'gate_evaluation' })).events).toHaveLength(0);

    broken.get = false;
    broken.set = true;
    const first = await evaluate('k');
    expect(first).toMatchObject({ replayed: false, status: 'not-stored' });
    broken.set = false;
    expect(await evaluate('k')).toMatchObject({ replayed: false, status: null });
  });

  it('keeps at most maxEntries responses, the oldest going first', async () => {
    app = createHttpApp({ gatehouse: gh, rateLimit: false, idempotency: { maxEntries: 2 } });
    const first = await evaluate('k1');
    const second = await evaluate('k2');
    const third = await evaluate('k3');
    expect([first, second, third].map((r) => r.status)).toEqual([null, null, null]);
    expect(await evaluate('k3')).toMatchObject({ decisionId: third.decisionId, replayed: true });
    expect(await evaluate('k2')).toMatchObject({ decisionId: second.decisionId, replayed: true });
    // k1 was dropped to make room for k3: a retry runs again.
    const again = await evaluate('k1');
    expect(again.replayed).toBe(false);
    expect(again.decisionId).not.toBe(first.decisionId);
  });

  it('answers a response over maxResponseBytes with Idempotency-Status: not-stored, and runs a retry again', async () => {
    app = createHttpApp({ gatehouse: gh, rateLimit: false, idempotency: { maxResponseBytes: 100 } });
    const first = await evaluate('big');
    expect(first.status).toBe('not-stored');
    const retry = await evaluate('big');
    expect(retry).toMatchObject({ replayed: false, status: 'not-stored' });
    expect(retry.decisionId).not.toBe(first.decisionId);
  });

  it('does not keep a response over an eighth of maxBytes either, and says so', async () => {
    app = createHttpApp({ gatehouse: gh, rateLimit: false, idempotency: { maxBytes: 2048 } });
    const first = await evaluate('k1');
    expect(first.status).toBe('not-stored');
    expect((await evaluate('k1')).decisionId).not.toBe(first.decisionId);
  });

  it('keeps and replays a response within the bounds, without the header', async () => {
    app = createHttpApp({ gatehouse: gh, rateLimit: false });
    const first = await evaluate('k1');
    expect(first.status).toBeNull();
    expect(await evaluate('k1')).toMatchObject({
      decisionId: first.decisionId,
      replayed: true,
      status: null,
    });
  });
});

describe('gatehouse serve', () => {
  it('takes the in-memory bounds from flags, with 10,000 entries and 32 MiB by default', () => {
    expect(readServeConfig({})).toMatchObject({
      idempotencyMaxEntries: 10_000,
      idempotencyMaxBytes: 32 * 2 ** 20,
    });
    expect(readServeConfig({ idempotencyMaxEntries: '50', idempotencyMaxBytes: '65536' })).toMatchObject({
      idempotencyMaxEntries: 50,
      idempotencyMaxBytes: 65536,
    });
    expect(() => readServeConfig({ idempotencyMaxEntries: '0' })).toThrow(/--idempotency-max-entries/);
  });
});
