// 1. In-process `evaluate` (realistic policy: 10 action entries, 20 CEL rules; 50 state items in
// the session) on a SQLite file, against the floor: one bare INSERT (same driver as the store) of an
// event-sized row per operation, in the same process, with the store's pragmas (WAL,
// synchronous=NORMAL), interleaved in rounds with the subject.

import { commitFloor } from './lib/commitFloor.js';
import { applyStorePragmas, load, openBareSqlite, scratchDir } from './lib/env.js';
import { compareInterleaved } from './lib/measure.js';
import { BENCH_POLICY_YAML, evaluateRequests, OWNER_SOURCES, sessionItems } from './lib/workload.js';

export const name = 'evaluate';
export const title =
  '1. In-process evaluate (SQLite file, 10 actions / 20 CEL rules / 50 items) vs a bare INSERT';

/** A table with the columns and primary key of `events`, and nothing else (no index, no trigger). */
const FLOOR_TABLE = `CREATE TABLE events (
  tenant_id TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL,
  session_id TEXT NOT NULL, decision_id TEXT, occurred_at TEXT NOT NULL, data TEXT NOT NULL,
  prev_hash TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (tenant_id, seq)) WITHOUT ROWID`;

/** Callers of the concurrent variant. */
const CONCURRENT = 16;

export async function run({ quick }) {
  const { compilePolicy, createGatehouse } = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const scratch = scratchDir('evaluate');
  try {
    const store = openSqliteStore({ filename: `${scratch.dir}/gatehouse.db` });
    const gatehouse = createGatehouse({ store, policy: compilePolicy(BENCH_POLICY_YAML) });
    const ctx = { allowedSources: OWNER_SOURCES };
    for (const item of sessionItems('bench')) await gatehouse.recordState(item, ctx);
    const requests = evaluateRequests('bench');

    // Sanity: every action decides without a policy error, and the rows it writes give the floor its size.
    for (const r of requests) {
      const d = await gatehouse.evaluate(r);
      if (d.reasons.some((x) => x.rule === 'policy_error'))
        throw new Error(`policy error on ${r.action}: ${d.reason}`);
    }
    // The store's own write path without the core: the same event rows into the real events table
    // (its indexes and triggers), plus the chain head where the build keeps one in a table (before
    // SQLite migration 7), one transaction each, on the store's connection.
    const events = commitFloor(openSqliteStore, store.database, `${scratch.dir}/writes.db`, {
      count: requests.length,
      values: false,
    });
    const floorRows = events.rows.map(({ value_fields: _, ...r }) => ({ ...r, tenant_id: 'default' }));

    const floorDb = await openBareSqlite(`${scratch.dir}/floor.db`);
    applyStorePragmas(floorDb);
    floorDb.exec(FLOOR_TABLE);
    const insert = floorDb.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');

    const policy = gatehouse.policy;
    const items = await store.listItems('default', 'bench');
    const state = Object.fromEntries(
      items.map((i) => [i.key, { ...i, number: Number.isFinite(Number(i.value)) ? Number(i.value) : null }]),
    );

    const results = await compareInterleaved(
      {
        floor: {
          op: (i) => {
            const r = floorRows[i % floorRows.length];
            insert.run(
              r.tenant_id,
              i + 1,
              `${r.event_id}${i}`,
              r.type,
              r.session_id,
              r.decision_id,
              r.occurred_at,
              r.data,
              r.prev_hash,
              r.hash,
            );
          },
        },
        events_table: { op: (i) => events.op(i) },
        evaluate: { op: (i) => gatehouse.evaluate(requests[i % requests.length]) },
        // 16 callers at once, as 16 agents' tool calls or 16 HTTP requests of one turn: one op is all
        // 16 settled (each caller waits for the same COMMIT), so ops/s below is 16 × this loop's.
        evaluate16: {
          op: (i) =>
            Promise.all(
              Array.from({ length: CONCURRENT }, (_, k) =>
                gatehouse.evaluate(requests[(i * CONCURRENT + k) % requests.length]),
              ),
            ),
        },
        policy: {
          op: (i) => {
            const r = requests[i % requests.length];
            policy.evaluate({
              action: r.action,
              params: r.params ?? {},
              context: r.context ?? {},
              state,
              conflicts: [],
              now: new Date(),
            });
          },
        },
      },
      { rounds: quick ? 2 : 5, msPerRound: quick ? 700 : 1500 },
    );
    floorDb.close();
    await events.close();
    await store.close();

    const base = results.floor.ops_per_s;
    const ratio = results.evaluate.ops_per_s / base;
    const concurrent = { ...results.evaluate16, ops_per_s: results.evaluate16.ops_per_s * CONCURRENT };
    const ratio16 = concurrent.ops_per_s / base;
    const avgRow = Math.round(floorRows.reduce((a, r) => a + JSON.stringify(r).length, 0) / floorRows.length);
    return {
      baseline: 'floor',
      rows: [
        { name: 'floor', label: `bare INSERT, ~${avgRow} B row (baseline)`, ...results.floor, ratio: 1 },
        {
          name: 'events_table',
          label: 'same row into the real events table (indexes; heads row if the build has one), one tx',
          ...results.events_table,
          ratio: results.events_table.ops_per_s / base,
        },
        { name: 'evaluate', label: 'gatehouse.evaluate(), one at a time', ...results.evaluate, ratio },
        {
          name: 'evaluate16',
          label: `gatehouse.evaluate(), ${CONCURRENT} callers at once (p50/p99 of all ${CONCURRENT} settled)`,
          ...concurrent,
          ratio: ratio16,
        },
        {
          name: 'policy_only',
          label: 'policy.evaluate() alone, no I/O (for scale)',
          ...results.policy,
          ratio: results.policy.ops_per_s / base,
        },
      ],
      targets: [
        {
          what: 'evaluate ops/s ÷ floor ops/s, sequential',
          value: ratio,
          op: '>=',
          target: 0.2,
          stretch: 0.5,
        },
        {
          what: `evaluate ops/s ÷ floor ops/s, ${CONCURRENT} concurrent callers`,
          value: ratio16,
          op: '>=',
          target: 0.3,
          stretch: 0.5,
        },
      ],
    };
  } finally {
    scratch.remove();
  }
}
