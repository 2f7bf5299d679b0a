// One Gatehouse instance on PostgreSQL for bench/postgres.js (forked, never run by hand).
// argv[2]: { url, schema, op: 'evaluate' | 'record' | 'floor', seconds, concurrency, worker }.
// Waits for 'go', runs `concurrency` loops of `op` for `seconds`, sends { latencies, elapsedMs }.

import pg from 'pg';
import { load } from '../lib/env.js';
import { BENCH_POLICY_YAML, evaluateRequests } from '../lib/workload.js';

const o = JSON.parse(process.argv[2]);
setTimeout(() => process.exit(3), 10 * 60_000).unref();
process.on('disconnect', () => process.exit(0));

const core = await load('src/index.js');
const { openPostgresStore } = await load('adapters/postgres/index.js');
const store = await openPostgresStore({
  connectionString: o.url,
  schema: o.schema,
  pool: { max: o.concurrency + 2 },
  migrate: false,
});
const gatehouse = core.createGatehouse({ store, policy: core.compilePolicy(BENCH_POLICY_YAML) });
const requests = evaluateRequests('bench');
const floorPool = o.op === 'floor' ? new pg.Pool({ connectionString: o.url, max: o.concurrency + 2 }) : null;

let counter = 0;
async function once(loop) {
  const i = counter++;
  switch (o.op) {
    case 'evaluate':
      return gatehouse.evaluate(requests[i % requests.length]);
    case 'record': {
      // 50 sessions × 10 keys per worker, every item first written by the user; 10% conflicts.
      const n = 500 + i;
      const source = n % 10 === 9 ? 'tool_output' : 'user_input';
      return gatehouse.recordState({
        session_id: `w${o.worker}-agent-${n % 50}`,
        key: `task.field_${Math.floor(n / 50) % 10}`,
        value: `value ${n} ${source}`,
        type: 'fact',
        source,
      });
    }
    default:
      return floorPool.query(
        `INSERT INTO "${o.schema}".bench_floor (worker, loop, n, data) VALUES ($1, $2, $3, $4)`,
        [o.worker, loop, i, o.floorData],
      );
  }
}

if (o.op === 'record') {
  for (let n = 0; n < 500; n += 1) {
    await gatehouse.recordState({
      session_id: `w${o.worker}-agent-${n % 50}`,
      key: `task.field_${Math.floor(n / 50) % 10}`,
      value: `value ${n} user_input`,
      type: 'fact',
      source: 'user_input',
    });
  }
}
// Warm up, then wait for the parent so that instances start together.
for (let i = 0; i < 50; i += 1) await once(0);
process.send({ ready: true });
await new Promise((resolve) => process.once('message', resolve));

const latencies = [];
const started = performance.now();
const deadline = started + o.seconds * 1000;
await Promise.all(
  Array.from({ length: o.concurrency }, async (_, loop) => {
    while (performance.now() < deadline) {
      const a = performance.now();
      await once(loop);
      latencies.push((performance.now() - a) * 1000);
    }
  }),
);
const elapsedMs = performance.now() - started;
await store.close();
await floorPool?.end();
// Exiting right after send() can lose the message; the parent disconnects once it has it.
process.send({ latencies, elapsedMs });
