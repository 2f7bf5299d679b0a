/**
 * Item locks and reads of items' open conflicts asked for together in a PostgreSQL transaction
 * (a group-commit batch asks for every declared item at once, adapters/sql/groupCommit.ts) run
 * as one statement per kind instead of one or two per item: the advisory locks in one, the locked
 * items' reads in the next, their open conflicts in one more. They are sent in the turn they were
 * asked for, after the statements asked for before them (the chain-head locks).
 */
import type { Conflict, StateItem } from '../../src/index.js';
import type { SqlExecutor } from '../sql/executor.js';
import { type Row, rowToConflict, rowToItem } from '../sql/rows.js';
import { CONFLICT_COLUMNS, LIST_CONFLICTS_LIMIT, VERSION_COLUMNS } from '../sql/statements.js';

/** The items asked for: three parallel arrays, one element per item, and its position. */
const ASKED = 'unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS w(tenant_id, session_id, key, n)';

/**
 * The items' current versions, each item's row locked (`FOR UPDATE`). A later statement than the
 * advisory locks: it sees what each lock's previous holder committed. Subqueries with a locking
 * clause or `LIMIT` stay apart, so each item is found by its primary key and its version by its
 * own (a join is planned as a scan of every item, or of every version of the key).
 */
const READ_ITEMS = `SELECT w.n, ${VERSION_COLUMNS}, i.status FROM ${ASKED}
  CROSS JOIN LATERAL (SELECT version, status FROM state_items
    WHERE tenant_id = w.tenant_id AND session_id = w.session_id AND key = w.key FOR UPDATE) i
  CROSS JOIN LATERAL (SELECT ${VERSION_COLUMNS.replaceAll('v.', '')} FROM state_versions
    WHERE tenant_id = w.tenant_id AND session_id = w.session_id AND key = w.key AND version = i.version LIMIT 1) v`;

/** Each item's open conflicts as `listConflicts` returns them: newest first, at most its limit. */
const READ_OPEN_CONFLICTS = `SELECT w.n, ${CONFLICT_COLUMNS.split(', ')
  .map((c) => `c.${c}`)
  .join(', ')} FROM ${ASKED} CROSS JOIN LATERAL (
    SELECT ${CONFLICT_COLUMNS} FROM conflicts
    WHERE tenant_id = w.tenant_id AND session_id = w.session_id AND key = w.key AND status = 'open'
    ORDER BY conflict_id DESC LIMIT ${LIST_CONFLICTS_LIMIT}) c
  ORDER BY w.n, c.conflict_id DESC`;

interface Asked<T> {
  tenantId: string;
  sessionId: string;
  key: string;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** Requests of one kind, gathered until the microtasks of the current turn have run. */
class Gathered<T> {
  #asked: Asked<T>[] = [];
  readonly #run: (asked: readonly Asked<T>[]) => Promise<void>;

  constructor(run: (asked: readonly Asked<T>[]) => Promise<void>) {
    this.#run = run;
  }

  ask(tenantId: string, sessionId: string, key: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.#asked.length === 0) queueMicrotask(() => this.#flush());
      this.#asked.push({ tenantId, sessionId, key, resolve, reject });
    });
  }

  #flush(): void {
    const asked = this.#asked;
    this.#asked = [];
    this.#run(asked).catch((error: unknown) => {
      for (const a of asked) a.reject(error);
    });
  }
}

const columns = (asked: readonly Asked<unknown>[]) => [
  asked.map((a) => a.tenantId),
  asked.map((a) => a.sessionId),
  asked.map((a) => a.key),
];

/** Rows of a statement over {@link ASKED}, by the position (1-based) of what they answer. */
function byPosition(rows: readonly Row[]): Map<number, Row[]> {
  const out = new Map<number, Row[]>();
  for (const r of rows) {
    const n = Number(r['n']);
    const list = out.get(n);
    if (list) list.push(r);
    else out.set(n, [r]);
  }
  return out;
}

/** The item locks and open-conflict reads of one transaction. */
export class ItemReads {
  readonly #locks: Gathered<StateItem | null>;
  readonly #conflicts: Gathered<Conflict[]>;

  /** `lockSql`: takes the advisory locks of the keys in its one array parameter, in order. */
  constructor(db: SqlExecutor, lockSql: string, lockKey: (t: string, s: string, k: string) => string) {
    this.#locks = new Gathered(async (asked) => {
      const args = columns(asked);
      // Both sent at once where the driver pipelines; the read still runs after the locks.
      const [, rows] = await Promise.all([
        db.get(lockSql, [asked.map((a) => lockKey(a.tenantId, a.sessionId, a.key))]),
        db.all(READ_ITEMS, args),
      ]);
      const found = byPosition(rows);
      asked.forEach((a, i) => {
        const r = found.get(i + 1)?.[0];
        a.resolve(r ? rowToItem(r) : null);
      });
    });
    this.#conflicts = new Gathered(async (asked) => {
      const found = byPosition(await db.all(READ_OPEN_CONFLICTS, columns(asked)));
      asked.forEach((a, i) => {
        a.resolve((found.get(i + 1) ?? []).map(rowToConflict));
      });
    });
  }

  /** Locks the item (until the transaction ends) and reads its current version. */
  lockItem(tenantId: string, sessionId: string, key: string): Promise<StateItem | null> {
    return this.#locks.ask(tenantId, sessionId, key);
  }

  /** The item's open conflicts, newest first. */
  openConflicts(tenantId: string, sessionId: string, key: string): Promise<Conflict[]> {
    return this.#conflicts.ask(tenantId, sessionId, key);
  }
}
