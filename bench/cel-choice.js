// Chooses the CEL library for the gate by measurement: `node bench/cel-choice.js`.
//
// The same representative policy expressions are compiled and evaluated with
// @marcbachmann/cel-js and @bufbuild/cel against the same activation (each in the input form the
// library documents: a Date or a protobuf Timestamp for `now`, bigint for CEL ints, plain objects
// for maps). For every case the result is checked against the expected value (an expected error
// must be an error, never `false`), then compile time and evaluation throughput are measured.
// Ratios are cel-js / bufbuild, so > 1 means cel-js is faster. No assertion on time: this prints.
//
// Compile = what the gate does once per expression at load: cel-js `env.parse()` + `check()`
// (type check against declared variables); bufbuild `parse()` + `plan()` (bufbuild 0.6 exports
// no type checker, so its compile does less work).

import { CelScalar, celEnv, isCelError, listType, mapType, parse, plan } from '@bufbuild/cel';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Environment } from '@marcbachmann/cel-js';

const NOW = new Date('2025-01-03T10:00:00Z'); // a Friday

/** Activation pieces shared by both libraries (JSON-shaped params: numbers are doubles). */
const params = {
  amount: 5000,
  to: 'alice@corp.com',
  note: null,
  items: [{ price: 50 }, { price: 150.5 }],
};
const budget = {
  value: '1000',
  number: 1000,
  type: 'fact',
  source: 'user_input',
  trust: 3n,
  version: 2n,
  status: 'current',
};
const conflict = {
  conflict_id: 'cfl_1',
  key: 'user.email',
  current_value: 'a@corp.com',
  proposed_value: 'b@evil.com',
  proposed_source: 'tool_output',
};

const ERROR = Symbol('error');

/** [name, expression, expected value or ERROR] */
const CASES = [
  ['double compare', "double(params.amount) > state['budget.limit'].number", true],
  ['string method', "params.to.endsWith('@corp.com')", true],
  ['in + field', "'budget.limit' in state && state['budget.limit'].trust >= 3", true],
  ['size(list)', 'size(conflicts) > 0', true],
  ['startsWith', "action.startsWith('payments.')", true],
  ['exists macro', 'params.items.exists(i, i.price > 100.0)', true],
  [
    'timestamp/duration',
    "now > timestamp('2025-01-01T00:00:00Z') && now - timestamp('2025-01-03T00:00:00Z') < duration('24h')",
    true,
  ],
  ['int vs double', 'params.amount > 100 && params.amount > 100.0 && params.amount == 5000', true],
  ['null value', 'params.note == null', true],
  ['in (absent key)', "'budget.max' in state", false],
  ['type error', 'params.to > 1', ERROR],
  ['missing key', "state['budget.max'].trust >= 3", ERROR],
];

function celJsLibrary() {
  class StateItem {
    constructor(fields) {
      Object.assign(this, fields);
    }
  }
  const env = new Environment()
    .registerType('gatehouse.StateItem', {
      ctor: StateItem,
      fields: {
        value: 'string',
        number: 'dyn',
        type: 'string',
        source: 'string',
        trust: 'int',
        version: 'int',
        status: 'string',
      },
    })
    .registerVariable('action', 'string')
    .registerVariable('params', 'map<string, dyn>')
    .registerVariable('context', 'map<string, dyn>')
    .registerVariable('state', 'map<string, gatehouse.StateItem>')
    .registerVariable('conflicts', 'list<map<string, dyn>>')
    .registerVariable('now', 'google.protobuf.Timestamp');
  const activation = {
    action: 'payments.transfer',
    params,
    context: {},
    state: { 'budget.limit': new StateItem(budget) },
    conflicts: [conflict],
    now: NOW,
  };
  return {
    name: '@marcbachmann/cel-js',
    compile(expr) {
      const program = env.parse(expr);
      const checked = program.check();
      // A static type error is still an error result: the gate would reject it at load.
      if (!checked.valid) return () => ERROR;
      return (ctx) => {
        try {
          return program(ctx);
        } catch {
          return ERROR;
        }
      };
    },
    activation,
  };
}

function bufbuildLibrary() {
  const env = celEnv({
    variables: {
      action: CelScalar.STRING,
      params: mapType(CelScalar.STRING, CelScalar.DYN),
      context: mapType(CelScalar.STRING, CelScalar.DYN),
      state: mapType(CelScalar.STRING, CelScalar.DYN),
      conflicts: listType(CelScalar.DYN),
      now: CelScalar.DYN,
    },
  });
  const activation = {
    action: 'payments.transfer',
    params,
    context: {},
    state: { 'budget.limit': budget },
    conflicts: [conflict],
    now: timestampFromDate(NOW),
  };
  return {
    name: '@bufbuild/cel',
    compile(expr) {
      const program = plan(env, parse(expr));
      return (ctx) => {
        try {
          const result = program(ctx);
          return isCelError(result) ? ERROR : result;
        } catch {
          return ERROR;
        }
      };
    },
    activation,
  };
}

/** Average microseconds per call of `fn` over `iterations` (after a short warm-up). */
function timeMicros(fn, iterations) {
  for (let i = 0; i < Math.min(100, iterations); i++) fn();
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn();
  return Number(process.hrtime.bigint() - start) / 1000 / iterations;
}

/** Calls per second of `fn`, measured for about `ms` milliseconds in batches. */
function opsPerSecond(fn, ms) {
  for (let i = 0; i < 2000; i++) fn();
  let calls = 0;
  const start = process.hrtime.bigint();
  const budgetNs = BigInt(ms) * 1_000_000n;
  let elapsed = 0n;
  while (elapsed < budgetNs) {
    for (let i = 0; i < 1000; i++) fn();
    calls += 1000;
    elapsed = process.hrtime.bigint() - start;
  }
  return calls / (Number(elapsed) / 1e9);
}

function show(value) {
  if (value === ERROR) return 'error';
  if (typeof value === 'bigint') return `${value}n`;
  return String(value);
}

const libraries = [celJsLibrary(), bufbuildLibrary()];
const rows = [];
const totals = libraries.map(() => ({ correct: 0, compileUs: 0, evalNsTotal: 0 }));

for (const [name, expr, expected] of CASES) {
  const row = { name, expected: show(expected), perLib: [] };
  libraries.forEach((lib, index) => {
    let evaluate;
    let compileError = null;
    try {
      evaluate = lib.compile(expr);
    } catch (error) {
      compileError = error;
      evaluate = () => ERROR;
    }
    const actual = evaluate(lib.activation);
    const correct = actual === expected;
    const compileUs = compileError ? Number.NaN : timeMicros(() => lib.compile(expr), 2000);
    const ops = opsPerSecond(() => evaluate(lib.activation), 150);
    totals[index].correct += correct ? 1 : 0;
    if (!Number.isNaN(compileUs)) totals[index].compileUs += compileUs;
    totals[index].evalNsTotal += 1e9 / ops;
    row.perLib.push({ actual: show(actual), correct, compileUs, ops });
  });
  rows.push(row);
}

const pad = (text, width) => String(text).padEnd(width);
const padLeft = (text, width) => String(text).padStart(width);
const fmtOps = (ops) => (ops >= 1e6 ? `${(ops / 1e6).toFixed(2)}M` : `${(ops / 1e3).toFixed(0)}k`);

const [a, b] = libraries;
console.log(
  `CEL library choice — Node ${process.version}; ratio = ${a.name} / ${b.name} (>1: ${a.name} faster)`,
);
console.log(
  [
    pad('case', 20),
    pad('expected', 9),
    pad('cel-js', 7),
    pad('bufbuild', 9),
    padLeft('compile µs cel-js', 18),
    padLeft('bufbuild', 9),
    padLeft('ratio', 6),
    padLeft('eval ops/s cel-js', 18),
    padLeft('bufbuild', 9),
    padLeft('ratio', 6),
  ].join(' '),
);
for (const row of rows) {
  const [x, y] = row.perLib;
  const mark = (r) => `${r.correct ? 'ok' : 'BAD'}${r.correct ? '' : `(${r.actual})`}`;
  console.log(
    [
      pad(row.name, 20),
      pad(row.expected, 9),
      pad(mark(x), 7),
      pad(mark(y), 9),
      padLeft(x.compileUs.toFixed(1), 18),
      padLeft(y.compileUs.toFixed(1), 9),
      padLeft((y.compileUs / x.compileUs).toFixed(1), 6),
      padLeft(fmtOps(x.ops), 18),
      padLeft(fmtOps(y.ops), 9),
      padLeft((x.ops / y.ops).toFixed(1), 6),
    ].join(' '),
  );
}
console.log('');
libraries.forEach((lib, index) => {
  const t = totals[index];
  console.log(
    `${pad(lib.name, 22)} correct ${t.correct}/${CASES.length}  compile total ${t.compileUs.toFixed(0)} µs  ` +
      `evaluate all ${CASES.length} cases ${(t.evalNsTotal / 1000).toFixed(2)} µs`,
  );
});
const geoMean = (values) => Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);
console.log(
  `geometric mean of ratios (${a.name} / ${b.name}): compile ` +
    `${geoMean(rows.map((r) => r.perLib[1].compileUs / r.perLib[0].compileUs)).toFixed(1)}x faster, ` +
    `evaluate ${geoMean(rows.map((r) => r.perLib[0].ops / r.perLib[1].ops)).toFixed(1)}x faster`,
);
const ranked = libraries
  .map((lib, index) => ({ lib, ...totals[index] }))
  .sort((p, q) => q.correct - p.correct || p.evalNsTotal - q.evalNsTotal);
const winner = ranked[0];
console.log(
  `choice: ${winner.lib.name} (correct on ${winner.correct}/${CASES.length}, then fastest evaluate: ` +
    `${(ranked[1].evalNsTotal / winner.evalNsTotal).toFixed(1)}x)`,
);
