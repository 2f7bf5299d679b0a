// 2. POST /v1/gates/evaluate over loopback: the real service (createHttpApp + startHttpServer,
// bearer auth, SQLite file with durable history) in a child process, against a bare node:http
// server in a child process that parses the same request bodies and answers the same JSON.
// autocannon, 50 connections, in interleaved rounds.

import { startServer } from './lib/child.js';
import { scratchDir } from './lib/env.js';
import { cannon, interleaveRounds } from './lib/loadgen.js';
import { BENCH_POLICY_YAML, evaluateRequests, sessionItems } from './lib/workload.js';

export const name = 'http-evaluate';
export const title = '2. POST /v1/gates/evaluate, 50 connections (autocannon, loopback) vs bare node:http';

export async function run({ quick }) {
  const scratch = scratchDir('http');
  const servers = [];
  try {
    const gatehouse = await startServer({
      mode: 'gatehouse',
      database: `${scratch.dir}/gatehouse.db`,
      policyYaml: BENCH_POLICY_YAML,
      seed: { items: sessionItems('bench') },
    });
    servers.push(gatehouse);
    const bodies = evaluateRequests('bench').map((r) => JSON.stringify(r));
    const headers = { authorization: `Bearer ${gatehouse.key}`, 'content-type': 'application/json' };

    // The bare server answers with a real decision of the same workload (same size on the wire).
    const sample = await fetch(`${gatehouse.url}/v1/gates/evaluate`, {
      method: 'POST',
      headers,
      body: bodies[0],
    });
    if (sample.status !== 200) throw new Error(`evaluate answered ${sample.status}: ${await sample.text()}`);
    const bare = await startServer({ mode: 'bare', body: await sample.text() });
    servers.push(bare);

    const requests = bodies.map((body) => ({ method: 'POST', path: '/v1/gates/evaluate', body }));
    const load = (server, seconds) => () =>
      cannon({ url: server.url, connections: 50, seconds, requests, headers });
    const seconds = quick ? 3 : 6;
    await load(bare, 1)();
    await load(gatehouse, quick ? 1 : 2)();
    const results = await interleaveRounds(
      { bare: load(bare, seconds), gatehouse: load(gatehouse, seconds) },
      quick ? 1 : 2,
    );
    const rss = gatehouse.rssBytes();
    for (const [n, r] of Object.entries(results)) {
      if (r.non2xx > 0 || r.errors > 0)
        throw new Error(`${n}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
    }
    const ratio = results.gatehouse.ops_per_s / results.bare.ops_per_s;
    return {
      rows: [
        { name: 'bare', label: 'bare node:http, same JSON (baseline)', ...results.bare, ratio: 1 },
        {
          name: 'gatehouse',
          label: 'POST /v1/gates/evaluate (auth, SQLite file)',
          ...results.gatehouse,
          ratio,
        },
      ],
      targets: [{ what: 'gatehouse req/s ÷ bare req/s', value: ratio, op: '>=', target: 0.2, stretch: 0.5 }],
      notes: [`server RSS after the run: ${(rss / 2 ** 20).toFixed(0)} MiB`],
      extra: { server_rss_bytes: rss },
    };
  } finally {
    for (const s of servers) await s.stop();
    scratch.remove();
  }
}
