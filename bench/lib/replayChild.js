// Replays every recorded decision of a SQLite database in a fresh process and prints one JSON
// line: decisions, milliseconds, differences, and the process's peak RSS and heap while it ran.
// Under `node --expose-gc` it also collects every 5,000 decisions and reports the largest live
// heap and RSS seen after a collection (what the replay holds, not garbage awaiting a GC).
//   node [--expose-gc] bench/lib/replayChild.js <db file> <policy file> [limit]
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { load } from './env.js';

const [file, policyFile, limitArg] = process.argv.slice(2);
const { compilePolicy, replayDecisions } = await load('src/index.js');
const { openSqliteStore } = await load('adapters/sqlite/index.js');
const store = openSqliteStore({ filename: file });
const candidate = compilePolicy(readFileSync(policyFile, 'utf8'));

let peakRss = process.memoryUsage().rss;
let peakHeap = process.memoryUsage().heapUsed;
const sample = () => {
  const m = process.memoryUsage();
  peakRss = Math.max(peakRss, m.rss);
  peakHeap = Math.max(peakHeap, m.heapUsed);
};
const timer = setInterval(sample, 50);
const startRss = process.memoryUsage().rss;
let seen = 0;
let liveHeap = 0;
let liveRss = 0;
const collect = globalThis.gc;
const t0 = performance.now();
const report = await replayDecisions({
  store,
  tenantId: 'default',
  candidate,
  ...(limitArg ? { limit: Number(limitArg) } : {}),
  onDecision: () => {
    seen += 1;
    if (seen % 2000 === 0) sample();
    if (collect && seen % 5000 === 0) {
      collect();
      const m = process.memoryUsage();
      liveHeap = Math.max(liveHeap, m.heapUsed);
      liveRss = Math.max(liveRss, m.rss);
    }
  },
});
const ms = performance.now() - t0;
clearInterval(timer);
sample();
await store.close();
process.stdout.write(
  `${JSON.stringify({
    decisions: report.decisions,
    ms,
    differences: report.changed + report.rules_changed,
    start_rss: startRss,
    peak_rss: peakRss,
    peak_heap: peakHeap,
    ...(collect ? { live_heap: liveHeap, live_rss: liveRss } : {}),
  })}\n`,
);
