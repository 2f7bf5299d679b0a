/**
 * The webhook sender against real receivers on loopback (development setting on), with a manual
 * clock so retries happen without sleeping.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../../adapters/sqlite/index.js';
import {
  assertWebhookUrlAllowed,
  createWebhookDispatcher,
  verifyWebhook,
  type WebhookDispatcher,
  type WebhookDispatcherOptions,
} from '../../../adapters/webhooks/index.js';
import { createGatehouse, createIdGenerator, type OutboxStore, type Store } from '../../../src/index.js';
import { manualClock } from '../../store/contract.js';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-dispatch-'));
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A loopback receiver whose answers are scripted per request. */
async function receiver(answer: (n: number, res: ServerResponse) => void) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      answer(received.length, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

const urlPolicy = { allowInsecureLoopback: true };

function setup(store: Store = openSqliteStore()) {
  const clock = manualClock(new Date().toISOString());
  const gh = createGatehouse({
    store,
    clock,
    ids: createIdGenerator(clock),
    checkWebhookUrl: async (url) => {
      await assertWebhookUrlAllowed(url, { policy: urlPolicy });
    },
  });
  const dispatchers: WebhookDispatcher[] = [];
  const dispatcher = (
    extra: Partial<Pick<WebhookDispatcherOptions, 'timeoutMs' | 'logger' | 'concurrency' | 'perTenant'>> = {},
  ) => {
    const d = createWebhookDispatcher({ store, urlPolicy, clock, random: () => 0.5, ...extra });
    dispatchers.push(d);
    return d;
  };
  cleanups.push(async () => {
    for (const d of dispatchers) await d.close();
    await store.close();
  });
  return { gh, clock, dispatcher, store };
}

const budget = { session_id: 's1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' };

describe('webhook dispatcher', () => {
  it('delivers once, signed so the standardwebhooks library verifies it', async () => {
    const r = await receiver((_n, res) => res.writeHead(204).end());
    const { gh, dispatcher } = setup();
    const hook = await gh.createWebhook({ url: r.url, events: ['state_change'] });
    const { event_id } = await gh.recordState(budget);
    expect(await dispatcher().drain()).toBe(1);
    expect(r.received).toHaveLength(1);
    const got = r.received[0]!;
    expect(got.headers['webhook-id']).toBe(event_id);
    expect(got.headers['content-type']).toBe('application/json');
    const payload = new Webhook(hook.secret).verify(
      got.body,
      got.headers as Record<string, string>,
    ) as Record<string, unknown>;
    expect(payload).toMatchObject({
      id: event_id,
      type: 'state_change',
      session_id: 's1',
      data: { key: 'budget.limit' },
    });
    const [delivery] = await gh.listDeliveries(hook.id);
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 204 });
    expect(await dispatcher().drain()).toBe(0);
  });

  it('retries 500 three times, delivers on the 4th attempt with the same webhook-id', async () => {
    const r = await receiver((n, res) => res.writeHead(n <= 3 ? 500 : 200).end());
    const { gh, dispatcher, clock } = setup();
    const hook = await gh.createWebhook({ url: r.url, events: ['*'] });
    await gh.recordState(budget);
    const d = dispatcher();
    const delays = [5_000, 300_000, 1_800_000];
    await d.drain();
    for (const delay of delays) {
      const [pending] = await gh.listDeliveries(hook.id);
      expect(pending!.status).toBe('pending');
      expect(Date.parse(pending!.next_attempt_at!) - clock().getTime()).toBe(delay);
      expect(await d.drain()).toBe(0);
      clock.advance(delay);
      await d.drain();
    }
    expect(r.received).toHaveLength(4);
    expect(new Set(r.received.map((x) => x.headers['webhook-id'])).size).toBe(1);
    const timestamps = r.received.map((x) => Number(x.headers['webhook-timestamp']));
    expect(timestamps[3]! - timestamps[0]!).toBe((5_000 + 300_000 + 1_800_000) / 1000);
    const last = r.received[3]!;
    const verified = verifyWebhook(hook.secret, last.headers as Record<string, string>, last.body, {
      now: clock,
    });
    expect(verified.type).toBe('state_change');
    const [delivery] = await gh.listDeliveries(hook.id);
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 4, last_status_code: 200 });
  });

  it('marks the delivery failed when the schedule is exhausted', async () => {
    const r = await receiver((_n, res) => res.writeHead(503).end());
    const { gh, dispatcher, clock } = setup();
    const hook = await gh.createWebhook({ url: r.url, events: ['*'] });
    await gh.recordState(budget);
    const d = dispatcher();
    for (let i = 0; i < 8; i++) {
      await d.drain();
      clock.advance(11 * 3600_000);
    }
    const [delivery] = await gh.listDeliveries(hook.id);
    expect(delivery).toMatchObject({
      status: 'failed',
      attempts: 8,
      last_status_code: 503,
      next_attempt_at: null,
    });
    expect(r.received).toHaveLength(8);
  });

  it("logs failed attempts by the endpoint's host, at most once a minute per webhook", async () => {
    const r = await receiver((_n, res) => res.writeHead(503).end());
    const { gh, dispatcher, clock } = setup();
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    // A token in the URL, as some endpoints take one: it must not reach the log.
    const hook = await gh.createWebhook({ url: `${r.url}?token=s3cret`, events: ['*'] });
    for (let i = 0; i < 3; i++) await gh.recordState({ ...budget, value: String(6000 + i) });
    const d = dispatcher({ logger });
    expect(await d.drain()).toBe(3);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 40,
      msg: 'webhook delivery failed; it will be retried',
      webhook_id: hook.id,
      host: new URL(r.url).host,
      attempts: 1,
      error: 'the endpoint answered HTTP 503',
    });
    expect(JSON.stringify(lines)).not.toContain('s3cret');
    // A minute on, the next failure is logged with the count of those in between.
    clock.advance(61_000);
    await d.drain();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ attempts: 2, failed_since_last_log: 2 });
  });

  it('a 410 disables the endpoint: nothing is queued for it until it is enabled again', async () => {
    const r = await receiver((n, res) => res.writeHead(n === 1 ? 410 : 200).end());
    const { gh, dispatcher } = setup();
    const hook = await gh.createWebhook({ url: r.url, events: ['*'] });
    await gh.recordState(budget);
    const d = dispatcher();
    await d.drain();
    expect((await gh.getWebhook(hook.id)).status).toBe('disabled');
    await gh.recordState({ ...budget, key: 'budget.currency', value: 'EUR' });
    expect(await d.drain()).toBe(0);
    expect(await gh.listDeliveries(hook.id)).toHaveLength(1);
    await gh.enableWebhook(hook.id);
    await gh.recordState({ ...budget, key: 'budget.owner', value: 'finance' });
    expect(await d.drain()).toBe(1);
    const deliveries = await gh.listDeliveries(hook.id);
    expect(deliveries.map((x) => x.status).sort()).toEqual(['delivered', 'failed']);
  });

  it('a timeout counts as a failed attempt', async () => {
    const r = await receiver(() => {
      /* never answers */
    });
    const { gh, dispatcher } = setup();
    const hook = await gh.createWebhook({ url: r.url, events: ['*'] });
    await gh.recordState(budget);
    await dispatcher({ timeoutMs: 300 }).drain();
    const [delivery] = await gh.listDeliveries(hook.id);
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
    expect(delivery!.last_error).toContain('timeout');
    expect(r.received).toHaveLength(1);
  });

  it('loses nothing when the sender restarts mid-backoff', async () => {
    const r = await receiver((n, res) => res.writeHead(n === 1 ? 500 : 200).end());
    const filename = join(dir, 'restart.db');
    const first = setup(openSqliteStore({ filename }));
    const hook = await first.gh.createWebhook({ url: r.url, events: ['*'] });
    await first.gh.recordState(budget);
    await first.dispatcher().drain();
    const now = first.clock().getTime();
    await cleanups.pop()!();

    const second = setup(openSqliteStore({ filename }));
    second.clock.advance(now - second.clock().getTime() + 6_000);
    expect(await second.dispatcher().drain()).toBe(1);
    const [delivery] = await second.gh.listDeliveries(hook.id);
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(r.received[0]!.headers['webhook-id']).toBe(r.received[1]!.headers['webhook-id']);
  });

  it('signs with old and new secret during a rotation overlap', async () => {
    const r = await receiver((_n, res) => res.writeHead(200).end());
    const { gh, dispatcher } = setup();
    const hook = await gh.createWebhook({ url: r.url, events: ['*'] });
    const rotated = await gh.rotateWebhookSecret(hook.id, { overlap_seconds: 3600 });
    await gh.recordState(budget);
    await dispatcher().drain();
    const got = r.received[0]!;
    expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [hook.secret, rotated.secret]) {
      expect(() => new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
    }
  });

  it('refuses at connect time a name that resolves to a private address, without dialling it', async () => {
    const store = openSqliteStore();
    const clock = manualClock(new Date().toISOString());
    const gh = createGatehouse({ store, clock, ids: createIdGenerator(clock) });
    const hook = await gh.createWebhook({ url: 'https://hooks.internal.example/x', events: ['*'] });
    await gh.recordState(budget);
    const d = createWebhookDispatcher({
      store,
      urlPolicy: { allowInsecureLoopback: false },
      resolve: async () => [{ address: '10.1.2.3', family: 4 }],
      clock,
      random: () => 0.5,
    });
    cleanups.push(async () => {
      await d.close();
      await store.close();
    });
    await d.drain();
    const [delivery] = await gh.listDeliveries(hook.id);
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
    expect(delivery!.last_error).toContain('GATEHOUSE_SSRF_BLOCKED');
  });

  it('drains a backlog larger than its slots, each delivery once, every outcome recorded', async () => {
    const r = await receiver((_n, res) => res.writeHead(204).end());
    const { gh, store, clock } = setup();
    const hook = await gh.createWebhook({ url: r.url, events: ['*'] });
    for (let i = 0; i < 30; i++) await gh.recordState({ ...budget, key: `budget.k${i}` });
    const attempts: string[] = [];
    const d = createWebhookDispatcher({
      store,
      urlPolicy,
      clock,
      concurrency: 3,
      onAttempt: (a) => attempts.push(a.deliveryId),
    });
    cleanups.push(() => d.close());
    expect(await d.drain()).toBe(30);
    expect(r.received).toHaveLength(30);
    expect(new Set(r.received.map((x) => x.headers['webhook-id'])).size).toBe(30);
    expect(new Set(attempts).size).toBe(30);
    const deliveries = await gh.listDeliveries(hook.id);
    expect(deliveries.every((x) => x.status === 'delivered' && x.attempts === 1)).toBe(true);
  });

  it('close() gives back deliveries it claimed but never started: due again at once', async () => {
    let answerFirst!: () => void;
    let arrived!: () => void;
    const firstArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const r = await receiver((n, res) => {
      if (n > 1) return void res.writeHead(204).end();
      answerFirst = () => res.writeHead(204).end();
      arrived();
    });
    const { gh, store, clock } = setup();
    const hook = await gh.createWebhook({ url: r.url, events: ['*'] });
    for (let i = 0; i < 3; i++) await gh.recordState({ ...budget, key: `budget.k${i}` });
    const first = createWebhookDispatcher({ store, urlPolicy, clock, concurrency: 1 });
    const draining = first.drain();
    await firstArrived;
    const closing = first.close();
    answerFirst();
    await closing;
    await draining;
    // Same instant: without the give-back the other two would be leased for another minute.
    const second = createWebhookDispatcher({ store, urlPolicy, clock });
    cleanups.push(() => second.close());
    expect(await second.drain()).toBe(2);
    const deliveries = await gh.listDeliveries(hook.id);
    expect(deliveries.map((x) => x.status)).toEqual(['delivered', 'delivered', 'delivered']);
  });

  it('claims a delivery only when a slot is free to send it: none waits in its lease for a slot', async () => {
    const { gh, store, clock } = setup();
    // The first answer comes 26 s later (by the clock), longer than a claimed delivery could wait.
    const r = await receiver((n, res) => {
      if (n === 1) clock.advance(26_000);
      res.writeHead(204).end();
    });
    await gh.createWebhook({ url: r.url, events: ['*'] });
    for (let i = 0; i < 3; i++) await gh.recordState({ ...budget, key: `budget.k${i}` });
    const released: string[] = [];
    const limits: number[] = [];
    const spied: OutboxStore = {
      claimDueDeliveries: (o) => {
        limits.push(o.limit);
        return store.claimDueDeliveries(o);
      },
      recordDeliveryAttempt: (t, id, a) => store.recordDeliveryAttempt(t, id, a),
      recordDeliveryAttempts: (a) => store.recordDeliveryAttempts(a),
      releaseDeliveries: (leases) => {
        released.push(...leases.map((l) => l.deliveryId));
        return store.releaseDeliveries(leases);
      },
      disableWebhook: (t, id, at) => store.disableWebhook(t, id, at),
      nextDueAt: () => store.nextDueAt(),
    };
    const d = createWebhookDispatcher({
      store: spied,
      urlPolicy,
      clock,
      concurrency: 1,
      leaseMs: 30_000,
      timeoutMs: 5_000,
    });
    cleanups.push(() => d.close());
    expect(await d.drain()).toBe(3);
    expect(released).toEqual([]);
    expect(Math.max(...limits)).toBe(1);
    expect(r.received).toHaveLength(3);
    const stamps = r.received.map((x) => Number(x.headers['webhook-timestamp']));
    expect(stamps[2]! - stamps[0]!).toBe(26);
  });

  it("a tenant whose endpoint never answers holds at most its share of the slots; another tenant's event goes out meanwhile", async () => {
    const { gh, dispatcher } = setup();
    // Closed first (cleanups run last-in first-out): the hanging attempts end with it.
    const silent = await receiver(() => {
      // Never answers: each attempt holds its slot until its timeout.
    });
    const healthy = await receiver((_n, res) => res.writeHead(204).end());
    const hog = { tenantId: 'hog' };
    const hogHook = await gh.createWebhook({ url: silent.url, events: ['state_change'] }, hog);
    for (let n = 0; n < 20; n++) await gh.recordState({ ...budget, key: `budget.k${n}` }, hog);
    const other = { tenantId: 'other' };
    const otherHook = await gh.createWebhook({ url: healthy.url, events: ['state_change'] }, other);
    await gh.recordState(budget, other);
    const d = dispatcher({ concurrency: 4, timeoutMs: 120_000 });
    d.start();
    // The hog's 20 were due first; with every slot theirs, this would wait for a timeout.
    await vi.waitFor(() => expect(healthy.received).toHaveLength(1), { timeout: 10_000 });
    await vi.waitFor(async () => {
      expect((await gh.listDeliveries(otherHook.id, {}, other))[0]).toMatchObject({ status: 'delivered' });
    });
    // The hog holds its share (all slots but one), each attempt still hanging.
    expect(silent.received).toHaveLength(3);
    const hogDeliveries = await gh.listDeliveries(hogHook.id, {}, hog);
    expect(hogDeliveries.filter((x) => x.attempts > 0)).toHaveLength(0);
  });

  it('refuses a perTenant share that would send nothing', () => {
    for (const perTenant of [0, -1, 1.5, Number.NaN]) {
      expect(() => createWebhookDispatcher({ store: openSqliteStore(), urlPolicy, perTenant })).toThrow(
        /perTenant must be a positive integer/,
      );
    }
  });

  it('close() keeps its deadline while an endpoint never answers: the attempt is aborted and recorded', async () => {
    const silent = await receiver(() => {
      // Never answers.
    });
    const { gh, dispatcher } = setup();
    const hook = await gh.createWebhook({ url: silent.url, events: ['state_change'] });
    await gh.recordState(budget);
    const d = dispatcher({ timeoutMs: 120_000 });
    d.start();
    await vi.waitFor(() => expect(silent.received).toHaveLength(1), { timeout: 10_000 });
    // A graceful close of the HTTP agent would wait for the answer, up to the 120 s timeout.
    const closed = await Promise.race([
      d.close(100).then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000)),
    ]);
    expect(closed).toBe('closed');
    const [delivery] = await gh.listDeliveries(hook.id);
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
  });

  it('the background loop delivers as events happen, and close() is safe twice', async () => {
    const r = await receiver((_n, res) => res.writeHead(200).end());
    const store = openSqliteStore();
    let d: WebhookDispatcher | undefined;
    const gh = createGatehouse({
      store,
      checkWebhookUrl: async (url) => {
        await assertWebhookUrlAllowed(url, { policy: urlPolicy });
      },
      onDeliveriesQueued: () => d?.wake(),
    });
    d = createWebhookDispatcher({ store, urlPolicy, pollIntervalMs: 5000 });
    d.start();
    cleanups.push(async () => {
      await d!.close();
      await d!.close();
      await store.close();
    });
    await gh.createWebhook({ url: r.url, events: ['gate_evaluation'] });
    await gh.evaluate({ session_id: 's1', action: 'email.send' });
    for (let i = 0; i < 200 && r.received.length === 0; i++) await new Promise((res) => setTimeout(res, 10));
    expect(r.received).toHaveLength(1);
    expect(JSON.parse(r.received[0]!.body)).toMatchObject({
      type: 'gate_evaluation',
      data: { action: 'email.send' },
    });
  });
});
