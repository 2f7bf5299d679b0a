/**
 * The SQL of policy revisions and of the replay's reads, written once for both stores (`?`
 * placeholders; every statement here is the same in SQLite and PostgreSQL).
 */

/** Inserts a revision unless the tenant already has it (the first activation keeps its text). */
export const insertPolicyRevision = `INSERT INTO policy_revisions (tenant_id, revision, source, created_by, created_at, seq)
  VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, revision) DO NOTHING`;

export const getPolicyRevision = 'SELECT * FROM policy_revisions WHERE tenant_id = ? AND revision = ?';

/** Newest first; the cursor is the last row's `seq`. */
export function listPolicyRevisions(before: boolean): string {
  return `SELECT * FROM policy_revisions WHERE tenant_id = ?${before ? ' AND seq < ?' : ''} ORDER BY seq DESC LIMIT ?`;
}

export const getActivePolicy = 'SELECT * FROM policy_active WHERE tenant_id = ?';

export const setActivePolicy = `INSERT INTO policy_active (tenant_id, revision, base_revision, activated_by, activated_at, seq)
  VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (tenant_id) DO UPDATE SET revision = excluded.revision, base_revision = excluded.base_revision,
    activated_by = excluded.activated_by, activated_at = excluded.activated_at, seq = excluded.seq`;

/** Every version of every item of a session (primary-key order). */
export const listSessionVersions =
  'SELECT * FROM state_versions WHERE tenant_id = ? AND session_id = ? ORDER BY key, version';

/** Every conflict of a session, oldest first (conflict IDs are time-ordered). */
export const listSessionConflicts =
  'SELECT * FROM conflicts WHERE tenant_id = ? AND session_id = ? ORDER BY conflict_id';
