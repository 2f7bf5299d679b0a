/**
 * The embedded Store: one SQLite file (WAL), through `node:sqlite` or, on Node 20, better-sqlite3
 * (see ./driver.ts). Both drivers are synchronous, so operations run one at a time behind an
 * async mutex: a transaction that awaits inside never lets another operation see its uncommitted
 * writes. The SQL is shared with the PostgreSQL store (adapters/sql/statements.ts).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type {
  ChainHead,
  DumpRecord,
  StateItem,
  Store,
  StoredApiKey,
  StoredWebhook,
  StoreTx,
  TransactionOptions,
} from '../../src/index.js';
import { createIdGenerator, STORE_TABLES, systemRandomBytes, TenantWalk } from '../../src/index.js';
import { ApiKeyCache } from '../sql/apiKeyCache.js';
import { frozenItemsFromRows, remember, sessionCacheKey } from '../sql/cachedSessionItems.js';
import type { Statement } from '../sql/dialect.js';
import { assertEmptyForLoad, dumpTables, loadRecords } from '../sql/dumpLoad.js';
import type { SqlExecutor } from '../sql/executor.js';
import { type BatchConnection, GroupCommitQueue, runBatch } from '../sql/groupCommit.js';
import {
  TenantUpgrade,
  UPGRADE_FIRST_EVENT,
  UPGRADE_PAGE,
  UPGRADE_PAGE_SIZE,
  UPGRADE_TENANTS,
} from '../sql/historyUpgrade.js';
import { apiKeyValues, num, type Row, str } from '../sql/rows.js';
import * as sql from '../sql/statements.js';
import * as operations from '../sql/storeOperations.js';
import { type CheckpointThread, startCheckpointThread } from './checkpointThread.js';
import { sqliteDialect } from './dialect.js';
import {
  openSqliteDatabase,
  type SqliteDatabase,
  type SqliteStatement,
  sqliteWritesInProcess,
} from './driver.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import { claimDueDeliveriesInTransaction } from './outboxClaim.js';

/** Options for {@link openSqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * Database file, created with its folder if missing; `:memory:` for a private in-memory database.
   * @default ':memory:'
   */
  filename?: string;
  /**
   * `normal` survives a process crash; `full` also survives power loss, at a higher commit cost.
   * @default 'normal'
   */
  durability?: 'normal' | 'full';
  /**
   * WAL pages written between automatic checkpoints. Each evaluation writes several pages (the
   * event and its indexes), so SQLite's 1000 checkpointed every ~150 decisions and
   * its fsyncs were most of the p99; 10,000 (a WAL of up to ~40 MB) measured +35 % evaluations/s
   * and p99 2.8 ms -> 0.45 ms (`node bench/run.js evaluate`).
   * @default 10000
   */
  walAutocheckpointPages?: number;
  /**
   * Who copies the WAL into the database file. `background`: a worker thread with its own
   * connection, a few ms after commits, started once the store has committed
   * {@link CHECKPOINT_THREAD_AFTER_COMMITS} transactions; the connection's autocheckpoint
   * (`walAutocheckpointPages`) stays as the backstop. `commit`: only that autocheckpoint, on the
   * committing call. A file database only (`:memory:` has no WAL).
   * @default 'background'
   */
  walCheckpoints?: 'background' | 'commit';
  /**
   * Called when the background checkpoint thread fails. It has then stopped, and checkpoints
   * happen on commit again; nothing is lost.
   * @default a process warning (`process.emitWarning`)
   */
  onError?: (error: Error) => void;
}

/** Commits after which a `background` store starts its checkpoint thread (a small store never does). */
export const CHECKPOINT_THREAD_AFTER_COMMITS = 100;

/** How long the checkpoint thread lets commits gather before it copies them. */
const CHECKPOINT_INTERVAL_MS = 5;

/** The SQLite Store, with its connection for tools that need raw SQL (export, tests). */
export interface SqliteStore extends Store {
  /** The connection (`database.driver` says which). Writing to it directly bypasses every rule of the core. */
  readonly database: SqliteDatabase;
}

/** Sessions whose current items the items cache keeps; the oldest entry goes first. */
const ITEMS_CACHE_SESSIONS = 256;
/** Tenants whose chain head and webhook list the store keeps between transactions. */
const TENANT_CACHE_TENANTS = 1024;

/**
 * Most transactions committed together (see adapters/sql/groupCommit.ts). Callers wait for the
 * whole batch, so this bounds the latency one COMMIT adds; 64 callers of evaluate are a few ms.
 */
const GROUP_COMMIT_MAX = 64;

/** Rows a load hands over at once (each inserted by one cached single-row statement). */
const LOAD_BATCH_ROWS = 500;

/** Serialises async operations on one connection. */
class Mutex {
  #tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.#tail.then(fn);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

/** A synchronous step as a settled promise: a throw becomes a rejection, as the Store contract expects. */
function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The `synchronous` setting of the store and of its checkpoint thread, which must agree. */
function synchronousOf(options: SqliteStoreOptions): 'NORMAL' | 'FULL' {
  return options.durability === 'full' ? 'FULL' : 'NORMAL';
}

/**
 * Sets every pragma the store relies on: `node:sqlite` is not built with better-sqlite3's
 * compile-time defaults (its WAL `synchronous` is FULL, its page cache 2 MB, not 16 MB).
 */
function applyPragmas(db: SqliteDatabase, options: SqliteStoreOptions): void {
  db.exec('PRAGMA journal_mode = WAL');
  db.exec(`PRAGMA synchronous = ${synchronousOf(options)}`);
  db.exec('PRAGMA foreign_keys = ON');
  db.exec('PRAGMA busy_timeout = 5000');
  // Freed bytes are zeroed: an erased value (or a value an update moved) leaves no copy in free
  // pages or cell gaps (docs/data-lifecycle.md).
  db.exec('PRAGMA secure_delete = ON');
  db.exec(`PRAGMA wal_autocheckpoint = ${Math.trunc(options.walAutocheckpointPages ?? 10_000)}`);
  db.exec('PRAGMA cache_size = -16000');
}

function migrate(db: SqliteDatabase): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const applied = new Set(
    db
      .prepare('SELECT version FROM schema_migrations')
      .all()
      .map((r) => num(r['version'])),
  );
  for (const m of SQLITE_MIGRATIONS) {
    if (applied.has(m.version)) continue;
    db.begin('IMMEDIATE');
    try {
      db.exec(m.sql);
      if (m.upgradeHistory) upgradeHistory(db);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        new Date().toISOString(),
      );
      db.commit();
    } catch (error) {
      if (db.inTransaction) db.rollback();
      throw error;
    }
  }
}

/**
 * Re-encodes every tenant's history in format 2, in the caller's transaction (the migration's,
 * or a load's: `detect` then skips tenants already in format 2); the triggers refusing UPDATE on
 * `events` are lifted only inside it.
 */
function upgradeHistory(db: SqliteDatabase, options: { detect?: boolean } = {}): void {
  let tenants = db
    .prepare(UPGRADE_TENANTS)
    .all()
    .map((r) => str(r['tenant_id']));
  if (options.detect) {
    tenants = tenants.filter((t) => {
      const first = db.prepare(UPGRADE_FIRST_EVENT).get(t);
      return first !== undefined && TenantUpgrade.isFormat1(t, first);
    });
  }
  if (tenants.length === 0) return;
  const run = (s: Statement) => db.prepare(s.sql).run(...s.args);
  db.exec('DROP TRIGGER events_no_update');
  const ids = createIdGenerator();
  for (const tenantId of tenants) {
    const upgrade = new TenantUpgrade(tenantId, systemRandomBytes);
    for (;;) {
      const page = db.prepare(UPGRADE_PAGE).all(tenantId, upgrade.seq, UPGRADE_PAGE_SIZE);
      for (const row of page) for (const s of upgrade.next(row)) run(s);
      if (page.length < UPGRADE_PAGE_SIZE) break;
    }
    const at = new Date().toISOString();
    for (const s of upgrade.finish({ eventId: ids('evt'), occurredAt: at, chainHeadRow: false })) run(s);
  }
  db.exec(
    "CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'history events are append-only: UPDATE refused'); END",
  );
}

/**
 * Opens (creating and migrating as needed) a SQLite store.
 * @throws {GatehouseError} `unavailable` on Node 20 when better-sqlite3 is not installed.
 * @example
 * const store = openSqliteStore({ filename: '.gatehouse/gatehouse.db' });
 */
export function openSqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  const filename = options.filename ?? ':memory:';
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const db = openSqliteDatabase(filename);
  try {
    applyPragmas(db, options);
    migrate(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return new SqliteStoreImpl(
    db,
    filename !== ':memory:' && options.walCheckpoints !== 'commit'
      ? () =>
          startCheckpointThread({
            filename,
            driver: db.driver,
            synchronous: synchronousOf(options),
            intervalMs: CHECKPOINT_INTERVAL_MS,
            onError: options.onError ?? ((error) => process.emitWarning(error, 'GatehouseCheckpointWarning')),
          })
      : undefined,
  );
}

class SqliteStoreImpl implements SqliteStore {
  readonly kind = 'sqlite';
  readonly database: SqliteDatabase;
  readonly #mutex = new Mutex();
  readonly #statements = new Map<string, SqliteStatement>();
  /**
   * The current items of recently evaluated sessions, as the rows `listSessionItems` reads (an
   * evaluation reads the whole session each time; most sessions change far less often than they
   * are evaluated). Trusted only while nothing wrote behind the store's back:
   * - another connection, in this process or any other, committing: `PRAGMA data_version` moves;
   * - this connection writing other than through `#executor`, which counts its changes:
   *   `total_changes()` moves past the count (raw SQL on `database`, a rolled-back transaction).
   * Either empties the whole cache; the store's own item writes drop their session's entry.
   */
  readonly #itemsCache = new Map<string, readonly StateItem[]>();
  /** Active API keys, trusted under the items cache's rule (another connection's commit clears it). */
  readonly #keyCache = new ApiKeyCache();
  /**
   * Each tenant's chain head and webhook list as this store last read or wrote them, so that an
   * append reads neither. Trusted under the items cache's rule, checked after `BEGIN IMMEDIATE`
   * (the write lock held, so nothing can commit in between): another connection's commit, or a
   * write on this connection the store did not make, empties them. A webhook write by the store
   * drops the lists; an undone write (a rollback, to a savepoint too) both.
   */
  readonly #heads = new Map<string, ChainHead | null>();
  readonly #webhooks = new Map<string, StoredWebhook[]>();
  #expectedChanges = -1;
  #expectedDataVersion = -1;
  /**
   * {@link sqliteWritesInProcess} as of the last write this store counted in `#expectedChanges`
   * (or its last check): while the counter still says so, no statement wrote on any connection
   * of this process since, and `total_changes()` need not be asked.
   */
  #writesAccounted = -1;
  #closed = false;
  /** Starts the checkpoint thread, while there is none yet and one is wanted. */
  #startCheckpoints: (() => CheckpointThread) | undefined;
  #checkpoints: CheckpointThread | undefined;
  #commits = 0;

  /** Runs the shared statements on this connection, counting the changes they make. */
  readonly #executor: SqlExecutor = {
    all: (text, args = []) => settle(() => this.#statement(text).all(...args)),
    get: (text, args = []) => settle(() => this.#statement(text).get(...args)),
    rows: (text, args = []) => settle(() => this.#statement(text).rows(...args)),
    run: (text, args = []) => settle(() => this.#write(text, args)),
    runReturning: (text, args = []) =>
      settle(() => {
        const before = this.#wrote(text);
        const rows = this.#statement(text).all(...args);
        this.#accountWrite(before, rows.length); // one changed row per returned row
        return rows;
      }),
    runAll: (statements) =>
      settle(() => {
        let changes = 0;
        for (const s of statements) changes = this.#write(s.sql, s.args);
        return changes;
      }),
  };
  readonly #reader = operations.createSqlReader(this.#executor, sqliteDialect);
  readonly #keys = operations.createSqlKeyStore(this.#executor);
  readonly #outbox = operations.createSqlOutbox(this.#executor);
  /** Built once: every transaction hands out the same object (the mutex is held while it runs). */
  readonly #txApi: StoreTx;

  constructor(db: SqliteDatabase, startCheckpoints?: () => CheckpointThread) {
    this.database = db;
    this.#startCheckpoints = startCheckpoints;
    const tx = operations.createSqlTx(this.#executor, sqliteDialect);
    this.#txApi = {
      ...tx,
      // The write lock is the database's: an item needs no lock of its own, and a session whose
      // items are cached (valid from BEGIN IMMEDIATE on, dropped by every write below) needs no
      // statement to read one (an evaluation checks again what it read: staleReads.ts).
      lockItem: async (t, s, k) => {
        const cached = this.#itemsCache.get(sessionCacheKey(t, s));
        if (cached === undefined) return tx.lockItem(t, s, k);
        const item = cached.find((i) => i.key === k);
        return item === undefined ? null : { ...item };
      },
      insertItemVersion: (t, item) => {
        this.#forgetSession(t, item.session_id);
        return tx.insertItemVersion(t, item);
      },
      setItemStatus: (t, s, k, status) => {
        this.#forgetSession(t, s);
        return tx.setItemStatus(t, s, k, status);
      },
      eraseSession: (t, s, options) => {
        this.#forgetSession(t, s);
        return tx.eraseSession(t, s, options);
      },
      expireItems: (t, items) => {
        for (const i of items) this.#forgetSession(t, i.session_id);
        return tx.expireItems(t, items);
      },
      lockChainHead: async (t) => {
        if (this.#heads.has(t)) return this.#heads.get(t)!;
        const head = await tx.lockChainHead(t);
        remember(this.#heads, t, head, TENANT_CACHE_TENANTS);
        return head;
      },
      appendEvent: async (t, event, fields) => {
        await tx.appendEvent(t, event, fields);
        remember(this.#heads, t, { seq: event.seq, hash: event.hash }, TENANT_CACHE_TENANTS);
      },
      listWebhooks: async (t) => {
        let list = this.#webhooks.get(t);
        if (!list) {
          list = await tx.listWebhooks(t);
          remember(this.#webhooks, t, list, TENANT_CACHE_TENANTS);
        }
        return [...list];
      },
    };
  }

  /** A prepared statement, compiled once per SQL text. */
  #statement(text: string): SqliteStatement {
    let s = this.#statements.get(text);
    if (!s) {
      s = this.database.prepare(text);
      this.#statements.set(text, s);
    }
    return s;
  }

  #write(text: string, args: readonly unknown[]): number {
    const before = this.#wrote(text);
    const { changes } = this.#statement(text).run(...args);
    this.#accountWrite(before, changes);
    return changes;
  }

  /**
   * SAVEPOINT or RELEASE, counted as a write of no row (`changes` is not asked: node:sqlite
   * reports the last INSERT's count for a statement that changes none).
   */
  #savepointStatement(text: string): void {
    const before = sqliteWritesInProcess();
    this.#statement(text).run();
    this.#accountWrite(before, 0);
  }

  /** Before a write by the store: drops what `text` may make stale; the process's write count. */
  #wrote(text: string): number {
    // The store's SQL names its tables in lower case; SQL of its own making cannot get here.
    if (this.#webhooks.size > 0 && text.includes('webhooks')) this.#webhooks.clear();
    return sqliteWritesInProcess();
  }

  /** After a write by the store that changed `changes` rows (`before`: the count it started at). */
  #accountWrite(before: number, changes: number): void {
    this.#expectedChanges += changes;
    // Only when nothing else wrote in between: otherwise the next check asks total_changes().
    if (before === this.#writesAccounted) this.#writesAccounted = sqliteWritesInProcess();
  }

  /**
   * Set while `PRAGMA data_version` was read in the current turn of the event loop. Reading it
   * outside a transaction takes a WAL read lock (3–7 µs, file locks), and a request checked it
   * twice (key lookup, then the session's items), 16 agents' calls of one turn sixteen times.
   * Once per turn is enough: whatever another process committed after the first read of a turn
   * can only be known to a caller of this process through I/O, which arrives in a later turn —
   * or through another connection of this process: its writes move `sqliteWritesInProcess()`,
   * and the next check reads `data_version` again.
   */
  #dataVersionRead = false;
  #writesAtDataVersionRead = 0;
  readonly #dataVersionExpired = (): void => {
    this.#dataVersionRead = false;
  };

  /** The statements counted changes that are now undone: the caches start afresh. */
  #forgetUndoneChanges(): void {
    this.#itemsCache.clear();
    this.#heads.clear();
    this.#webhooks.clear();
    this.#expectedChanges = -1;
    this.#writesAccounted = -1;
  }

  /**
   * Empties the caches unless the database is exactly as this store last left it. `inTransaction`:
   * just after `BEGIN IMMEDIATE`, where `data_version` is read whatever this turn read before
   * (another process may have committed since; the chain heads must be exact, not just recent).
   */
  #validateCaches(inTransaction = false): void {
    const writes = sqliteWritesInProcess();
    const changes =
      writes === this.#writesAccounted
        ? this.#expectedChanges
        : // Two statements: measured faster than one SELECT over pragma_data_version.
          num(this.#statement('SELECT total_changes() AS n').get()!['n']);
    let dataVersion = this.#expectedDataVersion;
    if (inTransaction || !this.#dataVersionRead || this.#writesAtDataVersionRead !== writes) {
      dataVersion = num(this.#statement('PRAGMA data_version').get()!['data_version']);
      if (!this.#dataVersionRead) setImmediate(this.#dataVersionExpired).unref();
      this.#dataVersionRead = true;
      this.#writesAtDataVersionRead = writes;
    }
    if (changes !== this.#expectedChanges || dataVersion !== this.#expectedDataVersion) {
      this.#itemsCache.clear();
      this.#keyCache.clear();
      this.#heads.clear();
      this.#webhooks.clear();
      this.#expectedChanges = changes;
      this.#expectedDataVersion = dataVersion;
    }
    this.#writesAccounted = writes;
  }

  /** BEGIN IMMEDIATE, then the caches checked under the write lock. */
  #begin(): void {
    this.database.begin('IMMEDIATE');
    this.#validateCaches(true);
  }

  #forgetSession(tenantId: string, sessionId: string): void {
    this.#itemsCache.delete(sessionCacheKey(tenantId, sessionId));
  }

  /** The session's current items outside a transaction, through the cache. */
  #listItemsCached(tenantId: string, sessionId: string): StateItem[] {
    this.#validateCaches();
    const key = sessionCacheKey(tenantId, sessionId);
    let items = this.#itemsCache.get(key);
    if (!items) {
      items = frozenItemsFromRows(sessionId, this.#statement(sql.listSessionItems).rows(tenantId, sessionId));
      remember(this.#itemsCache, key, items, ITEMS_CACHE_SESSIONS);
    }
    return items.slice();
  }

  /** COMMIT, then the checkpoint thread hears of it (started at the Nth commit). */
  #commit(): void {
    this.database.commit();
    if (this.#startCheckpoints && ++this.#commits >= CHECKPOINT_THREAD_AFTER_COMMITS) {
      this.#checkpoints = this.#startCheckpoints();
      this.#startCheckpoints = undefined;
    }
    this.#checkpoints?.committed();
  }

  /** Several writes under one BEGIN IMMEDIATE … COMMIT; call it holding the mutex. */
  async #inWriteTransaction<T>(fn: () => Promise<T>): Promise<T> {
    this.#begin();
    try {
      const result = await fn();
      this.#commit();
      return result;
    } catch (error) {
      if (this.database.inTransaction) this.database.rollback();
      this.#forgetUndoneChanges();
      throw error;
    }
  }

  #serial<T>(fn: () => Promise<T> | T): Promise<T> {
    return this.#mutex.run(fn);
  }

  // ---- reads -------------------------------------------------------------------------------

  getItem: Store['getItem'] = (t, s, k) => this.#serial(() => this.#reader.getItem(t, s, k));
  getItemVersion: Store['getItemVersion'] = (t, s, k, v) =>
    this.#serial(() => this.#reader.getItemVersion(t, s, k, v));
  listItemVersions: Store['listItemVersions'] = (t, s, k) =>
    this.#serial(() => this.#reader.listItemVersions(t, s, k));
  listItems: Store['listItems'] = (t, s) => this.#serial(() => this.#listItemsCached(t, s));
  getConflict: Store['getConflict'] = (t, id) => this.#serial(() => this.#reader.getConflict(t, id));
  listConflicts: Store['listConflicts'] = (t, q) => this.#serial(() => this.#reader.listConflicts(t, q));
  queryEvents: Store['queryEvents'] = (t, q) => this.#serial(() => this.#reader.queryEvents(t, q));
  getWebhook: Store['getWebhook'] = (t, id) => this.#serial(() => this.#reader.getWebhook(t, id));
  listWebhooks: Store['listWebhooks'] = (t) => this.#serial(() => this.#reader.listWebhooks(t));
  getDelivery: Store['getDelivery'] = (t, id) => this.#serial(() => this.#reader.getDelivery(t, id));
  listDeliveries: Store['listDeliveries'] = (t, w, q) =>
    this.#serial(() => this.#reader.listDeliveries(t, w, q));
  getApproval: Store['getApproval'] = (t, id) => this.#serial(() => this.#reader.getApproval(t, id));
  listApprovals: Store['listApprovals'] = (t, q) => this.#serial(() => this.#reader.listApprovals(t, q));
  getPolicyRevision: Store['getPolicyRevision'] = (t, r) =>
    this.#serial(() => this.#reader.getPolicyRevision(t, r));
  listPolicyRevisions: Store['listPolicyRevisions'] = (t, q) =>
    this.#serial(() => this.#reader.listPolicyRevisions(t, q));
  getActivePolicy: Store['getActivePolicy'] = (t) => this.#serial(() => this.#reader.getActivePolicy(t));
  listSessionVersions: Store['listSessionVersions'] = (t, s) =>
    this.#serial(() => this.#reader.listSessionVersions(t, s));
  listSessionConflicts: Store['listSessionConflicts'] = (t, s) =>
    this.#serial(() => this.#reader.listSessionConflicts(t, s));

  // ---- transactions ------------------------------------------------------------------------

  /**
   * Group commit: the transactions of one event-loop turn share one BEGIN IMMEDIATE … COMMIT, a
   * savepoint each (adapters/sql/groupCommit.ts). The connection is held for the whole batch.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.#group.enqueue(fn, options);
  }

  readonly #batchConnection: BatchConnection = {
    begin: async () => {
      this.#begin();
      return this.#txApi;
    },
    savepoint: async (first) => {
      if (!first) this.#savepointStatement('RELEASE gatehouse_tx');
      this.#savepointStatement('SAVEPOINT gatehouse_tx');
    },
    rollbackToSavepoint: async () => {
      this.#statement('ROLLBACK TO gatehouse_tx').run();
    },
    commit: async () => {
      this.#commit();
    },
    rollback: async () => {
      if (this.database.inTransaction) this.database.rollback();
    },
    isOpen: () => this.database.inTransaction,
  };

  readonly #group = new GroupCommitQueue({
    maxBatch: GROUP_COMMIT_MAX,
    run: (batch) =>
      this.#mutex.run(() =>
        runBatch(batch, this.#batchConnection, {
          lockTenantsFirst: false,
          onRolledBack: () => this.#forgetUndoneChanges(),
        }),
      ),
  });

  // ---- keys and outbox ---------------------------------------------------------------------

  insertApiKey: Store['insertApiKey'] = (k) => this.#serial(() => this.#keys.insertApiKey(k));
  /** One statement on the only writer: "no key yet" and the insert cannot interleave. */
  insertFirstApiKey = (k: StoredApiKey): Promise<boolean> =>
    this.#serial(() => this.#write(sql.insertFirstApiKey, apiKeyValues(k)) > 0);
  findApiKeyByHash: Store['findApiKeyByHash'] = (hash) =>
    this.#serial(async () => {
      // A revocation by another connection (process) is a commit there: data_version moves and
      // the check clears the cache before this lookup. One by this store clears it itself.
      this.#validateCaches();
      const cached = this.#keyCache.get(hash);
      if (cached) return cached;
      const generation = this.#keyCache.generation;
      const key = await this.#keys.findApiKeyByHash(hash);
      this.#keyCache.remember(hash, key, generation);
      return key;
    });
  listApiKeys: Store['listApiKeys'] = (tenantId) => this.#serial(() => this.#keys.listApiKeys(tenantId));
  revokeApiKey: Store['revokeApiKey'] = (id, at) =>
    this.#serial(async () => {
      try {
        return await this.#keys.revokeApiKey(id, at);
      } finally {
        this.#keyCache.clear();
      }
    });
  countApiKeys: Store['countApiKeys'] = () => this.#serial(() => this.#keys.countApiKeys());

  /** Where the next claim's walk over tenants with pending deliveries goes on from. */
  readonly #walk = new TenantWalk();
  claimDueDeliveries: Store['claimDueDeliveries'] = (o) =>
    this.#serial(() =>
      this.#inWriteTransaction(() => claimDueDeliveriesInTransaction(this.#executor, o, this.#walk)),
    );
  recordDeliveryAttempt: Store['recordDeliveryAttempt'] = (t, id, a) =>
    this.#serial(() => this.#outbox.recordDeliveryAttempt(t, id, a));
  recordDeliveryAttempts: Store['recordDeliveryAttempts'] = (attempts) =>
    this.#serial(() => this.#inWriteTransaction(() => this.#outbox.recordDeliveryAttempts(attempts)));
  releaseDeliveries: Store['releaseDeliveries'] = (leases) =>
    this.#serial(() => this.#inWriteTransaction(() => this.#outbox.releaseDeliveries(leases)));
  disableWebhook: Store['disableWebhook'] = (t, id, at) =>
    this.#serial(() => this.#outbox.disableWebhook(t, id, at));
  nextDueAt: Store['nextDueAt'] = () => this.#serial(() => this.#outbox.nextDueAt());

  // ---- history, dump and load --------------------------------------------------------------

  scanEvents(tenantId: string, options?: { pageSize?: number }) {
    const serialised: SqlExecutor = {
      ...this.#executor,
      all: (t, a) => this.#serial(() => this.#executor.all(t, a)),
    };
    return operations.scanEvents(serialised, tenantId, options);
  }

  listTenants = (): Promise<string[]> => this.#serial(() => operations.listTenants(this.#executor));

  async *dumpRows(options: { pageSize?: number } = {}): AsyncIterable<DumpRecord> {
    // One read transaction for the whole dump, so it is one snapshot even while another process
    // writes (WAL). This store's other operations wait until the dump is consumed or abandoned.
    let release!: () => void;
    let acquired!: () => void;
    const gotLock = new Promise<void>((resolve) => {
      acquired = resolve;
    });
    const held = this.#mutex.run(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
          acquired();
        }),
    );
    await gotLock;
    this.database.begin('DEFERRED');
    try {
      // node:sqlite rows have no prototype: hand out plain objects.
      yield* dumpTables(
        async (page) =>
          this.#statement(page.sql)
            .all(...page.args)
            .map((r) => ({ ...r }) as DumpRecord['row']),
        options.pageSize ?? 1000,
      );
    } finally {
      if (this.database.inTransaction) this.database.commit();
      release();
      await held;
    }
  }

  loadRows(records: AsyncIterable<DumpRecord>): Promise<number> {
    const columns = new Map<string, Set<string>>(
      STORE_TABLES.map((t) => [
        t,
        new Set(
          this.database
            .prepare(`PRAGMA table_info(${t})`)
            .all()
            .map((c: Row) => str(c['name'])),
        ),
      ]),
    );
    // Streams the dump inside one write transaction, holding the connection: all or nothing.
    return this.#serial(() =>
      this.#inWriteTransaction(async () => {
        assertEmptyForLoad(this.#statement(sql.countUsedRows).get()!['n']);
        const count = await loadRecords(records, {
          columns,
          batchRows: LOAD_BATCH_ROWS,
          insert: async (table, cols, rows) => {
            // A view of the events here (migration 7): the loaded events are the heads.
            if (table === 'chain_heads') return;
            const insert = this.#statement(sql.insertRows(table, cols, 1));
            for (const row of rows) insert.run(...cols.map((c) => row[c] ?? null));
          },
        });
        // A dump of a version before history format 2 is upgraded as the migration would have
        // (unless the schema is older still: then the migration will).
        if ((columns.get('event_values')?.size ?? 0) > 0) upgradeHistory(this.database, { detect: true });
        return count;
      }),
    );
  }

  /**
   * After an erasure: copies the WAL into the database file and truncates it, so the frames that
   * held erased values are gone (free pages and cell gaps are zeroed by `secure_delete`).
   */
  scrub(): Promise<void> {
    return this.#serial(() => {
      this.database.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    });
  }

  ping(): Promise<void> {
    return this.#serial(() => {
      this.#statement('SELECT 1').get();
    });
  }

  async close(): Promise<void> {
    // Transactions already started are committed (or fail) before the connection goes.
    await this.#group.drain();
    return this.#mutex.run(async () => {
      if (this.#closed) return;
      this.#closed = true;
      this.#startCheckpoints = undefined;
      // The worker's connection goes first: the last one to close checkpoints and removes the WAL.
      await this.#checkpoints?.stop();
      this.database.close();
    });
  }
}
