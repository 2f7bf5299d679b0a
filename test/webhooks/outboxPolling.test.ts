/**
 * The sender looks at the outbox when something can be claimed, not in a loop: the store's
 * `nextDueAt` is the earliest time a claim can take a delivery (a disabled webhook's never, a
 * leased one's at its lease's end), and the loop does not look again at once when the due time
 * has passed but nothing was claimed. On real stores (a SQLite file; PostgreSQL when
 * GATEHOUSE_TEST_DATABASE_URL is set), with receivers on loopback; claims are counted, not timed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { assertWebhookUrlAllowed, createWebhookDispatcher } from '../../adapters/webhooks/index.js';
import { createGatehouse, createIdGenerator, type OutboxStore, type Store } from '../../src/index.js';
import { STORE_TARGETS, type StoreTarget } from '../history/storeTargets.js';
import { manualClock } from '../store/contract.js';
import { startHeldReceiver } from './heldReceiver.js';

const urlPolicy = { allowInsecureLoopback: true };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

const fact = (key: string) => ({ session_id: 's1', key, value: 'v', type: 'fact', source: 'user_input' });

async function openStore(target: StoreTarget): Promise<Store> {
  const store = await target.open(target.place());
  cleanups.push(() => store.close());
  return store;
}

/** The store's outbox, counting the claims made through it. */
function countingClaims(store: Store): { outbox: OutboxStore; claims: () => number } {
  let claims = 0;
  const outbox: OutboxStore = {
    claimDueDeliveries: (o) => {
      claims += 1;
      return store.claimDueDeliveries(o);
    },
    recordDeliveryAttempt: (t, id, a) => store.recordDeliveryAttempt(t, id, a),
    recordDeliveryAttempts: (a) => store.recordDeliveryAttempts(a),
    releaseDeliveries: (leases) => store.releaseDeliveries(leases),
    disableWebhook: (t, id, at) => store.disableWebhook(t, id, at),
    nextDueAt: () => store.nextDueAt(),
  };
  return { outbox, claims: () => claims };
}

/** Claims made in one second of a sender whose poll interval is one second. */
async function claimsInOneSecond(claims: () => number): Promise<number> {
  const before = claims();
  await sleep(1000);
  return claims() - before;
}

it('does not look again at once when nothing was claimed though the store says something is due', async () => {
  const store = await openStore(STORE_TARGETS[0]!);
  const { outbox, claims } = countingClaims(store);
  // A store whose nextDueAt counts what its claim passes over: due long ago, never claimable.
  const d = createWebhookDispatcher({
    store: { ...outbox, nextDueAt: async () => '2000-01-01T00:00:00.000Z' },
    urlPolicy,
    pollIntervalMs: 1000,
  });
  cleanups.push(() => d.close());
  d.start();
  expect(await claimsInOneSecond(claims)).toBeLessThan(10);
});

describe.each(STORE_TARGETS)('the outbox is looked at when something can be claimed ($name)', (target) => {
  it('nextDueAt passes over disabled webhooks and counts a leased delivery at its lease end', async () => {
    const store = await openStore(target);
    const clock = manualClock('2026-01-01T00:00:00.000Z');
    // No sender runs here: the URLs are never dialled.
    const gh = createGatehouse({ store, clock, ids: createIdGenerator(clock) });
    const disabled = await gh.createWebhook({ url: 'https://hooks.example.com/a', events: ['state_change'] });
    await gh.recordState(fact('test.k0'));
    await store.disableWebhook('default', disabled.id, clock().toISOString());
    expect(await store.nextDueAt()).toBeNull();

    clock.advance(60_000);
    await gh.createWebhook({ url: 'https://hooks.example.com/b', events: ['state_change'] });
    await gh.recordState(fact('test.k1'));
    const due = clock().toISOString();
    expect(await store.nextDueAt()).toBe(due);

    const leaseUntil = new Date(clock().getTime() + 60_000).toISOString();
    expect(await store.claimDueDeliveries({ now: due, leaseUntil, limit: 10 })).toHaveLength(1);
    expect(await store.nextDueAt()).toBe(leaseUntil);

    clock.advance(5_000);
    await gh.recordState(fact('test.k2'));
    expect(await store.nextDueAt()).toBe(clock().toISOString());
  });

  it('does not poll in a loop while a 410-disabled webhook still has pending deliveries', async () => {
    const store = await openStore(target);
    const receiver = await startHeldReceiver(410);
    receiver.release();
    const gh = createGatehouse({
      store,
      checkWebhookUrl: async (url) => {
        await assertWebhookUrlAllowed(url, { policy: urlPolicy });
      },
    });
    const hook = await gh.createWebhook({ url: receiver.url, events: ['state_change'] });
    for (let i = 0; i < 3; i++) await gh.recordState(fact(`test.k${i}`));
    const { outbox, claims } = countingClaims(store);
    const d = createWebhookDispatcher({ store: outbox, urlPolicy, concurrency: 1, pollIntervalMs: 1000 });
    cleanups.push(async () => {
      await d.close();
      await receiver.close();
    });
    d.start();
    while ((await gh.getWebhook(hook.id)).status !== 'disabled') await sleep(10);
    expect(await claimsInOneSecond(claims)).toBeLessThan(10);
    expect(receiver.received).toHaveLength(1);
    expect(await gh.listDeliveries(hook.id, { status: 'pending' })).toHaveLength(2);
  });

  it('does not poll in a loop while an attempt is in flight', async () => {
    const store = await openStore(target);
    const receiver = await startHeldReceiver();
    const gh = createGatehouse({
      store,
      checkWebhookUrl: async (url) => {
        await assertWebhookUrlAllowed(url, { policy: urlPolicy });
      },
    });
    await gh.createWebhook({ url: receiver.url, events: ['state_change'] });
    await gh.recordState(fact('test.k0'));
    const { outbox, claims } = countingClaims(store);
    const d = createWebhookDispatcher({ store: outbox, urlPolicy, pollIntervalMs: 1000 });
    cleanups.push(async () => {
      receiver.release();
      await d.close();
      await receiver.close();
    });
    d.start();
    await receiver.firstArrived;
    expect(await claimsInOneSecond(claims)).toBeLessThan(10);
  });
});
