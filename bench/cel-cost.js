// What the CEL evaluation budget (CEL_COST_LIMIT) is worth in time: `node bench/cel-cost.js`
// (after `npm run build`).
//
// Each rule below is evaluated over the largest params a caller may send (16 KiB). The costly ones
// run until the budget stops them (`policy_error`); their time per evaluation is how long a
// spent budget holds the event loop on this machine, the budget's purpose being that this stays
// around 100 ms whatever the rule. The linear ones must decide (no `policy_error`); the first is the
// baseline the ratios are against, measured in the same run. Nothing is asserted: this prints.
//
// `matches()` is left out: a regular expression such as `a.*b` over a 16 KiB string takes
// ~200 ms in V8 in a single call, which a linear charge per character cannot bound (see the
// README, Policy limits).

import { load } from './lib/env.js';
import { printTable } from './lib/measure.js';

const { compilePolicy } = await load('src/index.js');

const NOW = new Date('2025-01-03T10:00:00Z');
const zeros = Array.from({ length: 8000 }, () => 0);
const ids = Array.from({ length: 3200 }, (_, i) => i.toString(36).padStart(3, '0')).join(',');
const keyed = Object.fromEntries(Array.from({ length: 1400 }, (_, i) => [`k${i}`, i]));
const literal = (n) => `[${Array.from({ length: n }, (_, i) => i).join(', ')}]`;
const l70 = literal(70);

const CASES = [
  ['linear: exists over 8,000 elements (baseline)', 'params.l.exists(x, x < 0.0)', { l: zeros }],
  ['linear: split() then all()', "params.ids.split(',').all(t, t.size() == 3)", { ids }],
  ['costly: cross product of params', 'params.l.exists(a, params.l.exists(b, a + b == -1.0))', { l: zeros }],
  ['costly: map keys against map keys', "params.m.exists(k, params.m.exists(j, k == j + 'x'))", { m: keyed }],
  [
    'costly: `in` a params list per element',
    'params.l.exists(x, (x + 1.0) in params.l && false)',
    { l: zeros },
  ],
  [
    'costly: literals nested 3 deep (int sums)',
    `${l70}.exists(a, ${l70}.exists(b, ${l70}.exists(c, a + b + c == -1)))`,
    {},
  ],
  [
    'costly: duplicates by split() + filter()',
    "params.ids.split(',').filter(id, params.ids.split(',').filter(j, j == id).size() > 1).size() > 0",
    { ids },
  ],
  [
    'costly: `in` a bound split() list',
    "cel.bind(l, params.ids.split(','), l.exists(a, !(a in l)))",
    { ids },
  ],
  ['costly: string rebuilt per element', "params.ids.split(',').map(x, params.ids + x).size() == 0", { ids }],
];

function policyOf(when) {
  return compilePolicy(
    `version: 1\nrules:\n  - name: r\n    when: ${JSON.stringify(when)}\n    verdict: Block\n`,
  );
}

function measure(policy, params) {
  const input = { action: 'a.b', params, context: {}, state: Object.freeze({}), conflicts: [], now: NOW };
  let result = policy.evaluate(input);
  const runs = 10;
  const started = performance.now();
  for (let i = 0; i < runs; i++) result = policy.evaluate(input);
  return { ms: (performance.now() - started) / runs, result };
}

const rows = [['rule', 'ms / evaluation', 'ratio', 'outcome']];
let baseline;
for (const [name, when, params] of CASES) {
  const { ms, result } = measure(policyOf(when), params);
  baseline ??= ms;
  const spent = result.reasons.some((r) => r.rule === 'policy_error');
  rows.push([name, ms.toFixed(1), `${(ms / baseline).toFixed(1)}×`, spent ? 'budget spent' : result.verdict]);
}
printTable('CEL evaluation budget: time to decide, or to spend the budget', rows);
