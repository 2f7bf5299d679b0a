// 8. `replayDecisions`: recorded decisions replayed per second against the policy that made them
// (SQLite file, the evaluate benchmark's policy and 50-item sessions, 10 % state writes between
// decisions), as a ratio to in-process `evaluate` measured in the same run; and the replaying
// process's peak memory at 10 % of the log and at all of it (flat = streaming works).
//
// The recorded database is built once with real `evaluate` calls and kept in bench/results/
// (GATEHOUSE_BENCH_REPLAY_DECISIONS sets its size: 100,000 by default, 20,000 with --quick).

import { execFile } from 'node:child_process';
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_DIR, load, RESULTS_DIR, scratchDir } from './lib/env.js';
import { summarize, timedLoop } from './lib/measure.js';
import { BENCH_POLICY_YAML, evaluateRequests, OWNER_SOURCES, sessionItems } from './lib/workload.js';

export const name = 'replay';
export const title = '8. Replay of recorded decisions vs in-process evaluate (SQLite file)';

const run$ = promisify(execFile);
const SESSIONS = 400;
const MiB = 2 ** 20;

async function buildRecorded(file, decisions, log) {
  const { compilePolicy, createGatehouse } = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const partial = `${file}.partial`;
  rmSync(partial, { force: true });
  const store = openSqliteStore({ filename: partial });
  const gatehouse = createGatehouse({ store, policy: compilePolicy(BENCH_POLICY_YAML) });
  const ctx = { allowedSources: OWNER_SOURCES };
  const sessions = Array.from({ length: SESSIONS }, (_, i) => `r${i}`);
  for (const s of sessions) for (const item of sessionItems(s)) await gatehouse.recordState(item, ctx);
  const requests = evaluateRequests('x');
  const t0 = Date.now();
  for (let i = 0; i < decisions; i += 1) {
    const session_id = sessions[(i * 7919) % SESSIONS];
    if (i % 10 === 0) {
      await gatehouse.recordState(
        {
          session_id,
          key: 'budget.limit',
          value: String(1000 + (i % 9) * 1000),
          type: 'fact',
          source: 'user_input',
        },
        ctx,
      );
    }
    const r = requests[i % requests.length];
    await gatehouse.evaluate({ ...r, session_id });
    if (i > 0 && i % 20_000 === 0)
      log(`  recorded ${i} decisions (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  }
  await store.close();
  for (const suffix of ['', '-wal', '-shm']) {
    if (existsSync(partial + suffix)) renameSync(partial + suffix, file + suffix);
  }
}

async function child(file, policyFile, limit, { memory = false } = {}) {
  const { stdout } = await run$(
    process.execPath,
    [
      ...(memory ? ['--expose-gc'] : []),
      join(BENCH_DIR, 'lib/replayChild.js'),
      file,
      policyFile,
      ...(limit ? [String(limit)] : []),
    ],
    { maxBuffer: 1 << 20, timeout: 3_600_000 },
  );
  return JSON.parse(stdout.trim().split('\n').pop());
}

export async function run({ quick }) {
  const decisions = Number(process.env.GATEHOUSE_BENCH_REPLAY_DECISIONS ?? (quick ? 20_000 : 100_000));
  const file = join(RESULTS_DIR, `replay-${decisions}.db`);
  const notes = [];
  if (!existsSync(file)) {
    console.log(`  building ${decisions} recorded decisions in ${file} (once) ...`);
    await buildRecorded(file, decisions, (line) => console.log(line));
  }
  const scratch = scratchDir('replay');
  try {
    const policyFile = join(scratch.dir, 'policy.yaml');
    writeFileSync(policyFile, BENCH_POLICY_YAML);

    // In-process evaluate on the same kind of store and workload, in this run.
    const { compilePolicy, createGatehouse } = await load('src/index.js');
    const { openSqliteStore } = await load('adapters/sqlite/index.js');
    const store = openSqliteStore({ filename: join(scratch.dir, 'evaluate.db') });
    const gatehouse = createGatehouse({ store, policy: compilePolicy(BENCH_POLICY_YAML) });
    for (const item of sessionItems('bench'))
      await gatehouse.recordState(item, { allowedSources: OWNER_SOURCES });
    const requests = evaluateRequests('bench');
    const rounds = quick ? 2 : 3;
    const evalRuns = [];
    const replayRuns = [];
    for (let round = 0; round < rounds; round += 1) {
      const loop = await timedLoop((i) => gatehouse.evaluate(requests[i % requests.length]), {
        ms: quick ? 700 : 1500,
      });
      evalRuns.push(summarize(loop.latencies, loop.elapsedMs));
      replayRuns.push(await child(file, policyFile));
    }
    await store.close();
    const evaluatePerS = evalRuns.map((r) => r.ops_per_s).sort((a, b) => a - b)[Math.floor(rounds / 2)];
    const replay = replayRuns.map((r) => ({ ...r, per_s: r.decisions / (r.ms / 1000) }));
    replay.sort((a, b) => a.per_s - b.per_s);
    const median = replay[Math.floor(rounds / 2)];
    const tenth = await child(file, policyFile, Math.floor(decisions / 10), { memory: true });
    const all = await child(file, policyFile, undefined, { memory: true });
    const ratio = median.per_s / evaluatePerS;
    const rss = (b) => `${(b / MiB).toFixed(0)} MiB`;
    if (median.differences !== 0)
      notes.push(`UNEXPECTED: ${median.differences} differences replaying the same policy`);
    notes.push(
      `replaying process, live (after a GC every 5,000 decisions): heap ${rss(tenth.live_heap)} / RSS ${rss(tenth.live_rss)} at ${tenth.decisions} decisions, heap ${rss(all.live_heap)} / RSS ${rss(all.live_rss)} at ${all.decisions}`,
      `replaying process, peak without forced GCs (garbage included): RSS ${rss(tenth.peak_rss)} at ${tenth.decisions}, ${rss(median.peak_rss)} at ${median.decisions}; it starts at ${rss(median.start_rss)}`,
      `${median.decisions} decisions replayed, ${median.differences} differences (the same policy)`,
    );
    return {
      baseline: 'evaluate',
      rows: [
        {
          name: 'evaluate',
          label: 'in-process evaluate (baseline)',
          ops_per_s: evaluatePerS,
          p50_us: evalRuns[0].p50_us,
          p99_us: evalRuns[0].p99_us,
          ratio: 1,
        },
        {
          name: 'replay',
          label: `replayDecisions over ${median.decisions} recorded decisions`,
          ops_per_s: median.per_s,
          p50_us: Number.NaN,
          p99_us: Number.NaN,
          ratio,
        },
      ],
      targets: [
        { what: 'replay / evaluate', op: '>=', target: 2, value: ratio, format: (v) => `${v.toFixed(2)}×` },
      ],
      notes,
      extra: {
        decisions,
        replay_runs: replay,
        tenth,
        all,
        peak_rss_mib: median.peak_rss / MiB,
        peak_rss_tenth_mib: tenth.peak_rss / MiB,
        live_heap_mib: all.live_heap / MiB,
        live_heap_tenth_mib: tenth.live_heap / MiB,
      },
    };
  } finally {
    scratch.remove();
  }
}
