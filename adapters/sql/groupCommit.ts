/**
 * Group commit for the SQL stores: the transactions callers start within one event-loop turn are
 * run one after another in ONE database transaction, each inside its own savepoint (rerunnable
 * ones in a row share one), and all are committed by one COMMIT. A COMMIT (its WAL frames and sync on SQLite, its round trip and WAL
 * flush on PostgreSQL) and the tenant chain head's lock are then paid once per batch, not once
 * per caller.
 *
 * What callers keep:
 * - all or nothing per caller: a caller whose `fn` throws is rolled back to its savepoint, and
 *   only its own writes are undone (rerunnable neighbours sharing that savepoint run again);
 * - an acknowledged write is committed: every caller's promise settles only after the COMMIT
 *   that holds its writes (or rejects when that COMMIT fails);
 * - one chain per tenant: callers run in arrival order and each event chains on its own
 *   tenant's head as the previous caller of the batch left it.
 *
 * The flush waits for `setImmediate`, not a microtask: over HTTP each request body ends in its
 * own event-loop turn, and only a flush after the poll phase sees the requests that arrived with it.
 */
import type {
  ChainHead,
  Conflict,
  ConflictQuery,
  StateItem,
  StoredWebhook,
  StoreTx,
  TransactionOptions,
} from '../../src/index.js';

/** One caller's transaction, waiting for its batch. */
export interface BatchMember {
  readonly fn: (tx: StoreTx) => Promise<unknown>;
  readonly tenantId: string | undefined;
  /** `fn` may run again (see {@link TransactionOptions.rerunnable}): it needs no savepoint of its own. */
  readonly rerunnable?: boolean | undefined;
  /** Items of `tenantId` it will lock (see {@link TransactionOptions.items}). */
  readonly items?: TransactionOptions['items'] | undefined;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** What a store does to run one batch's database transaction. */
export interface BatchConnection {
  /** Starts the database transaction; resolves to the store's transaction API over it. */
  begin(): Promise<StoreTx>;
  /** Opens a savepoint for the next caller, releasing the previous caller's (`first`: there is none). */
  savepoint(first: boolean): Promise<void>;
  /** Undoes everything since the last savepoint; the transaction stays open. */
  rollbackToSavepoint(): Promise<void>;
  commit(): Promise<void>;
  /** Ends the transaction without its writes; must not throw when no transaction is open. */
  rollback(): Promise<void>;
  /**
   * False when the database ended the transaction by itself after a failure (SQLite rolls the
   * whole transaction back on some errors): the writes of the batch so far are gone.
   */
  isOpen(): boolean;
}

/** Options for {@link runBatch}. */
export interface RunBatchOptions {
  /**
   * Lock every member's tenant chain head, in tenant order, and read its webhook list, before
   * running any member (PostgreSQL: two instances' batches then never wait on each other's chain
   * heads or items in opposite orders); then lock and read the items members declared, in order,
   * and their open conflicts (what a write that conflicts or settles conflicts reads), so that
   * members need no statement of their own.
   * Every member must declare its tenant; a member that appends to a tenant no member of the
   * batch declared is refused.
   */
  lockTenantsFirst: boolean;
  /** Called after a member's writes were undone (to drop caches built on them). */
  onRolledBack?: () => void;
}

/** The per-batch view of the chain heads, webhook lists and locked items, read once per batch. */
interface BatchCache {
  heads: Map<string, ChainHead | null>;
  webhooks: Map<string, StoredWebhook[]>;
  /** Items as the batch locked and read them, until a member of the batch writes them. */
  items: Map<string, StateItem | null>;
  /** Open conflicts of an item (newest first), until a member of the batch writes conflicts. */
  conflicts: Map<string, Conflict[]>;
}

const emptyCache = (): BatchCache => ({
  heads: new Map(),
  webhooks: new Map(),
  items: new Map(),
  conflicts: new Map(),
});
const copyCache = (c: BatchCache): BatchCache => ({
  heads: new Map(c.heads),
  webhooks: new Map(c.webhooks),
  items: new Map(c.items),
  conflicts: new Map(c.conflicts),
});
// NUL cannot occur in what reaches a database (inputs are checked; PostgreSQL refuses it in text).
const itemId = (tenantId: string, sessionId: string, key: string) =>
  `${tenantId}\u0000${sessionId}\u0000${key}`;
/** Forgets every cached item and conflict list of a batch. */
function clearItems(cache: BatchCache): void {
  cache.items.clear();
  cache.conflicts.clear();
}

/** The item whose open conflicts `query` asks for, if that is all it asks for. */
const openConflictsOf = (tenantId: string, q: ConflictQuery): string | undefined =>
  q.status === 'open' && q.session_id !== undefined && q.key !== undefined
    ? itemId(tenantId, q.session_id, q.key)
    : undefined;

/** The methods {@link cachedTx} answers from, or drops, its batch cache. */
type CachedMethod =
  | 'lockItem'
  | 'insertItemVersion'
  | 'setItemStatus'
  | 'listConflicts'
  | 'insertConflict'
  | 'updateConflict'
  | 'lockChainHead'
  | 'appendEvent'
  | 'eraseSession'
  | 'expireItems'
  | 'expireConflicts'
  | 'listWebhooks'
  | 'insertWebhook'
  | 'updateWebhook'
  | 'deleteWebhook';

/**
 * Every other method of a transaction, which {@link cachedTx} passes through untouched: each
 * reads, or writes nothing the cache holds (an item, an item's open conflicts, a webhook list, a
 * chain head). A method added to `StoreTx` fails to compile until it is sorted here or into
 * {@link CachedMethod}: a write the cache did not hear of would leave a stale item behind it (an
 * erased value read back by the next caller of the batch).
 */
const PASSED_THROUGH: Record<Exclude<keyof StoreTx, CachedMethod>, 'reads' | 'writes nothing cached'> = {
  getActivePolicy: 'reads',
  getPolicyRevision: 'reads',
  listPolicyRevisions: 'reads',
  insertPolicyRevision: 'writes nothing cached',
  setActivePolicy: 'writes nothing cached',
  getItem: 'reads',
  getItemVersion: 'reads',
  listItemVersions: 'reads',
  listItems: 'reads',
  listSessionVersions: 'reads',
  listSessionConflicts: 'reads',
  getConflict: 'reads',
  queryEvents: 'reads',
  getWebhook: 'reads',
  getDelivery: 'reads',
  listDeliveries: 'reads',
  getApproval: 'reads',
  listApprovals: 'reads',
  listSessionValues: 'reads',
  tagSession: 'writes nothing cached',
  listSubjectSessions: 'reads',
  sessionSubject: 'reads',
  deleteSubject: 'writes nothing cached',
  erasedSessionsSince: 'reads',
  listSessionPendingDeliveries: 'reads',
  insertCheckpoint: 'writes nothing cached',
  checkpointAt: 'reads',
  eventAt: 'reads',
  firstEventSeq: 'reads',
  pruneEvents: 'writes nothing cached',
  prunedThrough: 'reads',
  listExpiredValues: 'reads',
  expireValues: 'writes nothing cached',
  listExpiredItems: 'reads',
  listExpiredConflicts: 'reads',
  listExpiredApprovals: 'reads',
  expireApprovals: 'writes nothing cached',
  getRetention: 'reads',
  putRetention: 'writes nothing cached',
  insertHold: 'writes nothing cached',
  deleteHold: 'writes nothing cached',
  listHolds: 'reads',
  firstHeldSeq: 'reads',
  lastSeqBefore: 'reads',
  insertDeliveries: 'writes nothing cached',
  latestApprovalByDigest: 'reads',
  listDueApprovals: 'reads',
  insertApproval: 'writes nothing cached',
  addApprovalRequester: 'writes nothing cached',
  transitionApproval: 'writes nothing cached',
  consumeApproval: 'writes nothing cached',
  resetDelivery: 'writes nothing cached',
};
const PASSED_THROUGH_NAMES = Object.keys(PASSED_THROUGH) as Array<keyof typeof PASSED_THROUGH>;

/**
 * Wraps a transaction so that the chain head and the webhook list of a tenant, and a locked
 * item and its open conflicts, are read once per batch: the batch holds the chain head and the
 * item's lock from their first read to COMMIT (an item's conflicts change only under its lock),
 * so the next caller's head is the one the previous caller's last append left; the webhook list,
 * the item and its conflicts are read again after a caller of the batch changed them.
 */
function cachedTx(
  inner: StoreTx,
  cache: { current: BatchCache },
  locked: ReadonlySet<string> | null,
): StoreTx {
  const cached: Pick<StoreTx, CachedMethod> = {
    async lockItem(tenantId, sessionId, key) {
      const id = itemId(tenantId, sessionId, key);
      const { items } = cache.current;
      if (items.has(id)) return items.get(id)!;
      const item = await inner.lockItem(tenantId, sessionId, key);
      cache.current.items.set(id, item);
      return item;
    },
    async insertItemVersion(tenantId, item) {
      cache.current.items.delete(itemId(tenantId, item.session_id, item.key));
      await inner.insertItemVersion(tenantId, item);
    },
    async setItemStatus(tenantId, sessionId, key, status) {
      cache.current.items.delete(itemId(tenantId, sessionId, key));
      await inner.setItemStatus(tenantId, sessionId, key, status);
    },
    async listConflicts(tenantId, query) {
      const id = openConflictsOf(tenantId, query);
      if (id === undefined) return inner.listConflicts(tenantId, query);
      let list = cache.current.conflicts.get(id);
      if (!list) {
        list = await inner.listConflicts(tenantId, query);
        cache.current.conflicts.set(id, list);
      }
      return [...list];
    },
    async insertConflict(tenantId, conflict) {
      cache.current.conflicts.delete(itemId(tenantId, conflict.session_id, conflict.key));
      await inner.insertConflict(tenantId, conflict);
    },
    async updateConflict(tenantId, conflictId, patch) {
      // Which item the conflict is of is not known here.
      cache.current.conflicts.clear();
      await inner.updateConflict(tenantId, conflictId, patch);
    },
    async lockChainHead(tenantId) {
      const { heads } = cache.current;
      if (heads.has(tenantId)) return heads.get(tenantId)!;
      if (locked && !locked.has(tenantId)) {
        throw new Error(
          `This transaction declared tenant '${[...locked].join("', '")}' but appends to tenant '${tenantId}'.`,
        );
      }
      const head = await inner.lockChainHead(tenantId);
      heads.set(tenantId, head);
      return head;
    },
    async appendEvent(tenantId, event, fields) {
      await inner.appendEvent(tenantId, event, fields);
      cache.current.heads.set(tenantId, { seq: event.seq, hash: event.hash });
    },
    // An erasure and retention change items and conflicts the cache cannot name: it starts again.
    async eraseSession(tenantId, sessionId, options) {
      clearItems(cache.current);
      await inner.eraseSession(tenantId, sessionId, options);
    },
    async expireItems(tenantId, items) {
      clearItems(cache.current);
      await inner.expireItems(tenantId, items);
    },
    async expireConflicts(tenantId, conflictIds, options) {
      clearItems(cache.current);
      await inner.expireConflicts(tenantId, conflictIds, options);
    },
    async listWebhooks(tenantId) {
      const { webhooks } = cache.current;
      let list = webhooks.get(tenantId);
      if (!list) {
        list = await inner.listWebhooks(tenantId);
        webhooks.set(tenantId, list);
      }
      return [...list];
    },
    async insertWebhook(tenantId, webhook) {
      cache.current.webhooks.delete(tenantId);
      await inner.insertWebhook(tenantId, webhook);
    },
    async updateWebhook(tenantId, webhookId, patch) {
      cache.current.webhooks.delete(tenantId);
      await inner.updateWebhook(tenantId, webhookId, patch);
    },
    async deleteWebhook(tenantId, webhookId) {
      cache.current.webhooks.delete(tenantId);
      return inner.deleteWebhook(tenantId, webhookId);
    },
  };
  const tx = { ...cached } as StoreTx;
  for (const name of PASSED_THROUGH_NAMES) (tx as unknown as Record<string, unknown>)[name] = inner[name];
  return tx;
}

/**
 * Runs a batch in one database transaction. Never rejects: each member's promise says how it went.
 * A member whose savepoint cannot be rolled back (the connection broke, the database ended the
 * transaction) takes the batch's uncommitted writes with it: the members run so far are rejected,
 * and the members not yet run start again in a new transaction.
 */
export async function runBatch(
  members: readonly BatchMember[],
  connection: BatchConnection,
  options: RunBatchOptions,
): Promise<void> {
  let pending = members;
  while (pending.length > 0) {
    const cache = { current: emptyCache() };
    const tenants = options.lockTenantsFirst ? tenantsOf(pending) : null;
    let tx: StoreTx;
    try {
      const inner = await connection.begin();
      // A lone caller of a store that locks nothing up front reads through its own transaction:
      // the cache saves reads between callers, and building it was most of a lone batch's cost.
      tx = tenants === null && pending.length === 1 ? inner : cachedTx(inner, cache, tenants);
      // Sorted: every batch takes the chain heads in the same order, so no two wait on each other.
      // Asked all at once (a pipelining store sends them in one round trip), each tenant's webhook
      // list after its lock, as its first append would read it.
      if (tenants) {
        await Promise.all([
          ...[...tenants].sort().flatMap((t) => [tx.lockChainHead(t), tx.listWebhooks(t)]),
          // Under the chain heads, as every item lock of these tenants is taken.
          ...declaredItems(pending).flatMap(([t, s, k]) => [
            tx.lockItem(t, s, k),
            tx.listConflicts(t, { session_id: s, key: k, status: 'open' }),
          ]),
        ]);
      }
    } catch (error) {
      await connection.rollback().catch(() => undefined);
      for (const m of pending) m.reject(error);
      return;
    }
    // One member alone needs no savepoint: its failure is the transaction's. Rerunnable members
    // in a row share one: when one of them fails, the run is undone to it and its others run again.
    const useSavepoints = pending.length > 1;
    const queue = [...pending];
    const done: { member: BatchMember; result: unknown }[] = [];
    let restart: readonly BatchMember[] = [];
    let open = true;
    let savepointOpen = false;
    /** Where the open savepoint was taken: the queue index, the results so far, the cache. */
    let mark = { index: 0, done: 0, cache: cache.current };
    for (let i = 0; i < queue.length; i += 1) {
      const member = queue[i]!;
      const startsRun = !member.rerunnable || i === 0 || !queue[i - 1]!.rerunnable;
      try {
        if (useSavepoints && startsRun) {
          // Released before the next one opens: SQLite tracks pages per open savepoint, so nested ones slow every write.
          await connection.savepoint(!savepointOpen);
          savepointOpen = true;
          mark = { index: i, done: done.length, cache: copyCache(cache.current) };
        }
        done.push({ member, result: await member.fn(tx) });
      } catch (error) {
        member.reject(error);
        options.onRolledBack?.();
        if (savepointOpen && connection.isOpen()) {
          try {
            await connection.rollbackToSavepoint();
            // The failed member leaves the batch; the rerunnable ones before it since the savepoint
            // run again, under that savepoint (ROLLBACK TO keeps it open).
            queue.splice(i, 1);
            done.length = mark.done;
            cache.current = copyCache(mark.cache);
            i = mark.index - 1;
            continue;
          } catch {
            // The transaction is lost: below.
          }
        }
        await connection.rollback().catch(() => undefined);
        open = false;
        const lost = new Error(
          'The transaction was rolled back with another one that failed in the same database transaction; nothing of it was written.',
          { cause: error },
        );
        for (const d of done) d.member.reject(lost);
        restart = queue.slice(i + 1);
        break;
      }
    }
    if (open) {
      let committed = true;
      try {
        await connection.commit();
      } catch (error) {
        committed = false;
        await connection.rollback().catch(() => undefined);
        options.onRolledBack?.();
        for (const d of done) d.member.reject(error);
      }
      if (committed) for (const d of done) d.member.resolve(d.result);
    }
    pending = restart;
  }
}

/** The items members declared, each once, in (tenant, session, key) order. */
function declaredItems(members: readonly BatchMember[]): [string, string, string][] {
  const byId = new Map<string, [string, string, string]>();
  for (const m of members) {
    if (m.tenantId === undefined) continue;
    for (const { sessionId, key } of m.items ?? []) {
      byId.set(itemId(m.tenantId, sessionId, key), [m.tenantId, sessionId, key]);
    }
  }
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...byId.values()].sort((a, b) => order(a[0], b[0]) || order(a[1], b[1]) || order(a[2], b[2]));
}

function tenantsOf(members: readonly BatchMember[]): Set<string> {
  const tenants = new Set<string>();
  for (const m of members) if (m.tenantId !== undefined) tenants.add(m.tenantId);
  return tenants;
}

/** Options for {@link GroupCommitQueue}. */
export interface GroupCommitQueueOptions {
  /** Most callers in one batch. */
  maxBatch: number;
  /** Runs one batch; the queue runs one batch at a time. */
  run(batch: readonly BatchMember[]): Promise<void>;
}

/**
 * Flushes after `setImmediate` that found a lone caller before the queue stops waiting for the
 * turn's end: a caller that runs one transaction at a time gains nothing from the wait and paid
 * ~10 % of an in-process evaluate for it (measured, bench/evaluate).
 */
const LONE_FLUSHES_BEFORE_MICROTASK = 32;
/** While flushing at once, every this-many flushes still waits for the turn's end, to notice concurrency. */
const PROBE_EVERY = 16;

/**
 * Collects transactions and runs them in batches, one batch at a time, each after `setImmediate`;
 * while every such batch holds a lone caller, it flushes at the end of the current microtask
 * queue instead, probing now and then, and goes back as soon as a batch holds more than one.
 */
export class GroupCommitQueue {
  readonly #options: GroupCommitQueueOptions;
  #queue: BatchMember[] = [];
  #scheduled = false;
  #running: Promise<void> | undefined;
  #loneFlushes = 0;
  #flushes = 0;

  constructor(options: GroupCommitQueueOptions) {
    this.#options = options;
  }

  /** Queues `fn` for the next batch; settles after the batch's COMMIT. */
  enqueue<T>(fn: (tx: StoreTx) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        fn,
        tenantId: options?.tenantId,
        rerunnable: options?.rerunnable,
        items: options?.items,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.#schedule();
    });
  }

  /** Resolves once every queued transaction has settled. */
  async drain(): Promise<void> {
    while (this.#running || this.#queue.length > 0) {
      if (!this.#running) this.#flush();
      await this.#running;
    }
  }

  #schedule(): void {
    if (this.#scheduled || this.#running) return;
    this.#scheduled = true;
    this.#flushes += 1;
    const afterTurn = this.#loneFlushes < LONE_FLUSHES_BEFORE_MICROTASK || this.#flushes % PROBE_EVERY === 0;
    const go = () => {
      this.#scheduled = false;
      if (!this.#running) this.#flush(afterTurn);
    };
    if (afterTurn) setImmediate(go);
    else queueMicrotask(go);
  }

  #flush(afterTurn = true): void {
    const batch = this.#queue.splice(0, this.#options.maxBatch);
    if (batch.length === 0) return;
    if (batch.length > 1) this.#loneFlushes = 0;
    else if (afterTurn) this.#loneFlushes += 1;
    this.#running = this.#options
      .run(batch)
      .catch((error: unknown) => {
        for (const m of batch) m.reject(error);
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#queue.length > 0) this.#schedule();
      });
  }
}
