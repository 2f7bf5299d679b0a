/**
 * A session's current items outside a transaction (every evaluation reads them), remembered per
 * session and checked against the database on every read: other instances write to the same
 * tables, so a remembered session is only handed out again once PostgreSQL says it is unchanged.
 *
 * The check is a stamp of the session's `state_items` rows (each key with its version and
 * status), built in the same statement that would otherwise return the items: one round trip
 * either way, one snapshot for the stamp and the items. A committed version is never rewritten
 * (`state_versions` rows are only inserted, under the item's lock), so an equal stamp means equal
 * items; an unchanged session then costs PostgreSQL one scan of `state_items` and the driver one
 * row, where the items were 50 rows of 11 columns each in the benchmark's session (most of the
 * driver's work per evaluation in profiles).
 */
import type { StateItem } from '../../src/index.js';
import { frozenItemsFromRows, remember, sessionCacheKey } from '../sql/cachedSessionItems.js';
import type { SqlExecutor } from '../sql/executor.js';
import { SESSION_ITEM_COLUMNS, SESSION_ITEMS_BY_KEY } from '../sql/statements.js';

/** Sessions remembered per store; the oldest is dropped first. */
const SESSIONS_REMEMBERED = 256;

/**
 * The stamp, as both sides build it: keys are `a-z 0-9 _ - .` and statuses single words, so
 * `key:version:status` joined by `,` in key order (byte order, `COLLATE "C"`) is unambiguous.
 */
const STAMP = `SELECT coalesce(string_agg(key || ':' || version || ':' || status, ',' ORDER BY key), '') AS s
  FROM state_items WHERE tenant_id = ? AND session_id = ?`;

/**
 * The items in `listSessionItems`' columns and order, unless the stamp equals the one given; then
 * one row whose key is '' (no canonical key is empty). A session without items: no row.
 */
export const READ_SESSION_ITEMS = `WITH stamp AS (${STAMP})
  SELECT ${SESSION_ITEM_COLUMNS} ${SESSION_ITEMS_BY_KEY} AND (SELECT s FROM stamp) <> ?
  UNION ALL SELECT '', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM stamp WHERE s = ?
  ORDER BY 1`;

/** Never equal to a stamp (a stamp is empty or starts with a key). */
const NO_STAMP = ',';

/** The stamp of items read in key order, as {@link STAMP} builds it. */
function stampOf(items: readonly StateItem[]): string {
  return items.map((i) => `${i.key}:${i.version}:${i.status}`).join(',');
}

/**
 * Remembered sessions of one store, checked on every read. Reads of one session asked for in the
 * same turn of the event loop share one statement: it is sent after every one of them was asked
 * for, so each still sees what was committed before it asked (concurrent evaluations of a
 * session otherwise each ran the same read).
 */
export class SessionItemsCache {
  readonly #sessions = new Map<string, { stamp: string; items: readonly StateItem[] }>();
  /** Reads asked for and not sent yet, by session. */
  readonly #due = new Map<string, Promise<readonly StateItem[]>>();

  /** The session's current items as committed now: fresh array, frozen items shared by reads. */
  async read(db: SqlExecutor, tenantId: string, sessionId: string): Promise<StateItem[]> {
    const id = sessionCacheKey(tenantId, sessionId);
    let due = this.#due.get(id);
    if (!due) {
      // After the current microtasks: callers resumed together (a batch's commit) all join.
      due = new Promise<void>((resolve) => process.nextTick(resolve)).then(() => {
        this.#due.delete(id);
        return this.#fetch(db, tenantId, sessionId, id);
      });
      this.#due.set(id, due);
    }
    return (await due).slice();
  }

  async #fetch(
    db: SqlExecutor,
    tenantId: string,
    sessionId: string,
    id: string,
  ): Promise<readonly StateItem[]> {
    const known = this.#sessions.get(id);
    const stamp = known?.stamp ?? NO_STAMP;
    const rows = await db.rows(READ_SESSION_ITEMS, [tenantId, sessionId, tenantId, sessionId, stamp, stamp]);
    if (rows.length === 1 && rows[0]![0] === '') return known!.items;
    const items = frozenItemsFromRows(sessionId, rows);
    remember(this.#sessions, id, { stamp: stampOf(items), items }, SESSIONS_REMEMBERED);
    return items;
  }
}
