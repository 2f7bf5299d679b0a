/**
 * Self-checking demo, all on loopback: an in-process Gatehouse with its webhook sender (the
 * development setting allows http:// to loopback), the receiver of receiver.js, one blocked
 * transfer, and the proof that it arrived verified and exactly once even when delivered twice.
 *
 *   npm run build && node examples/webhook-receiver/demo.js
 */
import { createServer } from 'node:http';
import { openSqliteStore } from '../../dist/adapters/sqlite/index.js';
import {
  assertWebhookUrlAllowed,
  createDeduper,
  createWebhookDispatcher,
} from '../../dist/adapters/webhooks/index.js';
import { createGatehouse } from '../../dist/src/index.js';
import { createReceiver } from './receiver.js';

const handled = [];
const urlPolicy = { allowInsecureLoopback: true };
const store = openSqliteStore();
let dispatcher;
const gatehouse = createGatehouse({
  store,
  checkWebhookUrl: (url) => assertWebhookUrlAllowed(url, { policy: urlPolicy }).then(() => undefined),
  onDeliveriesQueued: () => dispatcher.wake(),
});
dispatcher = createWebhookDispatcher({ store, urlPolicy });

// The secret is known once the webhook is registered, which needs the server's port first.
let secret = '';
const deduper = createDeduper();
const handle = async (event) => {
  handled.push(event);
};
const server = createServer((req, res) => createReceiver({ secret, handle, deduper })(req, res));
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/gatehouse`;

const hook = await gatehouse.createWebhook({
  url,
  events: ['gate_evaluation'],
  filter: { verdicts: ['Block'] },
});
secret = hook.secret;
dispatcher.start();

await gatehouse.recordState({
  session_id: 'demo',
  key: 'budget.limit',
  value: '5000',
  type: 'fact',
  source: 'user_input',
});
await gatehouse.evaluate({ session_id: 'demo', action: 'payments.transfer', params: { amount: 10 } }); // Allow: not sent
const blocked = await gatehouse.evaluate({
  session_id: 'demo',
  action: 'payments.transfer',
  params: { amount: 9000 },
});

const waitFor = async (check) => {
  for (let i = 0; i < 500 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
};
await waitFor(async () => (await gatehouse.listDeliveries(hook.id))[0]?.status === 'delivered');
const [delivery] = await gatehouse.listDeliveries(hook.id);
await gatehouse.redeliver(hook.id, delivery.delivery_id); // a duplicate: the receiver drops it
await waitFor(async () => (await gatehouse.listDeliveries(hook.id))[0]?.attempts === 2);

await dispatcher.close();
server.close();
await store.close();

const ok = handled.length === 1 && handled[0].data.decision_id === blocked.decision_id;
console.log(`received ${handled.length} blocked action(s): ${handled.map((e) => e.data.reason).join('; ')}`);
console.log(ok ? 'demo ok' : 'demo FAILED');
process.exit(ok ? 0 : 1);
