// 6. The webhook sender: how fast the outbox dispatcher (createWebhookDispatcher, with
// `urlPolicy: { allowInsecureLoopback: true }`) delivers to a loopback receiver in another
// process, against a bare undici POST loop of the same payloads at the same concurrency (8);
// and the time from `evaluate` to the receiver holding the event, at a light steady rate.
// Both sides are warmed up first and each timed run opens its own connections.

import { Agent, request } from 'undici';
import { startServer } from './lib/child.js';
import { load, scratchDir } from './lib/env.js';
import { summarize } from './lib/measure.js';
import { BENCH_POLICY_YAML, evaluateRequests, OWNER_SOURCES, sessionItems } from './lib/workload.js';

export const name = 'webhooks';
export const title = '6. Webhook sender: deliveries/s to a loopback receiver, and evaluate → delivery';

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function run({ quick }) {
  const core = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const { createWebhookDispatcher, assertWebhookUrlAllowed } = await load('adapters/webhooks/index.js');
  const scratch = scratchDir('webhooks');
  const receiver = await startServer({ mode: 'receiver' });
  const store = openSqliteStore({ filename: `${scratch.dir}/gatehouse.db` });
  const urlPolicy = { allowInsecureLoopback: true };
  let dispatcher;
  let delivered = 0;
  let failed = 0;
  let onDelivered = () => {};
  try {
    const gatehouse = core.createGatehouse({
      store,
      policy: core.compilePolicy(BENCH_POLICY_YAML),
      checkWebhookUrl: (url) => assertWebhookUrlAllowed(url, { policy: urlPolicy }),
      onDeliveriesQueued: () => dispatcher?.wake(),
    });
    for (const item of sessionItems('bench'))
      await gatehouse.recordState(item, { allowedSources: OWNER_SOURCES });
    await gatehouse.createWebhook({ url: `${receiver.url}/hook`, events: ['gate_evaluation'] });
    const requests = evaluateRequests('bench');
    const newDispatcher = () =>
      createWebhookDispatcher({
        store,
        urlPolicy,
        onError: (e) => {
          throw e;
        },
        onAttempt: (a) => {
          if (a.status === 'delivered') {
            delivered += 1;
            onDelivered();
          } else failed += 1;
        },
      });

    // The same payloads, signed the same way, POSTed by a bare undici loop with 8 in flight, each
    // run through its own fresh Agent (new connections), as each dispatcher has its own.
    const secret = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
    const bareLoop = async (count) => {
      const recent = await store.queryEvents('default', {
        type: 'gate_evaluation',
        order: 'desc',
        limit: 200,
      });
      const payloads = recent.map((e) => {
        const { decision_id: _d, ...event } = e;
        return { id: e.event_id, body: core.buildWebhookPayload(event) };
      });
      const agent = new Agent({ keepAliveTimeout: 4_000 });
      let sent = 0;
      const start = performance.now();
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (sent < count) {
            const p = payloads[sent++ % payloads.length];
            const ts = Math.floor(Date.now() / 1000);
            const res = await request(`${receiver.url}/hook`, {
              method: 'POST',
              body: p.body,
              dispatcher: agent,
              headers: {
                'content-type': 'application/json',
                'webhook-id': p.id,
                'webhook-timestamp': String(ts),
                'webhook-signature': core.webhookSignatureHeader([secret], p.id, ts, p.body),
              },
            });
            await res.body.dump();
          }
        }),
      );
      const ms = performance.now() - start;
      await agent.close();
      return ms;
    };

    // Drain: a backlog of N events queued while no dispatcher runs, then delivered as fast as one
    // (a new dispatcher, so new connections) can.
    const drainBacklog = async (count) => {
      for (let i = 0; i < count; i += 1) await gatehouse.evaluate(requests[i % requests.length]);
      delivered = 0;
      dispatcher = newDispatcher();
      const start = performance.now();
      const drained = new Promise((resolve) => {
        onDelivered = () => delivered >= count && resolve();
      });
      dispatcher.start();
      let giveUp;
      await Promise.race([drained, new Promise((resolve) => (giveUp = setTimeout(resolve, 120_000)))]);
      clearTimeout(giveUp);
      const ms = performance.now() - start;
      if (delivered < count)
        throw new Error(`only ${delivered} of ${count} deliveries in 120 s (${failed} failed)`);
      return ms;
    };

    // Warm-up, untimed: both paths once, so that neither is measured with cold code (a run of a few
    // hundred requests is otherwise mostly JIT compilation, and whichever ran second had it done).
    // The full run warms each side with as many as it times: after 600, V8's compiler threads
    // still took ~75 µs per delivery of the timed drain (the larger code path) and its rate rose
    // two-fold from its first 500 deliveries to its last, so the row measured warm-up, not the
    // steady state (measured per thread for issue #15).
    const backlog = quick ? 600 : 2000;
    const warm = quick ? 300 : backlog;
    await drainBacklog(warm);
    await dispatcher.close(5000);
    await bareLoop(warm);

    const drainMs = await drainBacklog(backlog);
    const bareMs = await bareLoop(backlog);

    // Latency: one evaluate every 20 ms, each timed from the call to the receiver's arrival.
    const samples = quick ? 100 : 300;
    const started = new Map();
    const before = delivered;
    for (let i = 0; i < samples; i += 1) {
      const t0 = now();
      const d = await gatehouse.evaluate(requests[i % requests.length]);
      started.set(d.decision_id, t0);
      await sleep(20);
    }
    const deadline = Date.now() + 30_000;
    while (delivered - before < samples && Date.now() < deadline) await sleep(20);
    const { arrivals } = await receiver.report();
    const latencies = [...started]
      .filter(([id]) => arrivals[id] !== undefined)
      .map(([id, t0]) => (arrivals[id] - t0) * 1000);
    if (latencies.length < samples)
      throw new Error(`only ${latencies.length} of ${samples} timed events arrived`);
    const lat = summarize(latencies, 1);

    const rate = (n, ms) => n / (ms / 1000);
    const dispatcherRate = rate(backlog, drainMs);
    const bareRate = rate(backlog, bareMs);
    return {
      rows: [
        {
          name: 'bare_post',
          label: 'bare undici POST, 8 in flight (baseline)',
          ops: backlog,
          ops_per_s: bareRate,
          p50_us: null,
          p99_us: null,
          ratio: 1,
        },
        {
          name: 'dispatcher',
          label: `dispatcher drain of ${backlog} queued deliveries`,
          ops: backlog,
          ops_per_s: dispatcherRate,
          p50_us: null,
          p99_us: null,
          ratio: dispatcherRate / bareRate,
        },
        {
          name: 'evaluate_to_delivery',
          label: 'evaluate → receiver, one per 20 ms (latency)',
          ops: latencies.length,
          ops_per_s: null,
          p50_us: lat.p50_us,
          p99_us: lat.p99_us,
          ratio: null,
        },
      ],
      targets: [
        {
          what: 'dispatcher drain ÷ bare undici POSTs',
          value: dispatcherRate / bareRate,
          op: '>=',
          target: 0.6,
        },
      ],
      notes: [
        `deliveries: ${delivered} delivered, ${failed} not; evaluate → delivery p50 ${(lat.p50_us / 1000).toFixed(2)} ms`,
      ],
      extra: { deliveries_per_s: dispatcherRate, evaluate_to_delivery_p50_us: lat.p50_us },
    };
  } finally {
    onDelivered = () => {};
    await dispatcher?.close(5000);
    await store.close();
    await receiver.stop();
    scratch.remove();
  }
}
