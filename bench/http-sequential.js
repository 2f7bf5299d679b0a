// 8. One client, one keep-alive connection, one request at a time: POST /v1/gates/evaluate
// against GET /healthz on the same real service (createHttpApp + startHttpServer, bearer auth,
// SQLite file) in a child process. The ratio of the p50s is what a gated tool call pays over the
// cheapest round trip the same server can answer: parsing, auth, the core and the commit.

import { readFileSync } from 'node:fs';
import { Pool } from 'undici';
import { startServer } from './lib/child.js';
import { scratchDir } from './lib/env.js';
import { compareInterleaved } from './lib/measure.js';
import { BENCH_POLICY_YAML, evaluateRequests, sessionItems } from './lib/workload.js';

export const name = 'http-sequential';
export const title = '8. Sequential keep-alive p50: POST /v1/gates/evaluate vs GET /healthz (one connection)';

export async function run({ quick }) {
  const scratch = scratchDir('http-seq');
  let server;
  // One connection: every request reuses the same socket, as a pooled client does under no load.
  let pool;
  try {
    server = await startServer({
      mode: 'gatehouse',
      database: `${scratch.dir}/gatehouse.db`,
      policyYaml: BENCH_POLICY_YAML,
      seed: { items: sessionItems('bench') },
    });
    pool = new Pool(server.url, { connections: 1, pipelining: 1 });
    const bodies = evaluateRequests('bench').map((r) => JSON.stringify(r));
    const headers = { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' };
    const send = async (options) => {
      const res = await pool.request(options);
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${options.path} answered ${res.statusCode}: ${text}`);
    };
    const results = await compareInterleaved(
      {
        healthz: { op: () => send({ method: 'GET', path: '/healthz' }) },
        evaluate: {
          op: (i) =>
            send({ method: 'POST', path: '/v1/gates/evaluate', headers, body: bodies[i % bodies.length] }),
        },
      },
      { rounds: quick ? 2 : 4, msPerRound: quick ? 1000 : 2500, warmupMs: quick ? 500 : 1500 },
    );
    const ratio = results.evaluate.p50_us / results.healthz.p50_us;
    // Server CPU per request (user + system, from /proc): steadier than latency on a shared machine.
    const cpu = {};
    const count = quick ? 500 : 2000;
    for (const [variant, op] of [
      ['healthz', () => send({ method: 'GET', path: '/healthz' })],
      [
        'evaluate',
        (i) => send({ method: 'POST', path: '/v1/gates/evaluate', headers, body: bodies[i % bodies.length] }),
      ],
    ]) {
      const before = cpuMicros(server.pid);
      for (let i = 0; i < count; i += 1) await op(i);
      cpu[variant] = (cpuMicros(server.pid) - before) / count;
    }
    return {
      rows: [
        { name: 'healthz', label: 'GET /healthz (baseline)', ...results.healthz, ratio: 1 },
        {
          name: 'evaluate',
          label: 'POST /v1/gates/evaluate (auth, SQLite file)',
          ...results.evaluate,
          ratio,
        },
      ],
      baselineLabel: 'healthz (p50 ratio)',
      targets: [{ what: 'evaluate p50 ÷ healthz p50', value: ratio, op: '<=', target: 3, stretch: 2 }],
      notes: [
        `server CPU per request: healthz ${cpu.healthz.toFixed(0)} µs, evaluate ${cpu.evaluate.toFixed(0)} µs`,
      ],
      extra: { server_cpu_us_per_request: cpu },
    };
  } finally {
    await pool?.close();
    await server?.stop();
    scratch.remove();
  }
}

/** User + system CPU time of a process in µs (Linux /proc; clock ticks of 10 ms). */
function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // Fields 14 and 15 of stat (utime, stime), counted after the command name.
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}
