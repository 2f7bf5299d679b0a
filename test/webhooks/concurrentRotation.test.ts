/**
 * Secret rotations that overlap in time, on real stores (a SQLite file; PostgreSQL when
 * GATEHOUSE_TEST_DATABASE_URL is set): each rotation's caller was handed a secret that signs for
 * the overlap, so a receiver set up with either verifies the next delivery.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  assertWebhookUrlAllowed,
  createWebhookDispatcher,
  verifyWebhook,
} from '../../adapters/webhooks/index.js';
import { createGatehouse } from '../../src/index.js';
import { STORE_TARGETS } from '../history/storeTargets.js';

const urlPolicy = { allowInsecureLoopback: true };
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

describe.each(STORE_TARGETS)('concurrent rotations ($name)', (target) => {
  it('keep every secret they handed out signing for the overlap', async () => {
    const store = await target.open(target.place());
    cleanups.push(() => store.close());
    const received: Array<{ headers: Record<string, string>; body: string }> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        received.push({ headers: req.headers as Record<string, string>, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const gh = createGatehouse({
      store,
      checkWebhookUrl: async (url) => {
        await assertWebhookUrlAllowed(url, { policy: urlPolicy });
      },
    });
    const dispatcher = createWebhookDispatcher({ store, urlPolicy });
    cleanups.push(() => dispatcher.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    for (let round = 0; round < 8; round++) {
      const hook = await gh.createWebhook({ url, events: ['state_change'] });
      // Two operators (or a retried automation) rotate the same webhook at once.
      const rotated = await Promise.all([gh.rotateWebhookSecret(hook.id), gh.rotateWebhookSecret(hook.id)]);
      await gh.recordState({
        session_id: `s${round}`,
        key: 'test.k',
        value: 'v',
        type: 'fact',
        source: 'user_input',
      });
      received.length = 0;
      await dispatcher.drain();
      expect(received).toHaveLength(1);
      const [got] = received;
      for (const r of rotated) {
        expect(() => verifyWebhook(r.secret, got!.headers, got!.body)).not.toThrow();
      }
      await gh.deleteWebhook(hook.id);
    }
  });

  it('sign with at most the new secret and the three newest earlier ones, however often rotated', async () => {
    const store = await target.open(target.place());
    cleanups.push(() => store.close());
    const gh = createGatehouse({ store, checkWebhookUrl: async () => undefined });
    const hook = await gh.createWebhook({ url: 'https://hooks.example.org/h', events: ['state_change'] });
    const handed: string[] = [];
    for (let i = 0; i < 10; i++) handed.push((await gh.rotateWebhookSecret(hook.id)).secret);
    const stored = await store.getWebhook('default', hook.id);
    expect(stored!.secrets.map((s) => s.secret)).toEqual(handed.slice(-4));
    expect(stored!.secrets.filter((s) => s.expires_at === null)).toHaveLength(1);
  });
});
