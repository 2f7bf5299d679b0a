#!/usr/bin/env node
// The soak: a real `gatehouse serve` child process under a sustained, mixed workload at a fixed
// request rate, on loopback. Gate evaluations of the benchmark's workload (bench/lib/workload.js),
// state writes, history, decision and state reads, and webhook deliveries to a loopback receiver.
// Passes when there are zero errors, the server's memory (RSS, sampled every few seconds) is flat,
// the hash chain verifies and every webhook delivery arrived. Prints p50/p95/p99 and the RSS series.
//
//   node scripts/soak.js                       60 s at 300 req/s (npm run soak builds first)
//   node scripts/soak.js --duration 5 --rate 100 --json
//
// Options (flags or environment):
//   --duration S       seconds of load (GATEHOUSE_SOAK_SECONDS, default 60)
//   --rate N           requests per second, open loop (GATEHOUSE_SOAK_RATE, default 300)
//   --sample S         seconds between RSS samples (default 5)
//   --max-growth F     largest allowed RSS growth, last third over first third after warm-up (default 0.25)
//   --max-in-flight N  requests in flight before the load generator counts a miss (default 256)
//   --database-url U   run on PostgreSQL instead of a SQLite file (with GATEHOUSE_DB_SCHEMA for a schema)
//   --json             print one JSON summary line (for the test suite's smoke run)
//
// Exit code 0 on a pass, 1 on a failure (the reasons are printed), 2 on a usage error.

import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Pool } from 'undici';
import { BENCH_POLICY_YAML, evaluateRequests, sessionItems } from '../bench/lib/workload.js';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const CLI = join(ROOT, 'dist/adapters/cli/main.js');
const run = promisify(execFile);

// ---- options ------------------------------------------------------------------------------------

function parseArgs(argv) {
  const env = process.env;
  const opts = {
    duration: Number(env.GATEHOUSE_SOAK_SECONDS ?? 60),
    rate: Number(env.GATEHOUSE_SOAK_RATE ?? 300),
    sample: 5,
    maxGrowth: 0.25,
    maxInFlight: 256,
    databaseUrl: undefined,
    json: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--duration') opts.duration = Number(next());
    else if (a === '--rate') opts.rate = Number(next());
    else if (a === '--sample') opts.sample = Number(next());
    else if (a === '--max-growth') opts.maxGrowth = Number(next());
    else if (a === '--max-in-flight') opts.maxInFlight = Number(next());
    else if (a === '--database-url') opts.databaseUrl = next();
    else if (a === '--json') opts.json = true;
    else usage(`unknown option ${a}`);
  }
  for (const k of ['duration', 'rate', 'sample', 'maxGrowth', 'maxInFlight']) {
    if (!Number.isFinite(opts[k]) || opts[k] <= 0) usage(`--${k} must be a positive number`);
  }
  return opts;
}

function usage(message) {
  process.stderr.write(`soak: ${message}\n(see the header of scripts/soak.js)\n`);
  process.exit(2);
}

// ---- the service --------------------------------------------------------------------------------

/** Starts `gatehouse serve`; resolves with `{ url, pid, stderr(), stop() }`. */
function startServe(args, env) {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, GATEHOUSE_LOG_LEVEL: 'warn', ...env },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    err += d;
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start:\n${out}\n${err}`));
    }, 30_000);
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited ${code}:\n${out}\n${err}`));
    });
    child.stdout.on('data', () => {
      if (!/Stop with Ctrl-C/.test(out)) return;
      clearTimeout(timer);
      resolve({
        url: /listening on (http:\/\/\S+)/.exec(out)[1],
        pid: child.pid,
        stderr: () => err,
        async stop() {
          child.kill('SIGTERM');
          const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          const code = await exited;
          clearTimeout(killer);
          return code;
        },
      });
    });
  });
}

/** Resident set size of a process, in bytes (Linux /proc). */
function rssOf(pid) {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** A loopback webhook receiver answering 204; counts distinct webhook-ids. */
async function startReceiver() {
  const ids = new Set();
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      ids.add(String(req.headers['webhook-id']));
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    ids,
    requests: () => requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// ---- the workload -------------------------------------------------------------------------------

/** The mix: weights of request kinds (out of 100). */
const MIX = [
  ['evaluate', 55],
  ['write', 20],
  ['history', 10],
  ['decision', 5],
  ['items', 5],
  ['versions', 5],
];

function pickKind(n) {
  // A fixed, interleaved cycle rather than random draws: the same mix at every time scale.
  const slot = (n * 37) % 100;
  let acc = 0;
  for (const [kind, weight] of MIX) {
    acc += weight;
    if (slot < acc) return kind;
  }
  return 'evaluate';
}

function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function mean(xs) {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
}

// ---- main ---------------------------------------------------------------------------------------

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-soak-'));
  const say = (line) => {
    if (!opts.json) process.stdout.write(`${line}\n`);
  };
  const storeArgs = opts.databaseUrl ? ['--database-url', opts.databaseUrl] : ['--database', join(dir, 'soak.db')];
  const policyFile = join(dir, 'policy.yaml');
  writeFileSync(policyFile, BENCH_POLICY_YAML);

  // A key that may write every source (the workload's session has `system` items).
  const created = await run(process.execPath, [
    CLI,
    'keys',
    'create',
    ...storeArgs,
    '--name',
    'soak',
    '--scopes',
    'admin',
    '--sources',
    'system,user_input,tool_output,retrieval,agent_inference',
  ]);
  const key = created.stdout.split('\n')[0].trim();
  const receiver = await startReceiver();
  const serve = await startServe(
    [...storeArgs, '--policy', policyFile, '--rate-limit', '0', '--allow-insecure-loopback-webhooks'],
    {},
  );
  const pool = new Pool(serve.url, { connections: 64 });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const call = async (method, path, body) => {
    const res = await pool.request({
      method,
      path,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await res.body.text();
    return { status: res.statusCode, text };
  };

  const failures = [];
  let summary;
  try {
    // ---- seed -------------------------------------------------------------------------------
    const sessions = ['soak-a', 'soak-b', 'soak-c', 'soak-d'];
    for (const s of sessions) {
      for (const item of sessionItems(s)) {
        const r = await call('POST', '/v1/state/items', item);
        if (r.status !== 201) throw new Error(`seeding ${item.key}: ${r.status} ${r.text}`);
      }
    }
    const hook = await call('POST', '/v1/webhooks', {
      url: receiver.url,
      events: ['gate_evaluation', 'state_change'],
      filter: { session_id: 'soak-a' },
    });
    if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${hook.text}`);
    const hookId = JSON.parse(hook.text).id;
    const evaluations = sessions.flatMap((s) => evaluateRequests(s));
    const decisionIds = [];

    const requestFor = (n) => {
      const kind = pickKind(n);
      const session = sessions[n % sessions.length];
      switch (kind) {
        case 'evaluate':
          return { kind, method: 'POST', path: '/v1/gates/evaluate', body: evaluations[n % evaluations.length] };
        case 'write':
          return {
            kind,
            method: 'POST',
            path: '/v1/state/items',
            body: {
              session_id: session,
              key: `task.progress_${n % 8}`,
              value: `step ${n}`,
              type: 'fact',
              source: 'tool_output',
            },
          };
        case 'history':
          return { kind, method: 'GET', path: `/v1/history/events?session_id=${session}&limit=20` };
        case 'decision': {
          const id = decisionIds[n % Math.max(1, decisionIds.length)];
          return id
            ? { kind, method: 'GET', path: `/v1/decisions/${id}` }
            : { kind, method: 'GET', path: `/v1/state/items?session_id=${session}` };
        }
        case 'items':
          return { kind, method: 'GET', path: `/v1/state/items/budget.limit?session_id=${session}` };
        default:
          return { kind, method: 'GET', path: `/v1/state/items/task.note_11/versions?session_id=${session}` };
      }
    };

    // ---- load: open loop at a fixed rate ------------------------------------------------------
    const latencies = [];
    const byKind = {};
    const rss = [];
    const errors = { status: 0, network: 0, missed: 0, samples: [] };
    const inFlight = new Set();
    let sent = 0;
    const started = performance.now();
    const end = started + opts.duration * 1000;
    let nextSample = started;
    say(`soak: ${opts.duration} s at ${opts.rate} req/s against ${serve.url} (pid ${serve.pid})`);

    const fire = (n) => {
      const req = requestFor(n);
      const t0 = performance.now();
      const p = call(req.method, req.path, req.body)
        .then((r) => {
          const ms = performance.now() - t0;
          const ok = r.status === 200 || r.status === 201;
          if (!ok) {
            errors.status++;
            if (errors.samples.length < 5) errors.samples.push(`${req.method} ${req.path} → ${r.status} ${r.text.slice(0, 200)}`);
            return;
          }
          latencies.push(ms);
          (byKind[req.kind] ??= []).push(ms);
          if (req.kind === 'evaluate' && decisionIds.length < 1000 && n % 7 === 0) {
            decisionIds.push(JSON.parse(r.text).decision_id);
          }
        })
        .catch((e) => {
          errors.network++;
          if (errors.samples.length < 5) errors.samples.push(`${req.method} ${req.path} → ${e.code ?? e.message}`);
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    };

    while (performance.now() < end) {
      const now = performance.now();
      const due = Math.floor(((now - started) / 1000) * opts.rate);
      while (sent < due) {
        if (inFlight.size >= opts.maxInFlight) {
          errors.missed += due - sent;
          sent = due;
          break;
        }
        fire(sent++);
      }
      if (now >= nextSample) {
        const sample = { t: Math.round((now - started) / 1000), rss_mib: rssOf(serve.pid) / 2 ** 20 };
        rss.push(sample);
        say(
          `  t=${String(sample.t).padStart(3)} s  sent ${sent}  in flight ${inFlight.size}  ` +
            `RSS ${sample.rss_mib.toFixed(1)} MiB  errors ${errors.status + errors.network + errors.missed}`,
        );
        nextSample += opts.sample * 1000;
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    await Promise.allSettled([...inFlight]);
    const elapsed = (performance.now() - started) / 1000;
    rss.push({ t: Math.round(elapsed), rss_mib: rssOf(serve.pid) / 2 ** 20 });

    // ---- after the load: the chain, the deliveries -------------------------------------------
    const verify = JSON.parse((await call('GET', '/v1/history/verify')).text);
    if (!verify.ok) failures.push(`history/verify: ${verify.problem}`);
    let delivered = 0;
    let total = 0;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const list = [];
      let before;
      for (;;) {
        const page = JSON.parse(
          (await call('GET', `/v1/webhooks/${hookId}/deliveries?limit=500${before ? `&before_id=${before}` : ''}`))
            .text,
        ).deliveries;
        list.push(...page);
        if (page.length < 500) break;
        before = page.at(-1).delivery_id;
      }
      total = list.length;
      delivered = list.filter((d) => d.status === 'delivered').length;
      if (delivered === total || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    if (delivered !== total) failures.push(`webhooks: ${delivered} of ${total} deliveries delivered`);
    if (receiver.ids.size !== total) failures.push(`receiver saw ${receiver.ids.size} webhook-ids for ${total} deliveries`);

    // ---- figures --------------------------------------------------------------------------------
    const sorted = Float64Array.from(latencies).sort();
    const errorCount = errors.status + errors.network + errors.missed;
    if (errorCount > 0) failures.push(`${errorCount} errors: ${JSON.stringify(errors)}`);
    // Memory: after a warm-up (a fifth of the run, at least one sample), the mean of the last third
    // of the samples against the mean of the first third.
    const warm = rss.filter((s) => s.t >= Math.max(opts.sample, opts.duration / 5));
    const third = Math.max(1, Math.floor(warm.length / 3));
    const first = mean(warm.slice(0, third).map((s) => s.rss_mib));
    const last = mean(warm.slice(-third).map((s) => s.rss_mib));
    const growth = warm.length >= 3 ? last / first - 1 : Number.NaN;
    const memoryChecked = opts.duration >= 30 && warm.length >= 6;
    if (memoryChecked && !(growth <= opts.maxGrowth)) {
      failures.push(`RSS grew ${(growth * 100).toFixed(1)} % (${first.toFixed(1)} → ${last.toFixed(1)} MiB)`);
    }
    const kinds = Object.fromEntries(
      Object.entries(byKind).map(([k, xs]) => {
        const s = Float64Array.from(xs).sort();
        return [k, { count: s.length, p50_ms: percentile(s, 50), p99_ms: percentile(s, 99) }];
      }),
    );
    summary = {
      ok: false,
      duration_s: elapsed,
      target_rate: opts.rate,
      achieved_rate: latencies.length / elapsed,
      requests: sent,
      ok_responses: latencies.length,
      errors,
      p50_ms: percentile(sorted, 50),
      p95_ms: percentile(sorted, 95),
      p99_ms: percentile(sorted, 99),
      max_ms: sorted.length ? sorted[sorted.length - 1] : Number.NaN,
      by_kind: kinds,
      rss_mib: rss,
      rss_growth: growth,
      memory_checked: memoryChecked,
      history: { ok: verify.ok, events: verify.checked },
      webhooks: { deliveries: total, delivered, receiver_ids: receiver.ids.size },
      store: opts.databaseUrl ? 'postgres' : 'sqlite',
    };
  } catch (error) {
    failures.push(`soak aborted: ${error?.stack ?? error}`);
  } finally {
    await pool.close().catch(() => undefined);
    const code = await serve.stop();
    if (code !== 0) failures.push(`serve exited with ${code} on SIGTERM:\n${serve.stderr().slice(-2000)}`);
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }

  summary = { ...(summary ?? {}), ok: failures.length === 0, failures };
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } else if (summary.p99_ms !== undefined) {
    const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '-');
    say('');
    say(`requests      ${summary.requests} in ${f(summary.duration_s)} s (${f(summary.achieved_rate)} ok/s, target ${summary.target_rate})`);
    say(`latency       p50 ${f(summary.p50_ms)} ms   p95 ${f(summary.p95_ms)} ms   p99 ${f(summary.p99_ms)} ms   max ${f(summary.max_ms)} ms`);
    for (const [k, v] of Object.entries(summary.by_kind)) {
      say(`  ${k.padEnd(15)} ${String(v.count).padStart(7)}   p50 ${f(v.p50_ms)} ms   p99 ${f(v.p99_ms)} ms`);
    }
    say(`errors        ${summary.errors.status} bad status, ${summary.errors.network} network, ${summary.errors.missed} missed`);
    say(`server RSS    ${summary.rss_mib.map((s) => s.rss_mib.toFixed(0)).join(' ')} MiB; growth ${f(summary.rss_growth * 100)} %${summary.memory_checked ? '' : ' (not checked: run too short)'}`);
    say(`history       ${summary.history.events} events, chain ok: ${summary.history.ok}`);
    say(`webhooks      ${summary.webhooks.delivered}/${summary.webhooks.deliveries} delivered`);
    say(summary.ok ? 'PASS' : `FAIL\n  ${failures.join('\n  ')}`);
  } else {
    say(`FAIL\n  ${failures.join('\n  ')}`);
  }
  process.exitCode = summary.ok ? 0 : 1;
}

await main();
