/**
 * The embedded Store: one SQLite file (WAL) through better-sqlite3. better-sqlite3 is
 * synchronous, so operations run one at a time behind an async mutex: a transaction that awaits
 * inside never lets another operation see its uncommitted writes.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type {
  ChainHead,
  ClaimedDelivery,
  Conflict,
  ConflictQuery,
  Delivery,
  DeliveryAttempt,
  DumpRecord,
  EventQuery,
  HistoryEvent,
  NewDelivery,
  StateItem,
  Store,
  StoredApiKey,
  StoredEvent,
  StoredWebhook,
  StoreTx,
} from '../../src/index.js';
import { GatehouseError, STORE_TABLE_KEYS, STORE_TABLES } from '../../src/index.js';
import {
  apiKeyValues,
  metadataOf,
  num,
  type Row,
  rowToConflict,
  rowToDelivery,
  rowToEvent,
  rowToItem,
  rowToKey,
  rowToWebhook,
  str,
  strOrNull,
  withoutDecision,
} from '../sql/rows.js';
import { SQLITE_MIGRATIONS } from './migrations.js';

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
   * event, its indexes, the chain head), so SQLite's 1000 checkpointed every ~150 decisions and
   * its fsyncs were most of the p99; 10,000 (a WAL of up to ~40 MB) measured +35 % evaluations/s
   * and p99 2.8 ms -> 0.45 ms (`node bench/run.js evaluate`).
   * @default 10000
   */
  walAutocheckpointPages?: number;
}

/** The SQLite Store, with its connection for tools that need raw SQL (export, tests). */
export interface SqliteStore extends Store {
  /** The better-sqlite3 connection. Writing to it directly bypasses every rule of the core. */
  readonly database: Database.Database;
}

/** Sessions whose current items `#itemsCache` keeps; the oldest entry goes first. */
const ITEMS_CACHE_SESSIONS = 256;

/** Unambiguous for any tenant and session strings. */
const sessionCacheKey = (tenantId: string, sessionId: string): string =>
  `${tenantId.length}:${tenantId}${sessionId}`;

/** Items from the positional rows of `#listItemRows`; fresh objects on every call. */
function itemsFromRows(sessionId: string, rows: unknown[][]): StateItem[] {
  const items: StateItem[] = new Array(rows.length);
  for (let n = 0; n < rows.length; n += 1) {
    const r = rows[n]!;
    items[n] = {
      session_id: sessionId,
      key: r[0] as string,
      value: r[1] as string,
      type: r[2] as string,
      source: r[3] as string,
      trust: num(r[4]),
      sensitivity: r[5] as StateItem['sensitivity'],
      category: r[6] as string,
      version: num(r[7]),
      status: r[8] as StateItem['status'],
      metadata: metadataOf(r[9]),
      updated_at: r[10] as string,
    };
  }
  return items;
}

/** Serialises async operations on one connection. */
class Mutex {
  #tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.#tail.then(fn);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

function migrate(db: Database.Database): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as Row[]).map((r) => num(r['version'])),
  );
  for (const m of SQLITE_MIGRATIONS) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        new Date().toISOString(),
      );
    }).immediate();
  }
}

/**
 * Opens (creating and migrating as needed) a SQLite store.
 * @example
 * const store = openSqliteStore({ filename: '.gatehouse/gatehouse.db' });
 */
export function openSqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  const filename = options.filename ?? ':memory:';
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const db = new Database(filename);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${options.durability === 'full' ? 'FULL' : 'NORMAL'}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.pragma(`wal_autocheckpoint = ${options.walAutocheckpointPages ?? 10_000}`);
  migrate(db);
  return new SqliteStoreImpl(db);
}

class SqliteStoreImpl implements SqliteStore {
  readonly kind = 'sqlite';
  readonly #db: Database.Database;
  readonly #mutex = new Mutex();
  readonly #stmts = new Map<string, Database.Statement>();
  readonly #rawStmts = new Map<string, Database.Statement>();
  readonly #writeStmts = new Map<string, { run(...args: unknown[]): Database.RunResult }>();
  /** Built once: a transaction hands out the same object each time. */
  readonly #txApi: StoreTx = this.#tx();
  /**
   * The current items of recently evaluated sessions, as the rows `#listItems` reads (an
   * evaluation reads the whole session each time; most sessions change far less often than they
   * are evaluated). Trusted only while nothing wrote behind the store's back:
   * - another connection, in this process or any other, committing: `PRAGMA data_version` moves;
   * - this connection writing other than through the statements below, which count their changes:
   *   `total_changes()` moves past the count (raw SQL on `database`, a rolled-back transaction).
   * Either empties the whole cache; the store's own item writes drop their session's entry.
   */
  readonly #itemsCache = new Map<string, unknown[][]>();
  #dataVersionStmt: Database.Statement | undefined;
  #totalChangesStmt: Database.Statement | undefined;
  #expectedChanges = -1;
  #expectedDataVersion = -1;
  #closed = false;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  get database(): Database.Database {
    return this.#db;
  }

  #q(sql: string): Database.Statement {
    let s = this.#stmts.get(sql);
    if (!s) {
      s = this.#db.prepare(sql);
      this.#stmts.set(sql, s);
    }
    return s;
  }

  /** A cached statement returning rows as arrays, in the column order of its SELECT. */
  #raw(sql: string): Database.Statement {
    let s = this.#rawStmts.get(sql);
    if (!s) {
      s = this.#db.prepare(sql).raw(true);
      this.#rawStmts.set(sql, s);
    }
    return s;
  }

  /** A cached write statement whose `run` counts its changes (see `#itemsCache`). */
  #w(sql: string): { run(...args: unknown[]): Database.RunResult } {
    let w = this.#writeStmts.get(sql);
    if (!w) {
      const stmt = this.#db.prepare(sql);
      w = {
        run: (...args: unknown[]) => {
          const info = stmt.run(...args);
          this.#expectedChanges += info.changes;
          return info;
        },
      };
      this.#writeStmts.set(sql, w);
    }
    return w;
  }

  /** Empties the items cache unless the database is exactly as this store last left it. */
  #validateItemsCache(): void {
    // Two statements: measured faster than one SELECT over pragma_data_version.
    this.#totalChangesStmt ??= this.#db.prepare('SELECT total_changes()').pluck();
    this.#dataVersionStmt ??= this.#db.prepare('PRAGMA data_version').pluck();
    const changes = this.#totalChangesStmt.get() as number;
    const dataVersion = this.#dataVersionStmt.get() as number;
    if (changes !== this.#expectedChanges || dataVersion !== this.#expectedDataVersion) {
      this.#itemsCache.clear();
      this.#expectedChanges = changes;
      this.#expectedDataVersion = dataVersion;
    }
  }

  #forgetSession(tenantId: string, sessionId: string): void {
    this.#itemsCache.delete(sessionCacheKey(tenantId, sessionId));
  }

  #read<T>(fn: () => T): Promise<T> {
    return this.#mutex.run(fn);
  }

  // ---- reads -------------------------------------------------------------------------------

  #getItem(tenantId: string, sessionId: string, key: string): StateItem | null {
    const r = this.#q(
      `SELECT v.*, i.status FROM state_items i
       JOIN state_versions v ON v.tenant_id = i.tenant_id AND v.session_id = i.session_id AND v.key = i.key AND v.version = i.version
       WHERE i.tenant_id = ? AND i.session_id = ? AND i.key = ?`,
    ).get(tenantId, sessionId, key) as Row | undefined;
    return r ? rowToItem(r) : null;
  }

  #getItemVersion(tenantId: string, sessionId: string, key: string, version: number): StateItem | null {
    const r = this.#q(
      'SELECT * FROM state_versions WHERE tenant_id = ? AND session_id = ? AND key = ? AND version = ?',
    ).get(tenantId, sessionId, key, version) as Row | undefined;
    if (!r) return null;
    const current = this.#getItem(tenantId, sessionId, key);
    return current && current.version === version ? current : rowToItem(r, 'superseded');
  }

  #listItemVersions(tenantId: string, sessionId: string, key: string): StateItem[] {
    const current = this.#getItem(tenantId, sessionId, key);
    const rows = this.#q(
      'SELECT * FROM state_versions WHERE tenant_id = ? AND session_id = ? AND key = ? ORDER BY version',
    ).all(tenantId, sessionId, key) as Row[];
    return rows.map((r) =>
      current && num(r['version']) === current.version ? current : rowToItem(r, 'superseded'),
    );
  }

  #listItemRows(tenantId: string, sessionId: string): unknown[][] {
    // Runs on every evaluation: positional rows of the columns an item needs (no row objects to
    // build and read back, no tenant and session strings copied out 50 times).
    return this.#raw(
      `SELECT v.key, v.value, v.type, v.source, v.trust, v.sensitivity, v.category, v.version, i.status, v.metadata, v.updated_at
       FROM state_items i
       JOIN state_versions v ON v.tenant_id = i.tenant_id AND v.session_id = i.session_id AND v.key = i.key AND v.version = i.version
       WHERE i.tenant_id = ? AND i.session_id = ? ORDER BY i.key`,
    ).all(tenantId, sessionId) as unknown[][];
  }

  #listItems(tenantId: string, sessionId: string): StateItem[] {
    return itemsFromRows(sessionId, this.#listItemRows(tenantId, sessionId));
  }

  /** `#listItems` outside a transaction, through the cache. */
  #listItemsCached(tenantId: string, sessionId: string): StateItem[] {
    this.#validateItemsCache();
    const key = sessionCacheKey(tenantId, sessionId);
    let rows = this.#itemsCache.get(key);
    if (!rows) {
      rows = this.#listItemRows(tenantId, sessionId);
      if (this.#itemsCache.size >= ITEMS_CACHE_SESSIONS) {
        this.#itemsCache.delete(this.#itemsCache.keys().next().value!);
      }
      this.#itemsCache.set(key, rows);
    }
    return itemsFromRows(sessionId, rows);
  }

  #getConflict(tenantId: string, conflictId: string): Conflict | null {
    const r = this.#q('SELECT * FROM conflicts WHERE tenant_id = ? AND conflict_id = ?').get(
      tenantId,
      conflictId,
    ) as Row | undefined;
    return r ? rowToConflict(r) : null;
  }

  #listConflicts(tenantId: string, query: ConflictQuery): Conflict[] {
    const where = ['tenant_id = ?'];
    const args: unknown[] = [tenantId];
    if (query.session_id !== undefined) {
      where.push('session_id = ?');
      args.push(query.session_id);
    }
    if (query.key !== undefined) {
      where.push('key = ?');
      args.push(query.key);
    }
    if (query.status !== undefined) {
      where.push('status = ?');
      args.push(query.status);
    }
    const rows = this.#q(
      `SELECT * FROM conflicts WHERE ${where.join(' AND ')} ORDER BY conflict_id DESC LIMIT 500`,
    ).all(...args) as Row[];
    return rows.map(rowToConflict);
  }

  #queryEvents(tenantId: string, query: EventQuery): StoredEvent[] {
    const where = ['tenant_id = ?'];
    const args: unknown[] = [tenantId];
    if (query.session_id !== undefined) {
      where.push('session_id = ?');
      args.push(query.session_id);
    }
    if (query.type !== undefined) {
      where.push('type = ?');
      args.push(query.type);
    }
    if (query.decision_id !== undefined) {
      where.push('decision_id = ?');
      args.push(query.decision_id);
    }
    if (query.after_seq !== undefined) {
      where.push(query.order === 'asc' ? 'seq > ?' : 'seq < ?');
      args.push(query.after_seq);
    }
    args.push(query.limit);
    // Named, because without table statistics SQLite walks the primary key (tenant_id, seq) in
    // order and filters row by row: a session's page or a decision's events then cost a scan of
    // the log (measured: 4 ms for a decision at 10,000 events, growing with the log).
    const index =
      query.decision_id !== undefined
        ? ' INDEXED BY events_by_decision'
        : query.session_id !== undefined
          ? query.type !== undefined
            ? ' INDEXED BY events_by_session_type'
            : ' INDEXED BY events_by_session'
          : query.type !== undefined
            ? ' INDEXED BY events_by_type'
            : '';
    const rows = this.#q(
      `SELECT * FROM events${index} WHERE ${where.join(' AND ')} ORDER BY seq ${query.order === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`,
    ).all(...args) as Row[];
    return rows.map(rowToEvent);
  }

  #getWebhook(tenantId: string, webhookId: string): StoredWebhook | null {
    const r = this.#q('SELECT * FROM webhooks WHERE tenant_id = ? AND id = ?').get(tenantId, webhookId) as
      | Row
      | undefined;
    return r ? rowToWebhook(r) : null;
  }

  #listWebhooks(tenantId: string): StoredWebhook[] {
    return (this.#q('SELECT * FROM webhooks WHERE tenant_id = ? ORDER BY id').all(tenantId) as Row[]).map(
      rowToWebhook,
    );
  }

  #getDelivery(tenantId: string, deliveryId: string): Delivery | null {
    const r = this.#q('SELECT * FROM deliveries WHERE tenant_id = ? AND delivery_id = ?').get(
      tenantId,
      deliveryId,
    ) as Row | undefined;
    return r ? rowToDelivery(r) : null;
  }

  #listDeliveries(
    tenantId: string,
    webhookId: string,
    query: { status?: Delivery['status'] | undefined; limit: number; before_id?: string | undefined },
  ): Delivery[] {
    const where = ['tenant_id = ?', 'webhook_id = ?'];
    const args: unknown[] = [tenantId, webhookId];
    if (query.status !== undefined) {
      where.push('status = ?');
      args.push(query.status);
    }
    if (query.before_id !== undefined) {
      where.push('delivery_id < ?');
      args.push(query.before_id);
    }
    args.push(query.limit);
    return (
      this.#q(`SELECT * FROM deliveries WHERE ${where.join(' AND ')} ORDER BY delivery_id DESC LIMIT ?`).all(
        ...args,
      ) as Row[]
    ).map(rowToDelivery);
  }

  getItem(t: string, s: string, k: string) {
    return this.#read(() => this.#getItem(t, s, k));
  }
  getItemVersion(t: string, s: string, k: string, v: number) {
    return this.#read(() => this.#getItemVersion(t, s, k, v));
  }
  listItemVersions(t: string, s: string, k: string) {
    return this.#read(() => this.#listItemVersions(t, s, k));
  }
  listItems(t: string, s: string) {
    return this.#read(() => this.#listItemsCached(t, s));
  }
  getConflict(t: string, id: string) {
    return this.#read(() => this.#getConflict(t, id));
  }
  listConflicts(t: string, q: ConflictQuery) {
    return this.#read(() => this.#listConflicts(t, q));
  }
  queryEvents(t: string, q: EventQuery) {
    return this.#read(() => this.#queryEvents(t, q));
  }
  getWebhook(t: string, id: string) {
    return this.#read(() => this.#getWebhook(t, id));
  }
  listWebhooks(t: string) {
    return this.#read(() => this.#listWebhooks(t));
  }
  getDelivery(t: string, id: string) {
    return this.#read(() => this.#getDelivery(t, id));
  }
  listDeliveries(
    t: string,
    w: string,
    q: { status?: Delivery['status'] | undefined; limit: number; before_id?: string | undefined },
  ) {
    return this.#read(() => this.#listDeliveries(t, w, q));
  }

  // ---- transactions ------------------------------------------------------------------------

  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.#mutex.run(async () => {
      this.#q('BEGIN IMMEDIATE').run();
      try {
        const result = await fn(this.#txApi);
        this.#q('COMMIT').run();
        return result;
      } catch (error) {
        if (this.#db.inTransaction) this.#q('ROLLBACK').run();
        // The statements counted changes that are now undone: start the cache afresh.
        this.#itemsCache.clear();
        this.#expectedChanges = -1;
        throw error;
      }
    });
  }

  #tx(): StoreTx {
    // Inside a transaction the mutex is already held: run the statement now and hand back a
    // settled promise (a throw becomes a rejection, as the Store contract expects).
    const p = <T>(fn: () => T): Promise<T> => {
      try {
        return Promise.resolve(fn());
      } catch (error) {
        return Promise.reject(error);
      }
    };
    return {
      getItem: (t, s, k) => p(() => this.#getItem(t, s, k)),
      lockItem: (t, s, k) => p(() => this.#getItem(t, s, k)),
      getItemVersion: (t, s, k, v) => p(() => this.#getItemVersion(t, s, k, v)),
      listItemVersions: (t, s, k) => p(() => this.#listItemVersions(t, s, k)),
      listItems: (t, s) => p(() => this.#listItems(t, s)),
      getConflict: (t, id) => p(() => this.#getConflict(t, id)),
      listConflicts: (t, q) => p(() => this.#listConflicts(t, q)),
      queryEvents: (t, q) => p(() => this.#queryEvents(t, q)),
      getWebhook: (t, id) => p(() => this.#getWebhook(t, id)),
      listWebhooks: (t) => p(() => this.#listWebhooks(t)),
      getDelivery: (t, id) => p(() => this.#getDelivery(t, id)),
      listDeliveries: (t, w, q) => p(() => this.#listDeliveries(t, w, q)),
      insertItemVersion: (t, item) =>
        p(() => {
          this.#forgetSession(t, item.session_id);
          this.#w(
            `INSERT INTO state_versions (tenant_id, session_id, key, version, value, type, source, trust, sensitivity, category, metadata, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            t,
            item.session_id,
            item.key,
            item.version,
            item.value,
            item.type,
            item.source,
            item.trust,
            item.sensitivity,
            item.category,
            JSON.stringify(item.metadata),
            item.updated_at,
          );
          this.#w(
            `INSERT INTO state_items (tenant_id, session_id, key, version, status) VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (tenant_id, session_id, key) DO UPDATE SET version = excluded.version, status = excluded.status`,
          ).run(
            t,
            item.session_id,
            item.key,
            item.version,
            item.status === 'conflicted' ? 'conflicted' : 'current',
          );
        }),
      setItemStatus: (t, s, k, status) =>
        p(() => {
          this.#forgetSession(t, s);
          this.#w('UPDATE state_items SET status = ? WHERE tenant_id = ? AND session_id = ? AND key = ?').run(
            status,
            t,
            s,
            k,
          );
        }),
      insertConflict: (t, c) =>
        p(() => {
          this.#w(
            `INSERT INTO conflicts (conflict_id, tenant_id, session_id, key, status, body, resolution, created_at, resolved_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            c.conflict_id,
            t,
            c.session_id,
            c.key,
            c.status,
            JSON.stringify({ current: c.current, proposed: c.proposed }),
            c.resolution,
            c.created_at,
            c.resolved_at,
          );
        }),
      updateConflict: (t, id, patch) =>
        p(() => {
          this.#w(
            'UPDATE conflicts SET status = ?, resolution = ?, resolved_at = ? WHERE tenant_id = ? AND conflict_id = ?',
          ).run(patch.status, patch.resolution, patch.resolved_at, t, id);
        }),
      lockChainHead: (t) =>
        p(() => {
          const r = this.#q('SELECT seq, hash FROM chain_heads WHERE tenant_id = ?').get(t) as
            | Row
            | undefined;
          return r ? ({ seq: num(r['seq']), hash: str(r['hash']) } satisfies ChainHead) : null;
        }),
      appendEvent: (t, e) =>
        p(() => {
          this.#w(
            `INSERT INTO events (tenant_id, seq, event_id, type, session_id, decision_id, occurred_at, data, prev_hash, hash)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            t,
            e.seq,
            e.event_id,
            e.type,
            e.session_id,
            e.decision_id,
            e.occurred_at,
            JSON.stringify(e.data),
            e.prev_hash,
            e.hash,
          );
          this.#w(
            `INSERT INTO chain_heads (tenant_id, seq, hash) VALUES (?, ?, ?)
               ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
          ).run(t, e.seq, e.hash);
        }),
      insertDeliveries: (t, rows: NewDelivery[]) =>
        p(() => {
          const stmt = this.#w(
            `INSERT INTO deliveries (delivery_id, tenant_id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
          );
          for (const d of rows) {
            stmt.run(
              d.delivery_id,
              t,
              d.webhook_id,
              d.event_id,
              d.event_type,
              d.next_attempt_at,
              d.created_at,
              d.created_at,
            );
          }
        }),
      insertWebhook: (t, w) =>
        p(() => {
          this.#w(
            `INSERT INTO webhooks (id, tenant_id, url, events, filter, description, status, secrets, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            w.id,
            t,
            w.url,
            JSON.stringify(w.events),
            w.filter == null ? null : JSON.stringify(w.filter),
            w.description,
            w.status,
            JSON.stringify(w.secrets),
            w.created_at,
            w.updated_at,
          );
        }),
      updateWebhook: (t, id, patch) =>
        p(() => {
          const current = this.#getWebhook(t, id);
          if (!current) return;
          const next = { ...current, ...patch };
          this.#w(
            'UPDATE webhooks SET status = ?, secrets = ?, updated_at = ? WHERE tenant_id = ? AND id = ?',
          ).run(next.status, JSON.stringify(next.secrets), next.updated_at, t, id);
        }),
      deleteWebhook: (t, id) =>
        p(() => {
          const info = this.#w('DELETE FROM webhooks WHERE tenant_id = ? AND id = ?').run(t, id);
          this.#w(`DELETE FROM deliveries WHERE tenant_id = ? AND webhook_id = ? AND status = 'pending'`).run(
            t,
            id,
          );
          return info.changes > 0;
        }),
      resetDelivery: (t, id, nextAttemptAt, updatedAt) =>
        p(() => {
          this.#w(
            `UPDATE deliveries SET status = 'pending', next_attempt_at = ?, lease_until = NULL, updated_at = ?, delivered_at = NULL
               WHERE tenant_id = ? AND delivery_id = ?`,
          ).run(nextAttemptAt, updatedAt, t, id);
        }),
    };
  }

  // ---- keys --------------------------------------------------------------------------------

  insertApiKey(k: StoredApiKey): Promise<void> {
    return this.#read(() => {
      this.#w(
        `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, scopes, sources, created_at, revoked_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...apiKeyValues(k));
    });
  }

  insertFirstApiKey(k: StoredApiKey): Promise<boolean> {
    return this.#read(
      () =>
        this.#q(
          `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, scopes, sources, created_at, revoked_at)
           SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM api_keys)`,
        ).run(...apiKeyValues(k)).changes > 0,
    );
  }

  findApiKeyByHash(hash: string): Promise<StoredApiKey | null> {
    return this.#read(() => {
      const r = this.#q('SELECT * FROM api_keys WHERE hash = ?').get(hash) as Row | undefined;
      return r ? rowToKey(r) : null;
    });
  }

  listApiKeys(tenantId?: string): Promise<StoredApiKey[]> {
    return this.#read(() =>
      (tenantId === undefined
        ? (this.#q('SELECT * FROM api_keys ORDER BY id').all() as Row[])
        : (this.#q('SELECT * FROM api_keys WHERE tenant_id = ? ORDER BY id').all(tenantId) as Row[])
      ).map(rowToKey),
    );
  }

  revokeApiKey(keyId: string, at: string): Promise<boolean> {
    return this.#read(
      () =>
        this.#w('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(at, keyId)
          .changes > 0,
    );
  }

  countApiKeys(): Promise<number> {
    return this.#read(() => num((this.#q('SELECT count(*) AS n FROM api_keys').get() as Row)['n']));
  }

  // ---- outbox ------------------------------------------------------------------------------

  claimDueDeliveries(options: {
    now: string;
    leaseUntil: string;
    limit: number;
  }): Promise<ClaimedDelivery[]> {
    return this.#read(() =>
      this.#db.transaction(() => {
        const rows = this.#q(
          `UPDATE deliveries SET lease_until = ?
           WHERE delivery_id IN (
             SELECT d.delivery_id FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
             WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
               AND w.status = 'active'
             ORDER BY d.next_attempt_at LIMIT ?)
           RETURNING *`,
        ).all(options.leaseUntil, options.now, options.now, options.limit) as Row[];
        this.#expectedChanges += rows.length; // one changed row per returned row (see #itemsCache)
        return rows.map((r) => {
          const tenantId = str(r['tenant_id']);
          const webhook = this.#getWebhook(tenantId, str(r['webhook_id']));
          const ev = this.#q('SELECT * FROM events WHERE event_id = ?').get(str(r['event_id'])) as Row;
          const event = withoutDecision(rowToEvent(ev));
          return { tenant_id: tenantId, delivery: rowToDelivery(r), webhook: webhook!, event };
        });
      })(),
    );
  }

  recordDeliveryAttempt(tenantId: string, deliveryId: string, a: DeliveryAttempt): Promise<void> {
    return this.#read(() => {
      this.#w(
        `UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?, last_error = ?,
           delivered_at = ?, updated_at = ?, lease_until = NULL
         WHERE tenant_id = ? AND delivery_id = ?`,
      ).run(
        a.status,
        a.attempts,
        a.next_attempt_at,
        a.last_status_code,
        a.last_error,
        a.delivered_at,
        a.updated_at,
        tenantId,
        deliveryId,
      );
    });
  }

  disableWebhook(tenantId: string, webhookId: string, at: string): Promise<void> {
    return this.#read(() => {
      this.#w(`UPDATE webhooks SET status = 'disabled', updated_at = ? WHERE tenant_id = ? AND id = ?`).run(
        at,
        tenantId,
        webhookId,
      );
    });
  }

  nextDueAt(): Promise<string | null> {
    return this.#read(() => {
      const r = this.#q(
        `SELECT min(next_attempt_at) AS t FROM deliveries WHERE status = 'pending'`,
      ).get() as Row;
      return strOrNull(r['t']);
    });
  }

  // ---- misc --------------------------------------------------------------------------------

  async *scanEvents(tenantId: string, options: { pageSize?: number } = {}): AsyncIterable<HistoryEvent[]> {
    const pageSize = options.pageSize ?? 1000;
    let after = 0;
    for (;;) {
      const page = await this.#read(
        () =>
          this.#q('SELECT * FROM events WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?').all(
            tenantId,
            after,
            pageSize,
          ) as Row[],
      );
      if (page.length === 0) return;
      const events = page.map((r) => {
        return withoutDecision(rowToEvent(r));
      });
      yield events;
      after = events[events.length - 1]!.seq;
    }
  }

  async *dumpRows(options: { pageSize?: number } = {}): AsyncIterable<DumpRecord> {
    const pageSize = options.pageSize ?? 1000;
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
    this.#db.exec('BEGIN');
    try {
      for (const table of STORE_TABLES) {
        const keys = STORE_TABLE_KEYS[table];
        const order = keys.join(', ');
        let after: unknown[] | undefined;
        for (;;) {
          const where = after ? `WHERE (${order}) > (${keys.map(() => '?').join(', ')})` : '';
          const rows = this.#q(`SELECT * FROM ${table} ${where} ORDER BY ${order} LIMIT ?`).all(
            ...(after ?? []),
            pageSize,
          ) as Array<Record<string, string | number | null>>;
          for (const row of rows) yield { table, row };
          if (rows.length < pageSize) break;
          const last = rows[rows.length - 1]!;
          after = keys.map((k) => last[k]);
        }
      }
    } finally {
      if (this.#db.inTransaction) this.#db.exec('COMMIT');
      release();
      await held;
    }
  }

  loadRows(rows: AsyncIterable<DumpRecord>): Promise<number> {
    const columns = new Map<string, Set<string>>(
      STORE_TABLES.map((t) => [
        t,
        new Set((this.#db.pragma(`table_info(${t})`) as Row[]).map((c) => str(c['name']))),
      ]),
    );
    // Streams the dump inside one write transaction, holding the connection: all or nothing.
    return this.#mutex.run(async () => {
      this.#db.exec('BEGIN IMMEDIATE');
      try {
        const used = this.#q(
          'SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM api_keys) AS n',
        ).get() as Row;
        if (num(used['n']) > 0) {
          throw new GatehouseError(
            'invalid_request',
            'The target database is not empty: load a dump only into a new one.',
          );
        }
        let count = 0;
        for await (const { table, row } of rows) {
          const known = columns.get(table);
          const cols = Object.keys(row);
          if (!known) throw new GatehouseError('invalid_request', `Unknown table '${table}' in the dump.`);
          const unknown = cols.filter((c) => !known.has(c));
          if (unknown.length > 0) {
            throw new GatehouseError(
              'invalid_request',
              `Unknown column(s) ${unknown.join(', ')} of ${table} in the dump.`,
            );
          }
          this.#q(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`).run(
            ...cols.map((c) => row[c]),
          );
          count += 1;
        }
        this.#db.exec('COMMIT');
        return count;
      } catch (error) {
        if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
        throw error;
      }
    });
  }

  listTenants(): Promise<string[]> {
    return this.#read(() =>
      (this.#q('SELECT tenant_id FROM chain_heads ORDER BY tenant_id').all() as Row[]).map((r) =>
        str(r['tenant_id']),
      ),
    );
  }

  ping(): Promise<void> {
    return this.#read(() => {
      this.#q('SELECT 1').get();
    });
  }

  close(): Promise<void> {
    return this.#mutex.run(() => {
      if (this.#closed) return;
      this.#closed = true;
      this.#db.close();
    });
  }
}
