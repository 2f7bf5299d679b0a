// Timing helpers: sequential timed loops with per-operation latencies, percentiles, and
// interleaved rounds so that a baseline and its subject see the same machine state.

import { performance } from 'node:perf_hooks';

/** Percentile (0..100) of a sorted Float64Array of microseconds. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** Summarises latencies (µs) and the wall time they took. */
export function summarize(latenciesUs, elapsedMs) {
  const sorted = Float64Array.from(latenciesUs).sort();
  return {
    ops: sorted.length,
    ops_per_s: sorted.length / (elapsedMs / 1000),
    p50_us: percentile(sorted, 50),
    p99_us: percentile(sorted, 99),
    mean_us: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
  };
}

/**
 * Runs `op(i)` one after the other for `ms` milliseconds (at least `minOps` times, at most
 * `maxOps`), awaiting it only when it returns a promise. `between()`, when given, is awaited after
 * each op outside its latency (what a caller does between two calls, e.g. wait for a model); it
 * still counts in the elapsed time. Returns the latencies (µs) and the elapsed wall time.
 */
export async function timedLoop(op, { ms, minOps = 1, maxOps = 10_000_000, start = 0, between }) {
  const latencies = [];
  const t0 = performance.now();
  const deadline = t0 + ms;
  let i = start;
  for (;;) {
    const a = performance.now();
    const r = op(i);
    if (r && typeof r.then === 'function') await r;
    const b = performance.now();
    latencies.push((b - a) * 1000);
    if (between) await between();
    i += 1;
    const n = i - start;
    if (n >= maxOps) break;
    if (b >= deadline && n >= minOps) break;
  }
  return { latencies, elapsedMs: performance.now() - t0, next: i };
}

/**
 * Measures several variants in interleaved rounds (a, b, c, a, b, c, …) so that drift of the
 * machine (other processes, thermal, GC of earlier work) falls on all of them alike.
 * `variants` is `{ name: { op, between? } }` (`between`: see {@link timedLoop}); returns
 * `{ name: summary }`.
 */
export async function compareInterleaved(variants, { rounds, msPerRound, warmupMs = 300 }) {
  const names = Object.keys(variants);
  const state = Object.fromEntries(names.map((n) => [n, { latencies: [], elapsedMs: 0, next: 0 }]));
  for (const n of names) {
    const w = await timedLoop(variants[n].op, { ms: warmupMs, start: 0, between: variants[n].between });
    state[n].next = w.next;
  }
  for (let r = 0; r < rounds; r += 1) {
    for (const n of names) {
      const res = await timedLoop(variants[n].op, {
        ms: msPerRound,
        start: state[n].next,
        between: variants[n].between,
      });
      state[n].next = res.next;
      for (const l of res.latencies) state[n].latencies.push(l);
      state[n].elapsedMs += res.elapsedMs;
    }
  }
  return Object.fromEntries(names.map((n) => [n, summarize(state[n].latencies, state[n].elapsedMs)]));
}

/** Formats a number of operations per second: 12.3k, 1.20M. */
export function fmtOps(n) {
  if (!Number.isFinite(n)) return '-';
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(2)}k`;
  return n.toFixed(1);
}

/** Formats microseconds. */
export function fmtUs(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '-';
  if (n >= 10_000) return `${(n / 1000).toFixed(1)}ms`;
  if (n >= 100) return n.toFixed(0);
  return n.toFixed(1);
}

/** Prints an aligned table: `rows` are arrays of cells, the first row the header. */
export function printTable(title, rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c] ?? '').length)));
  const line = (r) =>
    r
      .map((cell, c) => (c === 0 ? String(cell).padEnd(widths[c]) : String(cell).padStart(widths[c])))
      .join('  ');
  console.log(`\n${title}`);
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows.slice(1)) console.log(line(r));
}
