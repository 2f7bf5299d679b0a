/**
 * The sender against what a hostile or slow world does to it, on real stores (a SQLite file;
 * PostgreSQL when GATEHOUSE_TEST_DATABASE_URL is set) and receivers on loopback only: an attempt
 * whose lease ran out (or was reset by a redeliver) must not write its outcome over what happened
 * since, and an attempt's hard time limit holds while its host name is still being resolved.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  assertWebhookUrlAllowed,
  createWebhookDispatcher,
  type WebhookDispatcherOptions,
} from '../../adapters/webhooks/index.js';
import { createGatehouse, type Store } from '../../src/index.js';
import { STORE_TARGETS, type StoreTarget } from '../history/storeTargets.js';

const urlPolicy = { allowInsecureLoopback: true };
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

const fact = { session_id: 's1', key: 'test.k', value: 'v', type: 'fact', source: 'user_input' };

/**
 * A loopback receiver: the first request is held until `release(status)` answers it; every later
 * one is answered `later` at once.
 */
async function heldFirst(later = 204) {
  const received: string[] = [];
  let arrived!: () => void;
  const firstArrived = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  let held: ServerResponse | undefined;
  const server = createServer((req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () => {
      received.push(String(req.headers['webhook-id']));
      if (received.length > 1) return void res.writeHead(later).end();
      held = res;
      arrived();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    port: (server.address() as AddressInfo).port,
    received,
    firstArrived,
    release: (status: number) => held?.writeHead(status).end(),
  };
}

async function setup(target: StoreTarget) {
  const store: Store = await target.open(target.place());
  cleanups.push(() => store.close());
  const gh = createGatehouse({
    store,
    checkWebhookUrl: async (url) => {
      await assertWebhookUrlAllowed(url, {
        policy: urlPolicy,
        resolve: async () => [{ address: '127.0.0.1', family: 4 }],
      });
    },
  });
  const sender = (options: Pick<WebhookDispatcherOptions, 'leaseMs' | 'timeoutMs' | 'resolve'> = {}) => {
    const d = createWebhookDispatcher({ store, urlPolicy, concurrency: 1, ...options });
    cleanups.push(() => d.close(100));
    return d;
  };
  return { store, gh, sender };
}

describe.each(STORE_TARGETS)('an attempt records only over its own lease ($name)', (target) => {
  it('a redeliver asked while an attempt is in flight is sent after that attempt, not lost under its outcome', async () => {
    const { gh, sender } = await setup(target);
    const r = await heldFirst();
    const hook = await gh.createWebhook({ url: `http://127.0.0.1:${r.port}/hook`, events: ['state_change'] });
    await gh.recordState(fact);
    const [delivery] = await gh.listDeliveries(hook.id);
    const d = sender();
    const draining = d.drain();
    await r.firstArrived;
    // The receiver lost what it is about to answer; its owner asks for it again meanwhile.
    await gh.redeliver(hook.id, delivery!.delivery_id);
    r.release(204);
    await draining;
    await d.drain();
    expect(r.received).toHaveLength(2);
    const [after] = await gh.listDeliveries(hook.id);
    expect(after).toMatchObject({ status: 'delivered', last_status_code: 204 });
  });

  it('a sender whose lease ran out writes nothing over the delivery another sender has delivered since', async () => {
    const { gh, sender } = await setup(target);
    const r = await heldFirst(204);
    const hook = await gh.createWebhook({ url: `http://127.0.0.1:${r.port}/hook`, events: ['state_change'] });
    await gh.recordState(fact);
    // The first sender's attempt outlives its lease (a receiver slower than the lease).
    const slow = sender({ leaseMs: 150 });
    const slowDrain = slow.drain();
    await r.firstArrived;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await sender().drain()).toBe(1);
    expect(await gh.listDeliveries(hook.id)).toMatchObject([{ status: 'delivered', attempts: 1 }]);
    // Now the slow one's receiver answers 500: that attempt's outcome is stale.
    r.release(500);
    await slowDrain;
    const [after] = await gh.listDeliveries(hook.id);
    expect(after).toMatchObject({ status: 'delivered', last_status_code: 204, next_attempt_at: null });
  });
});

describe.each(STORE_TARGETS)('the hard time limit of an attempt ($name)', (target) => {
  it('ends an attempt whose host name does not resolve within the limit, and sends nothing later', async () => {
    const { gh, sender } = await setup(target);
    const r = await heldFirst(204);
    const hook = await gh.createWebhook({
      url: `http://slow-dns.test:${r.port}/hook`,
      events: ['state_change'],
    });
    await gh.recordState(fact);
    let answer!: () => void;
    const resolverAnswered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    // An authoritative name server that takes its time (the receiver's owner runs it).
    const resolve = async () => {
      await resolverAnswered;
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const d = sender({ timeoutMs: 200, resolve });
    // Before the sender closes (cleanups run last first): its agent waits for the connection.
    cleanups.push(() => answer());
    const started = Date.now();
    const outcome = await Promise.race([
      d.drain().then(() => 'drained'),
      new Promise((done) => setTimeout(() => done('still waiting'), 3000)),
    ]);
    expect(outcome).toBe('drained');
    expect(Date.now() - started).toBeLessThan(2000);
    const [after] = await gh.listDeliveries(hook.id);
    expect(after).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
    expect(after!.last_error).toContain('timeout');
    // The name resolves at last: the attempt that gave up sends nothing.
    answer();
    await new Promise((done) => setTimeout(done, 200));
    expect(r.received).toHaveLength(0);
  });
});
