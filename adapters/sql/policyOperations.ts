/**
 * The Store's policy revision reads and writes, and the session reads replay needs, over an
 * {@link SqlExecutor}: both SQL stores share them (see storeOperations.ts).
 */
import type {
  ActivePolicyPointer,
  PolicyReader,
  PolicyWriter,
  StoredPolicyRevision,
} from '../../src/index.js';
import type { SqlExecutor } from './executor.js';
import * as sql from './policyStatements.js';
import { num, type Row, rowToConflict, rowToItem, str, strOrNull } from './rows.js';

function rowToRevision(r: Row): StoredPolicyRevision {
  return {
    revision: str(r['revision']),
    source: str(r['source']),
    created_by: str(r['created_by']),
    created_at: str(r['created_at']),
    seq: num(r['seq']),
  };
}

function rowToPointer(r: Row): ActivePolicyPointer {
  return {
    revision: str(r['revision']),
    base_revision: strOrNull(r['base_revision']),
    activated_by: str(r['activated_by']),
    activated_at: str(r['activated_at']),
    seq: num(r['seq']),
  };
}

/** Policy revision reads and the replay's session reads. */
export function createPolicyReader(db: SqlExecutor): PolicyReader {
  return {
    async getPolicyRevision(t, revision) {
      const r = await db.get(sql.getPolicyRevision, [t, revision]);
      return r ? rowToRevision(r) : null;
    },
    async listPolicyRevisions(t, query) {
      const before = query.before_seq;
      const args = before === undefined ? [t, query.limit] : [t, before, query.limit];
      return (await db.all(sql.listPolicyRevisions(before !== undefined), args)).map(rowToRevision);
    },
    async getActivePolicy(t) {
      const r = await db.get(sql.getActivePolicy, [t]);
      return r ? rowToPointer(r) : null;
    },
    async listSessionVersions(t, s) {
      return (await db.all(sql.listSessionVersions, [t, s])).map((r) => rowToItem(r, 'superseded'));
    },
    async listSessionConflicts(t, s) {
      return (await db.all(sql.listSessionConflicts, [t, s])).map(rowToConflict);
    },
  };
}

/** Policy revision writes (inside a transaction). */
export function createPolicyWriter(db: SqlExecutor): PolicyWriter {
  return {
    async insertPolicyRevision(t, r) {
      await db.run(sql.insertPolicyRevision, [t, r.revision, r.source, r.created_by, r.created_at, r.seq]);
    },
    async setActivePolicy(t, p) {
      await db.run(sql.setActivePolicy, [
        t,
        p.revision,
        p.base_revision,
        p.activated_by,
        p.activated_at,
        p.seq,
      ]);
    },
  };
}
