/**
 * Legal holds and API-set retention, written once for both stores: the `legal_holds` and
 * `retention_settings` tables (both migration files create them from here) and their statements.
 */
import type { LegalHold } from '../../src/index.js';
import type { Statement } from './dialect.js';
import { type Row, str, strOrNull } from './rows.js';

/** `legal_holds`, as both migration files create it. `session_id` NULL: the whole tenant. */
export const LEGAL_HOLDS_TABLE = (types: { text: string }) => `
CREATE TABLE legal_holds (
  hold_id ${types.text} PRIMARY KEY,
  tenant_id ${types.text} NOT NULL,
  session_id ${types.text},
  reference ${types.text} NOT NULL,
  placed_by ${types.text} NOT NULL,
  placed_at ${types.text} NOT NULL
);
CREATE INDEX legal_holds_by_tenant ON legal_holds (tenant_id, session_id);`;

/** `retention_settings`, as both migration files create it: one row per tenant set by the API. */
export const RETENTION_SETTINGS_TABLE = (types: { text: string }) => `
CREATE TABLE retention_settings (
  tenant_id ${types.text} PRIMARY KEY,
  settings ${types.text} NOT NULL,
  updated_at ${types.text} NOT NULL,
  updated_by ${types.text} NOT NULL
);`;
export const getRetention =
  'SELECT settings, updated_at, updated_by FROM retention_settings WHERE tenant_id = ?';
export const putRetention = `INSERT INTO retention_settings (tenant_id, settings, updated_at, updated_by) VALUES (?, ?, ?, ?)
  ON CONFLICT (tenant_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at, updated_by = excluded.updated_by`;

export function insertHold(tenantId: string, h: LegalHold): Statement {
  return {
    sql: 'INSERT INTO legal_holds (hold_id, tenant_id, session_id, reference, placed_by, placed_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [h.hold_id, tenantId, h.session_id, h.reference, h.placed_by, h.placed_at],
  };
}

export const deleteHold = 'DELETE FROM legal_holds WHERE tenant_id = ? AND hold_id = ?';
export const getHold =
  'SELECT hold_id, session_id, reference, placed_by, placed_at FROM legal_holds WHERE tenant_id = ? AND hold_id = ?';
export const listHolds =
  'SELECT hold_id, session_id, reference, placed_by, placed_at FROM legal_holds WHERE tenant_id = ? ORDER BY hold_id';
/** The sessions a tenant (its one parameter) holds: what erasure, retention and pruning leave alone. */
export const HELD_SESSIONS =
  '(SELECT session_id FROM legal_holds WHERE tenant_id = ? AND session_id IS NOT NULL)';

/** The first event of any held session (pruning stops before it). */
export const firstHeldSeq = `SELECT min(seq) AS seq FROM events WHERE tenant_id = ? AND session_id IN ${HELD_SESSIONS}`;

export function rowToHold(r: Row): LegalHold {
  return {
    hold_id: str(r['hold_id']),
    session_id: strOrNull(r['session_id']),
    reference: str(r['reference']),
    placed_by: str(r['placed_by']),
    placed_at: str(r['placed_at']),
  };
}
