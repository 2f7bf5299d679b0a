// 7. PostgreSQL (GATEHOUSE_TEST_DATABASE_URL set and adapters/postgres built): items 1 and 4 on
// PostgreSQL — evaluate (the benchmark policy, 50 items) and recordState (10% conflicts) — with
// one instance and with two instances (processes) on one schema, 8 calls in flight each; the
// baseline is a bare pg INSERT of an event-sized row with the same concurrency, one process.

import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR, DIST_DIR, load } from './lib/env.js';
import { summarize } from './lib/measure.js';
import { OWNER_SOURCES, sessionItems } from './lib/workload.js';

export const name = 'postgres';
export const title = '7. PostgreSQL: evaluate and recordState, 1 instance vs 2 instances (8 in flight each)';

const CONCURRENCY = 8;

function startWorker(options) {
  const child = fork(join(BENCH_DIR, 'servers', 'pgWorker.js'), [JSON.stringify(options)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages = [];
  let waiting;
  let exited;
  child.on('message', (m) => {
    if (waiting) {
      const w = waiting;
      waiting = undefined;
      w.resolve(m);
    } else messages.push(m);
  });
  child.on('exit', (code) => {
    exited = new Error(`PostgreSQL worker (${options.op}) exited with code ${code}`);
    waiting?.reject(exited);
    waiting = undefined;
  });
  const next = () =>
    new Promise((resolve, reject) => {
      if (messages.length > 0) return resolve(messages.shift());
      if (exited) return reject(exited);
      waiting = { resolve, reject };
    });
  return { child, next };
}

/** Runs `instances` workers of `op` together; merges their latencies. */
async function runInstances(base, op, instances, seconds) {
  const workers = Array.from({ length: instances }, (_, worker) =>
    startWorker({ ...base, op, worker, seconds, concurrency: CONCURRENCY }),
  );
  try {
    for (const w of workers) await w.next(); // ready
    for (const w of workers) w.child.send('go');
    const results = [];
    for (const w of workers) results.push(await w.next());
    const latencies = results.flatMap((r) => r.latencies);
    const elapsedMs = Math.max(...results.map((r) => r.elapsedMs));
    return summarize(latencies, elapsedMs);
  } finally {
    for (const w of workers) {
      if (w.child.connected) w.child.disconnect();
      const killer = setTimeout(() => w.child.kill('SIGKILL'), 5000);
      if (w.child.exitCode === null) await new Promise((r) => w.child.once('exit', r));
      clearTimeout(killer);
    }
  }
}

export async function run({ quick }) {
  const url = process.env.GATEHOUSE_TEST_DATABASE_URL;
  if (!url) return { skipped: 'GATEHOUSE_TEST_DATABASE_URL is not set' };
  if (!existsSync(join(DIST_DIR, 'adapters/postgres/index.js')))
    return { skipped: 'adapters/postgres is not built' };
  const { default: pg } = await import('pg');
  const core = await load('src/index.js');
  const { openPostgresStore } = await load('adapters/postgres/index.js');
  const schema = `gh_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const store = await openPostgresStore({ connectionString: url, schema });
    const gatehouse = core.createGatehouse({ store });
    for (const item of sessionItems('bench'))
      await gatehouse.recordState(item, { allowedSources: OWNER_SOURCES });
    await gatehouse.evaluate({ session_id: 'bench', action: 'payments.transfer', params: { amount: 1 } });
    const sample = await store.queryEvents('default', { type: 'gate_evaluation', order: 'desc', limit: 1 });
    await store.close();
    await admin.query(`CREATE TABLE "${schema}".bench_floor (worker int, loop int, n int, data text)`);
    const base = { url, schema, floorData: JSON.stringify(sample[0]) };
    const seconds = quick ? 2 : 5;
    const floor = await runInstances(base, 'floor', 1, seconds);
    const rows = [
      {
        name: 'floor',
        label: `bare pg INSERT, ~${base.floorData.length} B row (baseline)`,
        ...floor,
        ratio: 1,
      },
    ];
    const scaling = {};
    for (const op of ['evaluate', 'record']) {
      const one = await runInstances(base, op, 1, seconds);
      const two = await runInstances(base, op, 2, seconds);
      const label = op === 'evaluate' ? 'evaluate' : 'recordState, 10% conflicts';
      rows.push({
        name: `${op}_1`,
        label: `${label}, 1 instance`,
        ...one,
        ratio: one.ops_per_s / floor.ops_per_s,
      });
      rows.push({
        name: `${op}_2`,
        label: `${label}, 2 instances`,
        ...two,
        ratio: two.ops_per_s / floor.ops_per_s,
      });
      scaling[op] = two.ops_per_s / one.ops_per_s;
    }
    return {
      rows,
      targets: [
        { what: 'evaluate ops/s, 2 instances ÷ 1 instance', value: scaling.evaluate, op: '>=', target: 1 },
        { what: 'recordState ops/s, 2 instances ÷ 1 instance', value: scaling.record, op: '>=', target: 1 },
      ],
      notes: [
        `2 instances ÷ 1 instance: evaluate ${scaling.evaluate.toFixed(2)}×, recordState ${scaling.record.toFixed(2)}× (one tenant: each instance's batch takes the tenant's chain-head lock; a batch holds it for one round trip and its COMMIT; a recordState batch locks and reads its items and their open conflicts in that first round trip)`,
        `PostgreSQL at ${new URL(url).host}, schema ${schema} (dropped afterwards)`,
      ],
      extra: { scaling },
    };
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.end();
  }
}
