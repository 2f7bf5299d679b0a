/**
 * `Idempotency-Key` responses reached by an erasure, over real HTTP on loopback with a SQLite
 * file (and on Redis when GATEHOUSE_TEST_REDIS_URL is set): once a session is erased — by the
 * CLI in another process or through this server — a retry with a key whose kept response named
 * it is answered `response_erased` (409) without the erased value, now and on every later retry;
 * the kept copy is gone from the store; answers about other sessions and other tenants, and an
 * erasure's own report, still replay. Needs the build (`npm run build`): the CLI runs from dist.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import KeyvRedis from '@keyv/redis';
import Keyv from 'keyv';
import { afterAll, describe, expect, it } from 'vitest';
import { createBoundedMemoryStore } from '../../adapters/http/boundedMemoryStore.js';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createApiKey, createGatehouse, createIdGenerator, systemRandomBytes } from '../../src/index.js';
import { cli } from '../reliability/fixtures.js';

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-idem-erasure-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const redisUrl = process.env['GATEHOUSE_TEST_REDIS_URL'];

/** The TTL stores the test runs on, each with a way to read every kept entry's text. */
const TTL_STORES: Array<{ name: string; open(): { keyv: Keyv; texts(): Promise<string[]> } }> = [
  {
    name: 'memory',
    open() {
      const memory = createBoundedMemoryStore();
      const keys = new Set<string>();
      const recording = new Proxy(memory, {
        get(target, prop) {
          if (prop === 'set') {
            return (key: string, value: unknown, ttlMs?: number) => {
              keys.add(key);
              return target.set(key, value, ttlMs);
            };
          }
          const v = Reflect.get(target, prop, target);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
      return {
        keyv: new Keyv({ store: recording, namespace: 'idem' }),
        async texts() {
          return [...keys].map((k) => JSON.stringify(memory.get(k) ?? null));
        },
      };
    },
  },
  ...(redisUrl
    ? [
        {
          name: 'redis',
          open() {
            const namespace = `gatehouse-test-${randomUUID()}`;
            const redis = new KeyvRedis(redisUrl);
            const keyv = new Keyv({ store: redis, namespace });
            return {
              keyv,
              async texts() {
                const client = await redis.getClient();
                const keys = await client.keys(`${namespace}:*`);
                return Promise.all(keys.map(async (k) => String(await client.get(k))));
              },
            };
          },
        },
      ]
    : []),
];

describe.each(TTL_STORES)('Idempotency-Key responses after an erasure ($name)', (ttl) => {
  it('refuses to replay a response holding an erased session, whoever erased it; others still replay', async () => {
    const file = join(dir, `${ttl.name}.db`);
    const store = openSqliteStore({ filename: file });
    const gh = createGatehouse({ store });
    const deps = () => ({ ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() });
    const admin = (await createApiKey(store, deps(), { name: 'admin', scopes: ['admin'] })).secret;
    const other = (await createApiKey(store, deps(), { name: 'other', scopes: ['admin'], tenantId: 'other' }))
      .secret;
    const { keyv, texts } = ttl.open();
    const app = createHttpApp({ gatehouse: gh, rateLimit: false, ttlStore: keyv });
    let server: RunningServer | undefined;
    try {
      server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
      const url = server.url;
      const post = async (path: string, body: unknown, key: string, secret = admin) => {
        const res = await fetch(`${url}${path}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${secret}`,
            'content-type': 'application/json',
            'idempotency-key': key,
          },
          body: JSON.stringify(body),
        });
        return {
          status: res.status,
          replayed: res.headers.get('idempotent-replayed') === 'true',
          text: await res.text(),
        };
      };
      const write = (session: string, value: string) => ({
        session_id: session,
        key: 'customer.name',
        value,
        type: 'fact',
        source: 'user_input',
      });

      // Kept answers: a write and a decision of s1, a write of s2, the same session ID in another tenant.
      expect((await post('/v1/state/items', write('s1', 'Alice Meyer'), 'k-write')).status).toBe(201);
      const decision = { session_id: 's1', action: 'payments.transfer', params: { to: 'Alice Meyer' } };
      expect((await post('/v1/gates/evaluate', decision, 'k-eval')).status).toBe(200);
      expect((await post('/v1/state/items', write('s2', 'Bob Stone'), 'k-s2')).status).toBe(201);
      expect((await post('/v1/state/items', write('s1', 'Carol Other'), 'k-other', other)).status).toBe(201);
      const replay = await post('/v1/state/items', write('s1', 'Alice Meyer'), 'k-write');
      expect(replay).toMatchObject({ status: 201, replayed: true });
      expect(replay.text).toContain('Alice Meyer');
      expect((await texts()).join('\n')).toContain('Alice Meyer');
      expect((await texts()).join('\n')).toContain('Bob Stone');

      // The CLI erases s1 from another process: this server hears nothing of it.
      const erased = await exec(process.execPath, [cli, 'erase', '--session', 's1', '--database', file], {
        cwd: dir,
        timeout: 60_000,
      });
      expect(erased.stdout).toMatch(/erased/);

      for (const [path, body, key] of [
        ['/v1/state/items', write('s1', 'Alice Meyer'), 'k-write'],
        ['/v1/gates/evaluate', decision, 'k-eval'],
      ] as const) {
        const refused = await post(path, body, key);
        expect(refused.status).toBe(409);
        expect(JSON.parse(refused.text)).toMatchObject({
          code: 'response_erased',
          detail: expect.stringMatching(/held data of session s1, which was erased after it was kept/),
        });
        expect(refused.text).not.toContain('Alice');
        // Every later retry too: the request is not run again behind the client's back.
        expect((await post(path, body, key)).status).toBe(409);
      }
      // A different body under the key is still a different body.
      expect(JSON.parse((await post('/v1/state/items', write('s1', 'x'), 'k-write')).text)).toMatchObject({
        code: 'invalid_request',
      });
      // s2 and the other tenant's s1 were not erased.
      expect(await post('/v1/state/items', write('s2', 'Bob Stone'), 'k-s2')).toMatchObject({
        replayed: true,
      });
      expect(await post('/v1/state/items', write('s1', 'Carol Other'), 'k-other', other)).toMatchObject({
        replayed: true,
      });
      expect((await texts()).join('\n')).not.toContain('Alice Meyer');

      // An erasure through this server drops s2's kept answer at once, before any retry.
      const erasure = await post('/v1/erasures', { session_id: 's2', reference: 'DSR-2' }, 'k-erase');
      expect(erasure.status).toBe(200);
      expect((await texts()).join('\n')).not.toContain('Bob Stone');
      expect(
        JSON.parse((await post('/v1/state/items', write('s2', 'Bob Stone'), 'k-s2')).text),
      ).toMatchObject({
        code: 'response_erased',
      });
      // The erasure's own report holds nothing erased: its retry replays it.
      expect(await post('/v1/erasures', { session_id: 's2', reference: 'DSR-2' }, 'k-erase')).toMatchObject({
        status: 200,
        replayed: true,
      });
      expect(await post('/v1/state/items', write('s1', 'Carol Other'), 'k-other', other)).toMatchObject({
        replayed: true,
      });

      // Retention's erasure names no session: an answer kept before it is not replayed, as any
      // of its values may be among the ones it erased; the other tenant's still is.
      expect((await post('/v1/state/items', write('s3', 'Dora Old'), 'k-s3')).status).toBe(201);
      const twoDaysOn = createGatehouse({ store, clock: () => new Date(Date.now() + 2 * 86_400_000) });
      await twoDaysOn.putRetention({ values_after: '1d' });
      expect((await twoDaysOn.runRetention()).erased_items.items).toBeGreaterThan(0);
      const afterRetention = await post('/v1/state/items', write('s3', 'Dora Old'), 'k-s3');
      expect(JSON.parse(afterRetention.text)).toMatchObject({
        code: 'response_erased',
        detail: expect.stringMatching(
          /session s3, which was erased after it was kept \(the session, or its older values by retention\)/,
        ),
      });
      expect(afterRetention.text).not.toContain('Dora');
      expect(await post('/v1/state/items', write('s1', 'Carol Other'), 'k-other', other)).toMatchObject({
        replayed: true,
      });
    } finally {
      await server?.close();
      app.close();
      if (ttl.name === 'redis') await keyv.clear();
      await keyv.disconnect();
      await store.close();
    }
  }, 120_000);
});
