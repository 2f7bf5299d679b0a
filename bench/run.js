// Runs the benchmarks: `node bench/run.js [--quick] [name ...]` (`npm run bench` builds first).
// Each benchmark prints a table with ops/s, p50/p99 in µs and the ratio to a baseline measured
// in the same run, then its targets; the whole run is written to bench/results/latest.json.
// Timing is never asserted anywhere: this prints and records, nothing fails on a slow machine.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { DIST_DIR, RESULTS_DIR } from './lib/env.js';
import { fmtOps, fmtUs, printTable } from './lib/measure.js';

const BENCHMARKS = [
  'evaluate',
  'http-evaluate',
  'http-sequential',
  'history',
  'record-state',
  'faces',
  'webhooks',
  'postgres',
  'replay',
  'peer-agt',
];

function parseArgs(argv) {
  const args = { quick: false, names: [] };
  for (const a of argv) {
    if (a === '--quick') args.quick = true;
    else if (a === '--help' || a === '-h') args.help = true;
    else args.names.push(a);
  }
  return args;
}

function cpuModel() {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    return line ? line.split(':')[1].trim() : (cpus()[0]?.model ?? 'unknown');
  } catch {
    return cpus()[0]?.model ?? 'unknown';
  }
}

function fmtRatio(r) {
  return Number.isFinite(r) ? `${r.toFixed(r < 0.1 ? 3 : 2)}×` : '-';
}

/**
 * JSON as Biome formats it (the repository's formatter also covers bench/): objects expanded,
 * arrays of plain values on one line when they fit in 110 columns.
 */
function formatJson(value, indent = '', lead = 0) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    if (value.every((v) => v === null || typeof v !== 'object')) {
      const line = `[${value.map((v) => JSON.stringify(v) ?? 'null').join(', ')}]`;
      // `lead`: what precedes the value on its line (indentation and key); +1 for a comma.
      if (lead + line.length + 1 <= 110) return line;
    }
    return `[\n${value.map((v) => inner + formatJson(v, inner, inner.length)).join(',\n')}\n${indent}]`;
  }
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return '{}';
  const lines = entries.map(([k, v]) => {
    const key = `${inner}${JSON.stringify(k)}: `;
    return key + formatJson(v, inner, key.length);
  });
  return `{\n${lines.join(',\n')}\n${indent}}`;
}

function checkTarget(t) {
  if (!Number.isFinite(t.value)) return null;
  return t.op === '>=' ? t.value >= t.target : t.value <= t.target;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.help) {
    console.log(`usage: node bench/run.js [--quick] [${BENCHMARKS.join('|')} ...]`);
    return;
  }
  const unknown = args.names.filter((n) => !BENCHMARKS.includes(n));
  if (unknown.length > 0) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${BENCHMARKS.join(', ')}`);
    process.exitCode = 2;
    return;
  }
  const selected = args.names.length > 0 ? BENCHMARKS.filter((n) => args.names.includes(n)) : BENCHMARKS;
  const machine = {
    nproc: cpus().length,
    cpu: cpuModel(),
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    load_average_at_start: loadavg().map((x) => Number(x.toFixed(2))),
  };
  console.log(
    `Gatehouse benchmarks${args.quick ? ' (--quick)' : ''}: ${machine.cpu}, ${machine.nproc} cores, Node ${machine.node}` +
      `${process.env.GATEHOUSE_BENCH_DIST ? `, build ${DIST_DIR}` : ''}`,
  );
  const started = Date.now();
  const report = {
    started_at: new Date(started).toISOString(),
    quick: args.quick,
    machine,
    dist: DIST_DIR,
    benchmarks: {},
  };
  mkdirSync(RESULTS_DIR, { recursive: true });

  for (const name of selected) {
    const mod = await import(`./${name}.js`);
    const t0 = Date.now();
    let result;
    try {
      result = await mod.run({ quick: args.quick });
    } catch (error) {
      console.error(`\n${mod.title}\n  FAILED: ${error?.stack ?? error}`);
      report.benchmarks[name] = { title: mod.title, error: String(error?.message ?? error) };
      process.exitCode = 1;
      continue;
    }
    const seconds = (Date.now() - t0) / 1000;
    if (result.skipped) {
      console.log(`\n${mod.title}\n  skipped: ${result.skipped}`);
      report.benchmarks[name] = { title: mod.title, skipped: result.skipped, seconds };
      continue;
    }
    for (const table of result.tables ?? [
      { title: mod.title, rows: result.rows, baseline: result.baseline },
    ]) {
      const header = ['variant', 'ops/s', 'p50 µs', 'p99 µs', `× ${table.baselineLabel ?? 'baseline'}`];
      printTable(
        table.title,
        [header].concat(
          table.rows.map((r) => [
            r.label ?? r.name,
            fmtOps(r.ops_per_s),
            fmtUs(r.p50_us),
            fmtUs(r.p99_us),
            fmtRatio(r.ratio),
          ]),
        ),
      );
    }
    for (const t of result.targets ?? []) {
      const ok = checkTarget(t);
      t.met = ok;
      const value = t.format ? t.format(t.value) : Number.isFinite(t.value) ? t.value.toFixed(3) : '-';
      console.log(
        `  target: ${t.what} ${t.op} ${t.target}: ${value}  ${ok === null ? '(not measured)' : ok ? 'MET' : 'MISSED'}`,
      );
    }
    for (const n of result.notes ?? []) console.log(`  note: ${n}`);
    console.log(`  (${seconds.toFixed(1)} s)`);
    report.benchmarks[name] = {
      title: mod.title,
      seconds,
      tables: (result.tables ?? [{ title: mod.title, rows: result.rows }]).map((t) => ({
        title: t.title,
        rows: t.rows,
      })),
      targets: (result.targets ?? []).map(({ format: _f, ...t }) => t),
      notes: result.notes ?? [],
      ...(result.extra ? { extra: result.extra } : {}),
    };
  }
  report.seconds = (Date.now() - started) / 1000;
  const file = join(RESULTS_DIR, 'latest.json');
  writeFileSync(file, `${formatJson(JSON.parse(JSON.stringify(report)))}\n`);
  console.log(`\nTotal ${report.seconds.toFixed(0)} s; results written to ${file}`);
}

await main();
