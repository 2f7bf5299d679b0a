// How long one retention batch holds SQLite (and so the event loop) looking for the values it has
// left to erase, on a long history most of whose values retention already erased; and how long
// finding `history_after`'s cut-off takes. Not part of `bench/run.js`: it times the store's own
// statements, with no baseline.
//
//   node bench/retention-scan.js [events]          # default 1,000,000; the scratch file is removed
//
// The events and their values rows are written straight into a store's tables (the chain is not
// valid: nothing here verifies it), 99 % of the values already erased, as years of `values_after`
// without `history_after` pruning leave them.

import { load, scratchDir } from './lib/env.js';

const events = Number(process.argv[2] ?? 1_000_000);
const ERASED = 0.99;
const BATCH = 500;

const { openSqliteStore } = await load('adapters/sqlite/index.js');
const prune = await load('adapters/sql/pruneStatements.js');
const scratch = scratchDir('retention-scan');
try {
  const store = openSqliteStore({ filename: `${scratch.dir}/gatehouse.db` });
  const db = store.database;
  const insertEvent = db.prepare(
    `INSERT INTO events (tenant_id, seq, event_id, type, session_id, decision_id, occurred_at, data, prev_hash, hash)
     VALUES ('t', ?, ?, 'gate_evaluation', ?, ?, ?, ?, ?, ?)`,
  );
  const insertValues = db.prepare(
    'INSERT INTO event_values (tenant_id, seq, fields, erased_by) VALUES (?, ?, ?, ?)',
  );
  const data = JSON.stringify({
    action: 'payments.transfer',
    params: null,
    commitments: { '/params': 'a'.repeat(64) },
  });
  const fields = JSON.stringify({
    '/params': { salt: 'b'.repeat(32), value: { amount: 100, to: 'x@example.com' } },
  });
  const t0 = Date.parse('2026-01-01T00:00:00.000Z');
  const at = (seq) => new Date(t0 + seq * 1000).toISOString();
  const lastErased = Math.floor(events * ERASED);
  db.exec('BEGIN');
  for (let seq = 1; seq <= events; seq += 1) {
    insertEvent.run(
      seq,
      `evt_${seq}`,
      `s${seq % 1000}`,
      `dec_${seq}`,
      at(seq),
      data,
      'c'.repeat(64),
      'd'.repeat(64),
    );
    const erased = seq <= lastErased;
    insertValues.run('t', seq, erased ? null : fields, erased ? events + 1 : null);
  }
  db.exec('COMMIT');

  const expired = db.prepare(prune.expiredValues);
  const time = (fn) => {
    const start = process.hrtime.bigint();
    const result = fn();
    return { result, ms: Number(process.hrtime.bigint() - start) / 1e6 };
  };
  console.log(
    `Retention's search for values to erase: ${events.toLocaleString('en')} events, ${ERASED * 100} % of their values erased`,
  );
  for (const [label, cutoff] of [
    ['a batch that finds nothing (the last of every run)', at(lastErased)],
    [`a full batch (${BATCH} values to erase)`, at(lastErased + BATCH + 100)],
  ]) {
    const runs = [0, 1, 2].map(() => time(() => expired.all('t', cutoff, 't', BATCH)));
    const ms = runs.map((r) => r.ms).sort((a, b) => a - b)[1];
    console.log(`  ${label}: ${runs[0].result.length} rows, ${ms.toFixed(1)} ms (median of 3)`);
  }
  // history_after: the last event before the first one at or after the cut-off, found walking
  // forward from the oldest event.
  const last = db.prepare(prune.lastSeqBefore);
  const half = [0, 1, 2]
    .map(() => time(() => last.get('t', at(Math.floor(events / 2)), 't')).ms)
    .sort((a, b) => a - b)[1];
  console.log(
    `  history_after's cut-off, half the history newer than it: ${half.toFixed(1)} ms (median of 3)`,
  );
  await store.close();
} finally {
  scratch.remove();
}
