// 4. recordState throughput and p99 on a SQLite file, one write in ten a conflict (a lower-trust
// source proposing a different value; the next trusted write then settles it), against the same
// floor as evaluate: one bare INSERT of an event-sized row (same driver and pragmas as the store).

import { applyStorePragmas, load, openBareSqlite, scratchDir } from './lib/env.js';
import { compareInterleaved } from './lib/measure.js';

export const name = 'record-state';
export const title = '4. recordState, 10% conflicts (SQLite file) vs a bare INSERT';

const SESSIONS = 100;
const KEYS = 20;

export async function run({ quick }) {
  const { createGatehouse } = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const scratch = scratchDir('record');
  try {
    const store = openSqliteStore({ filename: `${scratch.dir}/gatehouse.db` });
    const gatehouse = createGatehouse({ store });
    const write = (i, source) => ({
      session_id: `agent-${i % SESSIONS}`,
      key: `task.field_${Math.floor(i / SESSIONS) % KEYS}`,
      value: source === 'user_input' ? `value ${i} set by the user` : `value ${i} from a tool`,
      type: 'fact',
      source,
    });
    // Every item starts from the user, so that a tool's different value is a conflict.
    for (let i = 0; i < SESSIONS * KEYS; i += 1) await gatehouse.recordState(write(i, 'user_input'));
    const outcomes = {};
    const recordOp = async (i) => {
      const r = await gatehouse.recordState(write(i, i % 10 === 9 ? 'tool_output' : 'user_input'));
      outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
    };

    const floorDb = await openBareSqlite(`${scratch.dir}/floor.db`);
    applyStorePragmas(floorDb);
    floorDb.exec(`CREATE TABLE events (
      tenant_id TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL,
      session_id TEXT NOT NULL, decision_id TEXT, occurred_at TEXT NOT NULL, data TEXT NOT NULL,
      prev_hash TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (tenant_id, seq)) WITHOUT ROWID`);
    const sample = store.database
      .prepare(`SELECT * FROM events WHERE type = 'state_change' ORDER BY seq DESC LIMIT 1`)
      .get();
    const insert = floorDb.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');

    const results = await compareInterleaved(
      {
        floor: {
          op: (i) => {
            insert.run(
              'default',
              i + 1,
              `${sample.event_id}${i}`,
              sample.type,
              sample.session_id,
              null,
              sample.occurred_at,
              sample.data,
              sample.prev_hash,
              sample.hash,
            );
          },
        },
        record: { op: (i) => recordOp(SESSIONS * KEYS + i) },
      },
      { rounds: quick ? 2 : 5, msPerRound: quick ? 700 : 1500 },
    );
    floorDb.close();
    const verify = await gatehouse.verifyHistory();
    await store.close();
    if (!verify.ok) throw new Error(`history chain broken after the run: ${verify.problem}`);
    const total = Object.values(outcomes).reduce((a, b) => a + b, 0);
    const conflictShare = (outcomes.conflict ?? 0) / total;
    return {
      rows: [
        { name: 'floor', label: 'bare INSERT, event-sized row (baseline)', ...results.floor, ratio: 1 },
        {
          name: 'record_state',
          label: 'gatehouse.recordState(), 10% conflicts',
          ...results.record,
          ratio: results.record.ops_per_s / results.floor.ops_per_s,
        },
      ],
      notes: [
        `outcomes: ${Object.entries(outcomes)
          .map(([k, v]) => `${k} ${((v / total) * 100).toFixed(1)}%`)
          .join(', ')}; chain verified (${verify.checked} events)`,
      ],
      extra: { outcomes, conflict_share: conflictShare },
    };
  } finally {
    scratch.remove();
  }
}
