/**
 * `POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver` through the HTTP app, on real stores
 * (a SQLite file; PostgreSQL when GATEHOUSE_TEST_DATABASE_URL is set), with a receiver on
 * loopback: a deleted webhook's delivery is not found (it could never be sent); a disabled
 * webhook's is queued and goes out once the webhook is enabled.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../adapters/http/index.js';
import { assertWebhookUrlAllowed, createWebhookDispatcher } from '../../adapters/webhooks/index.js';
import { createApiKey, createGatehouse, createIdGenerator, systemRandomBytes } from '../../src/index.js';
import { STORE_TARGETS, type StoreTarget } from '../history/storeTargets.js';
import { startHeldReceiver } from './heldReceiver.js';

const urlPolicy = { allowInsecureLoopback: true };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

/** A webhook with one delivered delivery, and the app and sender around it. */
async function setup(target: StoreTarget) {
  const store = await target.open(target.place());
  const receiver = await startHeldReceiver();
  receiver.release();
  const gh = createGatehouse({
    store,
    checkWebhookUrl: async (url) => {
      await assertWebhookUrlAllowed(url, { policy: urlPolicy });
    },
  });
  const dispatcher = createWebhookDispatcher({ store, urlPolicy });
  cleanups.push(async () => {
    await dispatcher.close();
    await receiver.close();
    await store.close();
  });
  const app = createHttpApp({ gatehouse: gh, rateLimit: false });
  const { secret } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['webhooks:manage'] },
  );
  const hook = await gh.createWebhook({ url: receiver.url, events: ['state_change'] });
  await gh.recordState({ session_id: 's1', key: 'test.k', value: 'v', type: 'fact', source: 'user_input' });
  expect(await dispatcher.drain()).toBe(1);
  const [delivery] = await gh.listDeliveries(hook.id);
  const redeliver = () =>
    app.request(`/v1/webhooks/${hook.id}/deliveries/${delivery!.delivery_id}/redeliver`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}` },
    });
  return { store, gh, dispatcher, receiver, hook, delivery: delivery!, redeliver };
}

describe.each(STORE_TARGETS)('redeliver ($name)', (target) => {
  it("answers 404 for a deleted webhook's delivery and leaves it as it was", async () => {
    const { store, gh, hook, delivery, redeliver } = await setup(target);
    await gh.deleteWebhook(hook.id);
    const res = await redeliver();
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'not_found' });
    expect(await store.getDelivery('default', delivery.delivery_id)).toMatchObject({ status: 'delivered' });
  });

  it("queues a disabled webhook's delivery, sent once the webhook is enabled", async () => {
    const { store, gh, dispatcher, receiver, hook, delivery, redeliver } = await setup(target);
    await store.disableWebhook('default', hook.id, new Date().toISOString());
    const res = await redeliver();
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ delivery_id: delivery.delivery_id, status: 'pending' });
    expect(await dispatcher.drain()).toBe(0);
    await gh.enableWebhook(hook.id);
    expect(await dispatcher.drain()).toBe(1);
    expect(receiver.received).toHaveLength(2);
  });
});
