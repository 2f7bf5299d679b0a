// 9. The peer: Microsoft's Agent Governance Toolkit TypeScript SDK (@microsoft/agent-governance-sdk
// 4.0.0, a devDependency used only here), its PolicyEngine with the 20 rules of bench/evaluate and
// its hash-chained AuditLogger, all in memory, against Gatehouse's durable evaluate (SQLite file,
// WAL, every decision committed before it returns), one call at a time and 16 at once, interleaved
// in the same process.
//
// AGT's condition language has equality, numeric comparisons, `in`, `and`/`or` over dotted paths
// and nothing else: no string functions, no comparing two fields, no conversions. Each rule is
// written as the nearest condition it can express (a favour to the peer: its rules do less), over
// a flat context the caller prepares per call (the action, the params, the state values it reads).
//
// For scale, the same Gatehouse on an in-memory SQLite database: every statement, the rules, the
// masking and the chain hash, but no file. It is what a decision costs before durability, so it
// bounds what a history written on the caller's thread could give one caller at a time.

import { createRequire } from 'node:module';
import { commitFloor } from './lib/commitFloor.js';
import { load, scratchDir } from './lib/env.js';
import { compareInterleaved } from './lib/measure.js';
import { BENCH_POLICY_YAML, evaluateRequests, OWNER_SOURCES, sessionItems } from './lib/workload.js';

export const name = 'peer-agt';
export const title =
  '9. Durable Gatehouse evaluate (SQLite file) vs Microsoft AGT TS SDK 4.0.0 PolicyEngine + AuditLogger in memory';

/** Callers of the concurrent variants. */
const CONCURRENT = 16;

/** The 20 rules of BENCH_POLICY_YAML, as near as AGT's condition language comes. */
const AGT_RULES = [
  // 4 global rules
  ['no_deploy_friday', "action == 'deploy.production' and weekday == 5", 'deny'],
  ['kill_switch', "state.ops_kill_switch == 'on'", 'deny'],
  ['untrusted_origin', "context.origin == 'untrusted'", 'warn'],
  ['conflict_storm', 'conflicts > 3', 'deny'],
  // payments.transfer (its requirement check as a rule, as AGT has no requirements)
  ['budget_required', "action == 'payments.transfer' and state.budget_limit_present == false", 'deny'],
  ['over_budget', "action == 'payments.transfer' and params.amount > 5000", 'deny'],
  ['large_transfer', "action == 'payments.transfer' and params.amount > 10000", 'log'],
  ['currency_mismatch', "action == 'payments.transfer' and params.currency != 'EUR'", 'deny'],
  ['refund_limit', "action == 'payments.refund' and params.amount > 500", 'warn'],
  ['external_recipient', "action == 'email.send' and params.to_domain != 'corp.example'", 'warn'],
  ['bulk_mail', "action == 'email.send' and params.cc_count > 20", 'deny'],
  ['protected_path', "action == 'files.delete' and params.path_root in ['/etc', '/usr']", 'deny'],
  ['recursive_delete', "action == 'files.delete' and params.recursive == true", 'warn'],
  ['write_quota', "action == 'files.write' and params.bytes > 1048576", 'deny'],
  ['not_approved', "action == 'deploy.production' and state.deploy_approved != 'yes'", 'deny'],
  ['freeze', "action == 'deploy.production' and state.deploy_freeze == 'on'", 'deny'],
  ['destructive_sql', "action == 'db.query' and params.sql_verb in ['DROP', 'TRUNCATE']", 'deny'],
  ['unbounded_select', "action == 'db.query' and params.sql_has_limit == false", 'warn'],
  ['too_long', "action == 'calendar.create' and params.hours > 8", 'warn'],
  ['role_check', "action == 'crm.update' and state.user_role != 'admin' and params.field == 'owner'", 'deny'],
];

/** The flat context AGT's conditions read: what the caller derives per call (counted in its time). */
function agtContext(request, state, now) {
  const p = request.params ?? {};
  return {
    action: request.action,
    weekday: now.getUTCDay(),
    conflicts: 0,
    context: request.context ?? {},
    state: {
      ops_kill_switch: state['ops.kill_switch'],
      budget_limit_present: state['budget.limit'] !== undefined,
      deploy_approved: state['deploy.approved'],
      deploy_freeze: state['deploy.freeze'],
      user_role: state['user.role'],
    },
    params: {
      ...p,
      to_domain: typeof p.to === 'string' ? p.to.slice(p.to.indexOf('@') + 1) : undefined,
      cc_count: Array.isArray(p.cc) ? p.cc.length : 0,
      path_root: typeof p.path === 'string' ? `/${p.path.split('/')[1]}` : undefined,
      sql_verb: typeof p.sql === 'string' ? p.sql.trim().split(' ')[0].toUpperCase() : undefined,
      sql_has_limit: typeof p.sql === 'string' ? p.sql.includes('LIMIT') : undefined,
    },
  };
}

export async function run({ quick }) {
  const require = createRequire(import.meta.url);
  let agt;
  try {
    agt = require('@microsoft/agent-governance-sdk');
  } catch {
    return { skipped: '@microsoft/agent-governance-sdk is not installed (npm install in this checkout)' };
  }
  const { compilePolicy, createGatehouse, gateStateOf } = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const scratch = scratchDir('peer-agt');
  try {
    const seeded = async (filename) => {
      const s = openSqliteStore({ filename });
      const g = createGatehouse({ store: s, policy: compilePolicy(BENCH_POLICY_YAML) });
      for (const item of sessionItems('bench')) await g.recordState(item, { allowedSources: OWNER_SOURCES });
      return { store: s, gatehouse: g };
    };
    const { store, gatehouse } = await seeded(`${scratch.dir}/gatehouse.db`);
    const inMemory = await seeded(':memory:');
    const requests = evaluateRequests('bench');
    const state = Object.fromEntries(sessionItems('bench').map((i) => [i.key, i.value]));
    // Engine against engine: Gatehouse's compiled policy on the session's state, no I/O, nothing recorded.
    const gateState = gateStateOf(await store.listItems('default', 'bench'));
    const policyOnly = (request) =>
      gatehouse.policy.evaluate({
        action: request.action,
        params: request.params ?? {},
        context: request.context ?? {},
        state: gateState,
        conflicts: [],
        now: new Date(),
      });

    const engine = new agt.PolicyEngine([], agt.ConflictResolutionStrategy.DenyOverrides);
    engine.loadPolicy({
      name: 'bench',
      scope: 'global',
      default_action: 'allow',
      rules: AGT_RULES.map(([ruleName, condition, ruleAction]) => ({
        name: ruleName,
        condition,
        ruleAction,
      })),
    });
    // Its default keeps 10,000 entries in memory (older ones drop off): a log that never fills a disk.
    const audit = new agt.AuditLogger();
    const agtEvaluate = (request) => {
      const decision = engine.evaluatePolicy('did:agentmesh:bench', agtContext(request, state, new Date()));
      audit.log({
        agentId: 'did:agentmesh:bench',
        action: request.action,
        decision: decision.allowed ? 'allow' : 'deny',
      });
      return decision;
    };
    // Sanity: both run every action, and agree on the Block/deny of an over-budget transfer.
    const over = { ...requests[0], params: { ...requests[0].params, amount: 99_999 } };
    if (agtEvaluate(over).allowed || (await gatehouse.evaluate(over)).allowed) {
      throw new Error('the peer and Gatehouse disagree on an over-budget transfer');
    }

    // The floor under a durable decision one at a time: its two rows (event and values) committed
    // by the store's connection with nothing decided, hashed or checked.
    for (const r of requests) await gatehouse.evaluate(r);
    const commitOnly = commitFloor(openSqliteStore, store.database, `${scratch.dir}/commit.db`, {
      count: requests.length,
      values: true,
    });

    const results = await compareInterleaved(
      {
        agt: { op: (i) => agtEvaluate(requests[i % requests.length]) },
        gatehouse: { op: (i) => gatehouse.evaluate(requests[i % requests.length]) },
        policy: { op: (i) => policyOnly(requests[i % requests.length]) },
        memory: { op: (i) => inMemory.gatehouse.evaluate(requests[i % requests.length]) },
        commit: { op: (i) => commitOnly.op(i) },
        gatehouse16: {
          op: (i) =>
            Promise.all(
              Array.from({ length: CONCURRENT }, (_, k) =>
                gatehouse.evaluate(requests[(i * CONCURRENT + k) % requests.length]),
              ),
            ),
        },
      },
      { rounds: quick ? 2 : 5, msPerRound: quick ? 700 : 1500 },
    );
    await store.close();
    await inMemory.store.close();
    await commitOnly.close();
    if (!audit.verify()) throw new Error("the peer's audit chain does not verify");

    const base = results.agt.ops_per_s;
    const g16 = { ...results.gatehouse16, ops_per_s: results.gatehouse16.ops_per_s * CONCURRENT };
    const ratio = results.gatehouse.ops_per_s / base;
    const ratio16 = g16.ops_per_s / base;
    return {
      rows: [
        {
          name: 'agt',
          label: 'AGT PolicyEngine.evaluatePolicy + AuditLogger.log, in memory (baseline)',
          ...results.agt,
          ratio: 1,
        },
        {
          name: 'gatehouse',
          label: 'gatehouse.evaluate(), durable, one at a time',
          ...results.gatehouse,
          ratio,
        },
        {
          name: 'gatehouse16',
          label: `gatehouse.evaluate(), durable, ${CONCURRENT} callers at once`,
          ...g16,
          ratio: ratio16,
        },
        {
          name: 'gatehouse_memory',
          label: 'gatehouse.evaluate(), SQLite in memory: not durable, no file (what the disk costs)',
          ...results.memory,
          ratio: results.memory.ops_per_s / base,
        },
        {
          name: 'commit_only',
          label: "a decision's two rows committed alone, nothing decided (the durable floor, one at a time)",
          ...results.commit,
          ratio: results.commit.ops_per_s / base,
        },
        {
          name: 'policy_only',
          label: "Gatehouse's policy.evaluate() alone, in memory, nothing recorded (engine vs engine)",
          ...results.policy,
          ratio: results.policy.ops_per_s / base,
        },
      ],
      targets: [
        {
          what: 'durable evaluate ops/s ÷ AGT in-memory ops/s',
          value: ratio,
          op: '>=',
          target: 1,
          stretch: 2,
        },
        {
          what: `durable evaluate ops/s ÷ AGT in-memory ops/s, ${CONCURRENT} concurrent callers`,
          value: ratio16,
          op: '>=',
          target: 1,
          stretch: 2,
        },
      ],
      notes: [
        "AGT's rules are the nearest its condition language allows (no string functions, no field-to-field compare): they do less than the CEL rules.",
        'AGT keeps its audit log in memory (10,000 entries); every Gatehouse decision is committed to a SQLite file (WAL, synchronous=NORMAL) before it returns.',
        'The in-memory row is the whole decision without the file: one caller at a time, no durable history written on the same thread can beat it.',
        'The commit-only row is the file without the decision: a durable evaluate one at a time runs below it, whatever the decision costs.',
      ],
    };
  } finally {
    scratch.remove();
  }
}
