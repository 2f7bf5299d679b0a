// The store's own write path without the core: rows a store wrote for decisions, appended again
// to the real tables of another store file (their indexes and triggers, the store's pragmas), one
// transaction each, with statements prepared once on that store's connection. What committing a
// decision costs with no decision made: the floor under a durable evaluate one at a time.

import { isTable } from './env.js';

/**
 * Reads the `count` newest gate evaluations of `sourceDb` (a store's database) and returns `op(i)`,
 * which appends the i-th of them (rotating, with fresh IDs and seq) to the store at `filename` in
 * one `BEGIN IMMEDIATE … COMMIT`: the event row; with `values`, its `event_values` row too (as
 * every decision since history format 2); and the chain head where the build keeps one in a table.
 */
export function commitFloor(openSqliteStore, sourceDb, filename, { count, values }) {
  const hasValues = isTable(sourceDb, 'event_values');
  const rows = sourceDb
    .prepare(
      hasValues
        ? `SELECT e.*, v.fields AS value_fields FROM events e LEFT JOIN event_values v
           ON v.tenant_id = e.tenant_id AND v.seq = e.seq
           WHERE e.type = 'gate_evaluation' ORDER BY e.seq DESC LIMIT ?`
        : `SELECT * FROM events WHERE type = 'gate_evaluation' ORDER BY seq DESC LIMIT ?`,
    )
    .all(count);
  const store = openSqliteStore({ filename });
  const db = store.database;
  const insertEvent = db.prepare(
    `INSERT INTO events (tenant_id, seq, event_id, type, session_id, decision_id, occurred_at, data, prev_hash, hash)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertValues =
    values && hasValues
      ? db.prepare('INSERT INTO event_values (tenant_id, seq, fields, erased_by) VALUES (?, ?, ?, NULL)')
      : null;
  const upsertHead = isTable(db, 'chain_heads')
    ? db.prepare(
        `INSERT INTO chain_heads (tenant_id, seq, hash) VALUES (?, ?, ?)
         ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
      )
    : null;
  // Prepared BEGIN/COMMIT: the same calls on the store's connection of any build.
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  return {
    rows,
    op(i) {
      begin.run();
      const r = rows[i % rows.length];
      insertEvent.run(
        'default',
        i + 1,
        `${r.event_id}${i}`,
        r.type,
        r.session_id,
        `${r.decision_id}${i}`,
        r.occurred_at,
        r.data,
        r.prev_hash,
        r.hash,
      );
      if (r.value_fields) insertValues?.run('default', i + 1, r.value_fields);
      upsertHead?.run('default', i + 1, r.hash);
      commit.run();
    },
    close: () => store.close(),
  };
}
