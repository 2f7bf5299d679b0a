/**
 * Checkpoints and pruning, written once for both stores: the `checkpoints` table (both
 * migration files create it from here) and the statements that delete a chain prefix behind one.
 * The events table refuses a DELETE of an event unless a checkpoint of its tenant at or beyond
 * its seq is stored (a trigger in each migration file): pruning has this path and no other.
 */
import type { Checkpoint } from '../../src/index.js';
import type { Statement } from './dialect.js';
import { HELD_SESSIONS } from './legalHoldStatements.js';
import { num, type Row, str } from './rows.js';
import { CONFLICT_COLUMNS, marks } from './statements.js';

/** `checkpoints`, as both migration files create it. */
export const CHECKPOINTS_TABLE = (types: { text: string; integer: string; suffix: string }) => `
CREATE TABLE checkpoints (
  tenant_id ${types.text} NOT NULL,
  seq ${types.integer} NOT NULL,
  hash ${types.text} NOT NULL,
  event_count ${types.integer} NOT NULL,
  created_at ${types.text} NOT NULL,
  key_id ${types.text} NOT NULL,
  signature ${types.text} NOT NULL,
  PRIMARY KEY (tenant_id, seq)
)${types.suffix};`;

const COLUMNS = 'tenant_id, seq, hash, event_count, created_at, key_id, signature';

/**
 * Stores a checkpoint, in place of one already stored at its seq (both sign the same event: a
 * prune through the seq of an earlier `checkpoint create` re-signs it with the key configured now,
 * the one its event names and verify checks).
 */
export function insertCheckpoint(c: Checkpoint): Statement {
  return {
    sql: `INSERT INTO checkpoints (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant_id, seq) DO UPDATE SET hash = excluded.hash, event_count = excluded.event_count,
      created_at = excluded.created_at, key_id = excluded.key_id, signature = excluded.signature`,
    args: [c.tenant_id, c.seq, c.hash, c.event_count, c.created_at, c.key_id, c.signature],
  };
}

/** A tenant's checkpoint at a seq. */
export const checkpointAt = `SELECT ${COLUMNS} FROM checkpoints WHERE tenant_id = ? AND seq = ?`;

/** The hash and time of one event; the seq of the tenant's first kept one. */
export const eventAt = 'SELECT hash, occurred_at FROM events WHERE tenant_id = ? AND seq = ?';
export const firstEventSeq = 'SELECT seq FROM events WHERE tenant_id = ? ORDER BY seq LIMIT 1';

/**
 * The through_seq of a tenant's latest prune (its `retention.pruned` event, always kept: only a
 * later prune can delete it, and that one appends its own). The type index holds every type but
 * gate_evaluation (migrations 4 and 6): the query says so, or SQLite does not use it.
 */
export const latestPrune = `SELECT data FROM events WHERE tenant_id = ? AND type = 'retention.pruned'
  AND type <> 'gate_evaluation' ORDER BY seq DESC LIMIT 1`;

/**
 * The deletes of a prefix (through `seq`): its deliveries, its values, then its events. The core
 * bounds each call to one batch of still-present events, so each delete is small.
 */
export function pruneThrough(tenantId: string, seq: number): Statement[] {
  return [
    {
      sql: `DELETE FROM deliveries WHERE tenant_id = ?
        AND event_id IN (SELECT event_id FROM events WHERE tenant_id = ? AND seq <= ?)`,
      args: [tenantId, tenantId, seq],
    },
    { sql: 'DELETE FROM event_values WHERE tenant_id = ? AND seq <= ?', args: [tenantId, seq] },
    { sql: 'DELETE FROM events WHERE tenant_id = ? AND seq <= ?', args: [tenantId, seq] },
  ];
}

/** A checkpoints row as a checkpoint. */
export function rowToCheckpoint(r: Row): Checkpoint {
  return {
    tenant_id: str(r['tenant_id']),
    seq: num(r['seq']),
    hash: str(r['hash']),
    event_count: num(r['event_count']),
    created_at: str(r['created_at']),
    key_id: str(r['key_id']),
    signature: str(r['signature']),
  };
}

/** Kept values of events older than a time, oldest first, but of held sessions: what `values_after` erases. */
export const expiredValues = `SELECT v.seq AS seq, e.type AS type, v.fields AS fields FROM event_values v
  JOIN events e ON e.tenant_id = v.tenant_id AND e.seq = v.seq
  WHERE v.tenant_id = ? AND v.fields IS NOT NULL AND e.occurred_at < ?
  AND e.session_id NOT IN ${HELD_SESSIONS}
  ORDER BY v.seq LIMIT ?`;

/** Erases the values of these events; the rows keep the seq of the erasure event. */
export function expireValues(tenantId: string, seqs: readonly number[], erasedBy: number): Statement {
  return {
    sql: `UPDATE event_values SET fields = NULL, erased_by = ? WHERE tenant_id = ? AND fields IS NOT NULL
      AND seq IN (${marks(seqs.length)})`,
    args: [erasedBy, tenantId, ...seqs],
  };
}

/**
 * Current state items, not erased, whose current version was written before a time, after a
 * `(session_id, key)` cursor, in that order, but of held sessions: what `values_after` clears.
 */
export const expiredItems = `SELECT i.session_id AS session_id, i.key AS key, i.version AS version FROM state_items i
  JOIN state_versions v ON v.tenant_id = i.tenant_id AND v.session_id = i.session_id AND v.key = i.key
    AND v.version = i.version
  WHERE i.tenant_id = ? AND i.status <> 'erased' AND v.updated_at < ?
  AND (i.session_id > ? OR (i.session_id = ? AND i.key > ?))
  AND i.session_id NOT IN ${HELD_SESSIONS}
  ORDER BY i.session_id, i.key LIMIT ?`;

/**
 * Clears items as an erasure does (every version's value and metadata; the item reads
 * `erased`), each only at the version it was listed at: a newer write is kept.
 */
export function expireItems(
  tenantId: string,
  items: ReadonlyArray<{ session_id: string; key: string; version: number }>,
): Statement[] {
  return items.flatMap((i) => [
    {
      sql: `UPDATE state_versions SET value = '', metadata = '{}' WHERE tenant_id = ? AND session_id = ? AND key = ?
        AND version <= ? AND EXISTS (SELECT 1 FROM state_items c WHERE c.tenant_id = ? AND c.session_id = ?
        AND c.key = ? AND c.version = ?)`,
      args: [tenantId, i.session_id, i.key, i.version, tenantId, i.session_id, i.key, i.version],
    },
    {
      sql: `UPDATE state_items SET status = 'erased' WHERE tenant_id = ? AND session_id = ? AND key = ? AND version = ?`,
      args: [tenantId, i.session_id, i.key, i.version],
    },
  ]);
}

/** An approval whose params are kept: as its partial index and retention's query both say it. */
const APPROVAL_PARAMS_KEPT = "substr(digest, 1, 7) <> 'erased:'";

/**
 * `conflicts.values_erased_by`: the seq of the `erasure.completed` event that erased a conflict's
 * values (an erasure of its session, or retention), NULL while they are kept. Conflicts of
 * sessions erased before the column existed get their session's erasure; one created in the
 * erasure's millisecond is left NULL (erased again by retention, never wrongly skipped).
 * Retention finds what it has left to erase through two partial indexes, oldest first: the
 * records already erased, which stay, are not in them.
 */
export const CONFLICT_VALUES_ERASED_BY = (types: { integer: string }) => `
ALTER TABLE conflicts ADD COLUMN values_erased_by ${types.integer};
UPDATE conflicts SET values_erased_by = (SELECT max(e.seq) FROM events e WHERE e.tenant_id = conflicts.tenant_id
  AND e.session_id = conflicts.session_id AND e.type = 'erasure.completed' AND e.type <> 'gate_evaluation'
  AND e.occurred_at > conflicts.created_at);
CREATE INDEX conflicts_values_kept ON conflicts (tenant_id, created_at, conflict_id) WHERE values_erased_by IS NULL;
CREATE INDEX approvals_params_kept ON approvals (tenant_id, created_at, approval_id) WHERE ${APPROVAL_PARAMS_KEPT};
`;

const NOT_HELD = `session_id NOT IN ${HELD_SESSIONS}`;

/**
 * Conflicts created before a time whose values are kept, but of held sessions, oldest first:
 * what `values_after` erases beside the state items.
 */
export const expiredConflicts = `SELECT ${CONFLICT_COLUMNS} FROM conflicts
  WHERE tenant_id = ? AND values_erased_by IS NULL AND created_at < ? AND ${NOT_HELD}
  ORDER BY created_at, conflict_id LIMIT ?`;

/**
 * Approvals created before a time whose params are kept (an erased one's digest says so: see
 * `eraseApprovalBody`), but of held sessions, oldest first.
 */
export const expiredApprovals = `SELECT * FROM approvals
  WHERE tenant_id = ? AND ${APPROVAL_PARAMS_KEPT} AND created_at < ? AND ${NOT_HELD}
  ORDER BY created_at, approval_id LIMIT ?`;

/**
 * The last seq through which every event is older than a time (tenant, time, tenant): the one
 * before the first event at or after it, found walking forward from the oldest kept event (0 when
 * that is the first), else the newest. Not the newest older event: an event dated back (a clock
 * that stepped back) would take the younger events before it along.
 */
export const lastSeqBefore = `SELECT coalesce(
  (SELECT seq FROM events WHERE tenant_id = ? AND occurred_at >= ? ORDER BY seq LIMIT 1) - 1,
  (SELECT max(seq) FROM events WHERE tenant_id = ?)) AS seq`;
