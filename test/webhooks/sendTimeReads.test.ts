/**
 * An attempt sends the webhook and the event as they are when it starts, not as they were when
 * the sender first saw the delivery: on real stores (a SQLite file; PostgreSQL when
 * GATEHOUSE_TEST_DATABASE_URL is set), to real receivers on loopback. Each test holds the
 * sender's only slot with a first request, changes something, lets the first request go, and
 * looks at what the sender sends next.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  assertWebhookUrlAllowed,
  createWebhookDispatcher,
  verifyWebhook,
} from '../../adapters/webhooks/index.js';
import { type CreateWebhookInput, createGatehouse, type Store } from '../../src/index.js';
import { STORE_TARGETS, type StoreTarget } from '../history/storeTargets.js';
import { type HeldReceiver, startHeldReceiver } from './heldReceiver.js';

const urlPolicy = { allowInsecureLoopback: true };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

const fact = (session: string, key: string, value: string) => ({
  session_id: session,
  key,
  value,
  type: 'fact',
  source: 'user_input',
});

async function setup(target: StoreTarget, events: CreateWebhookInput['events'] = ['state_change']) {
  const store: Store = await target.open(target.place());
  const receiver: HeldReceiver = await startHeldReceiver();
  const gh = createGatehouse({
    store,
    checkWebhookUrl: async (url) => {
      await assertWebhookUrlAllowed(url, { policy: urlPolicy });
    },
  });
  // One slot: everything after the first request waits for it.
  const dispatcher = createWebhookDispatcher({ store, urlPolicy, concurrency: 1 });
  cleanups.push(async () => {
    receiver.release();
    await dispatcher.close();
    await receiver.close();
    await store.close();
  });
  const hook = await gh.createWebhook({ url: receiver.url, events });
  return { store, gh, dispatcher, receiver, hook };
}

describe.each(STORE_TARGETS)('the sender reads at send time ($name)', (target) => {
  it('sends nothing more once the webhook is deleted', async () => {
    const { gh, dispatcher, receiver, hook } = await setup(target);
    for (let i = 0; i < 4; i++) await gh.recordState(fact('s1', `test.k${i}`, String(i)));
    const draining = dispatcher.drain();
    await receiver.firstArrived;
    await gh.deleteWebhook(hook.id);
    receiver.release();
    await draining;
    expect(receiver.received).toHaveLength(1);
  });

  it('sends nothing more once another instance disabled the webhook (its 410), and the rest once enabled', async () => {
    const { store, gh, dispatcher, receiver, hook } = await setup(target);
    for (let i = 0; i < 4; i++) await gh.recordState(fact('s1', `test.k${i}`, String(i)));
    const draining = dispatcher.drain();
    await receiver.firstArrived;
    // What the sender of another instance does on a 410.
    await store.disableWebhook('default', hook.id, new Date().toISOString());
    receiver.release();
    await draining;
    expect(receiver.received).toHaveLength(1);
    expect((await gh.listDeliveries(hook.id, { status: 'pending' })).length).toBe(3);
    await gh.enableWebhook(hook.id);
    expect(await dispatcher.drain()).toBe(3);
    expect(receiver.received).toHaveLength(4);
  });

  it('signs with the new secret only once it was rotated with overlap_seconds 0', async () => {
    const { gh, dispatcher, receiver, hook } = await setup(target);
    for (let i = 0; i < 4; i++) await gh.recordState(fact('s1', `test.k${i}`, String(i)));
    const draining = dispatcher.drain();
    await receiver.firstArrived;
    const rotated = await gh.rotateWebhookSecret(hook.id, { overlap_seconds: 0 });
    receiver.release();
    await draining;
    const later = receiver.received.slice(1);
    expect(later).toHaveLength(3);
    for (const got of later) {
      const headers = got.headers as Record<string, string>;
      expect(() => verifyWebhook(rotated.secret, headers, got.body)).not.toThrow();
      expect(() => verifyWebhook(hook.secret, headers, got.body)).toThrow();
    }
  });

  it('sends an event of a session erased since it was queued with the erased markers, not the value', async () => {
    const { gh, dispatcher, receiver } = await setup(target, ['*']);
    const marker = `Alice-${Math.random().toString(36).slice(2)}`;
    await gh.recordState(fact('other', 'agent.note', 'first'));
    const { event_id } = await gh.recordState(fact('s1', 'customer.name', marker));
    const draining = dispatcher.drain();
    await receiver.firstArrived;
    await gh.eraseSession({ session_id: 's1', reference: 'DSR-1' });
    receiver.release();
    await draining;
    const sent = receiver.received.find((r) => r.headers['webhook-id'] === event_id);
    expect(sent).toBeDefined();
    expect(sent!.body).not.toContain(marker);
    expect(JSON.parse(sent!.body).data.value).toEqual({ erased: true, by: expect.any(Number) });
    expect(receiver.received.some((r) => JSON.parse(r.body).type === 'erasure.completed')).toBe(true);
  });
});
