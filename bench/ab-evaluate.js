// Two builds' in-process `evaluate`, interleaved in one process: for a change too small to see
// across separate runs on a noisy host. Not part of `bench/run.js`.
//
//   cp -r dist bench/results/dist-before   # before the change; then change, `npm run build`
//   node bench/ab-evaluate.js bench/results/dist-before dist [file|memory] [rounds] [calls]
//
// Each build gets its own store (a SQLite file, or an in-memory database) and gatehouse with the
// benchmark policy and session; rounds alternate which build goes first. Prints the median CPU
// per call (this process, every thread: user + system) and the median latency, and B ÷ A.

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { scratchDir } from './lib/env.js';
import { BENCH_POLICY_YAML, evaluateRequests, OWNER_SOURCES, sessionItems } from './lib/workload.js';

const [distA, distB, mode = 'file', rounds = '8', calls = '4000'] = process.argv.slice(2);
if (!distA || !distB || !['file', 'memory'].includes(mode)) {
  console.error('usage: node bench/ab-evaluate.js <dist A> <dist B> [file|memory] [rounds] [calls]');
  process.exit(2);
}
const requests = evaluateRequests('bench');
const scratch = scratchDir('ab-evaluate');

async function setup(dist, name) {
  const load = (path) => import(pathToFileURL(resolve(dist, path)).href);
  const { compilePolicy, createGatehouse } = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const store = openSqliteStore({ filename: mode === 'memory' ? ':memory:' : `${scratch.dir}/${name}.db` });
  const gatehouse = createGatehouse({ store, policy: compilePolicy(BENCH_POLICY_YAML) });
  for (const item of sessionItems('bench'))
    await gatehouse.recordState(item, { allowedSources: OWNER_SOURCES });
  for (let i = 0; i < 2000; i += 1) await gatehouse.evaluate(requests[i % requests.length]);
  return { store, gatehouse, cpu: [], latency: [] };
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
const builds = { A: await setup(distA, 'a'), B: await setup(distB, 'b') };
try {
  for (let round = 0; round < Number(rounds); round += 1) {
    for (const name of round % 2 === 0 ? ['A', 'B'] : ['B', 'A']) {
      const build = builds[name];
      const before = process.cpuUsage();
      for (let i = 0; i < Number(calls); i += 1) {
        const started = performance.now();
        await build.gatehouse.evaluate(requests[i % requests.length]);
        build.latency.push((performance.now() - started) * 1000);
      }
      const used = process.cpuUsage(before);
      build.cpu.push((used.user + used.system) / Number(calls));
    }
  }
  for (const [name, dist] of [
    ['A', distA],
    ['B', distB],
  ]) {
    const { cpu, latency } = builds[name];
    console.log(
      `${name} ${dist}: CPU ${median(cpu).toFixed(1)} µs a call (rounds ${cpu.map((c) => c.toFixed(0)).join(' ')}), p50 ${median(latency).toFixed(1)} µs`,
    );
  }
  const ratio = (key) => (median(builds.B[key]) / median(builds.A[key])).toFixed(3);
  console.log(`B ÷ A (${mode}): CPU ${ratio('cpu')}, p50 ${ratio('latency')}`);
} finally {
  await builds.A.store.close();
  await builds.B.store.close();
  scratch.remove();
}
