/**
 * The Store for many instances on one database: PostgreSQL through a `pg.Pool`. Semantics mirror
 * the SQLite store row for row; what SQLite gets from its single writer, this store gets from
 * locks taken inside each transaction (READ COMMITTED):
 * - an item is locked with a transaction-scoped advisory lock on (schema, tenant, session, key),
 *   then its row is read `FOR UPDATE`; the advisory lock also covers the first write, when there
 *   is no row yet to lock;
 * - a tenant's chain head is locked by an upsert that takes the row lock and returns the newest
 *   committed head, so appends of one tenant serialise and `seq` stays gap-free;
 * - webhook deliveries are claimed with `FOR UPDATE SKIP LOCKED` and a lease;
 * - a dump reads one REPEATABLE READ snapshot; a load locks the history tables and runs in one
 *   transaction.
 */
import pg from 'pg';
import {
  type ChainHead,
  type ClaimedDelivery,
  type ConflictQuery,
  type DeliveryAttempt,
  type DumpRecord,
  type EventQuery,
  GatehouseError,
  type HistoryEvent,
  type NewDelivery,
  STORE_TABLE_KEYS,
  STORE_TABLES,
  type Store,
  type StoreReader,
  type StoreTx,
} from '../../src/index.js';
import {
  apiKeyValues,
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
import { POSTGRES_MIGRATIONS } from './migrations.js';

/** Options for {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** A libpq-style URL: `postgres://user:password@host:5432/database`. */
  connectionString: string;
  /**
   * Schema holding Gatehouse's tables; created when missing. Lower-case letters, digits and `_`,
   * starting with a letter or `_`, at most 63 characters. Every pooled connection runs
   * `SET search_path` to it when it opens, so a session-level pooler (or none) is required:
   * PgBouncer in transaction mode would hand the setting to other clients.
   * @default 'public'
   */
  schema?: string;
  /** Connection pool settings. */
  pool?: {
    /**
     * Most connections open at once.
     * @default 10
     */
    max?: number;
    /**
     * An idle connection is closed after this long.
     * @default 10000
     */
    idleTimeoutMillis?: number;
    /**
     * Waiting for a connection (new or from the pool) fails after this long.
     * @default 10000
     */
    connectionTimeoutMillis?: number;
  };
  /**
   * Apply pending migrations on open. Turn off when the application role may not run DDL and a
   * deploy step migrates instead (by opening the store once with a role that may).
   * @default true
   */
  migrate?: boolean;
  /**
   * Called with errors of idle pooled connections (a server restart, a dropped socket). The pool
   * replaces such connections by itself; without this hook they are ignored rather than crash
   * the process as an unhandled `'error'` event would.
   */
  onError?: (error: Error) => void;
}

/** The PostgreSQL Store, with its pool for tools that need raw SQL (export, tests). */
export interface PostgresStore extends Store {
  /** The connection pool. Writing through it directly bypasses every rule of the core. */
  readonly pool: pg.Pool;
  /** The schema holding the tables. */
  readonly schema: string;
}

type Run = (text: string, values?: unknown[]) => Promise<pg.QueryResult<Row>>;

/** Advisory-lock classes (first key of the two-key form), so Gatehouse's locks never meet others'. */
const MIGRATION_LOCK_CLASS = 0x47480001;
const ITEM_LOCK_CLASS = 0x47480002;
const PING_TIMEOUT_MS = 5000;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Type OIDs of int2, int4 and int8: dumped as numbers, whatever the driver hands back. */
const INTEGER_TYPES = new Set([20, 21, 23]);
/** Rows per INSERT when loading a dump (PostgreSQL allows 65535 parameters per statement). */
const LOAD_BATCH_ROWS = 500;

/** A statement with `$n` placeholders numbered as conditions are added. */
class Where {
  readonly parts: string[] = [];
  readonly values: unknown[] = [];
  add(condition: (placeholder: string) => string, value: unknown): this {
    this.values.push(value);
    this.parts.push(condition(`$${this.values.length}`));
    return this;
  }
  next(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
  get sql(): string {
    return this.parts.join(' AND ');
  }
}

// The version row joined with its item; `status` is the item's when this is the current version.
const ITEM_VERSION_SELECT = `
  SELECT v.*, CASE WHEN i.version = v.version THEN i.status ELSE 'superseded' END AS status
  FROM state_versions v
  LEFT JOIN state_items i ON i.tenant_id = v.tenant_id AND i.session_id = v.session_id AND i.key = v.key`;

const CURRENT_ITEM_SELECT = `
  SELECT v.*, i.status FROM state_items i
  JOIN state_versions v ON v.tenant_id = i.tenant_id AND v.session_id = i.session_id AND v.key = i.key AND v.version = i.version`;

/** The reads, over a pool (committed data) or a transaction's client (its own writes too). */
function createReader(run: Run): StoreReader {
  const first = async (text: string, values: unknown[]): Promise<Row | undefined> =>
    (await run(text, values)).rows[0];
  const all = async (text: string, values: unknown[]): Promise<Row[]> => (await run(text, values)).rows;

  return {
    async getItem(t, s, k) {
      const r = await first(
        `${CURRENT_ITEM_SELECT} WHERE i.tenant_id = $1 AND i.session_id = $2 AND i.key = $3`,
        [t, s, k],
      );
      return r ? rowToItem(r) : null;
    },
    async getItemVersion(t, s, k, version) {
      const r = await first(
        `${ITEM_VERSION_SELECT} WHERE v.tenant_id = $1 AND v.session_id = $2 AND v.key = $3 AND v.version = $4`,
        [t, s, k, version],
      );
      return r ? rowToItem(r) : null;
    },
    async listItemVersions(t, s, k) {
      const rows = await all(
        `${ITEM_VERSION_SELECT} WHERE v.tenant_id = $1 AND v.session_id = $2 AND v.key = $3 ORDER BY v.version`,
        [t, s, k],
      );
      return rows.map((r) => rowToItem(r));
    },
    async listItems(t, s) {
      const rows = await all(
        `${CURRENT_ITEM_SELECT} WHERE i.tenant_id = $1 AND i.session_id = $2 ORDER BY i.key`,
        [t, s],
      );
      return rows.map((r) => rowToItem(r));
    },
    async getConflict(t, id) {
      const r = await first('SELECT * FROM conflicts WHERE tenant_id = $1 AND conflict_id = $2', [t, id]);
      return r ? rowToConflict(r) : null;
    },
    async listConflicts(t, query: ConflictQuery) {
      const w = new Where().add((p) => `tenant_id = ${p}`, t);
      if (query.session_id !== undefined) w.add((p) => `session_id = ${p}`, query.session_id);
      if (query.key !== undefined) w.add((p) => `key = ${p}`, query.key);
      if (query.status !== undefined) w.add((p) => `status = ${p}`, query.status);
      const rows = await all(
        `SELECT * FROM conflicts WHERE ${w.sql} ORDER BY conflict_id DESC LIMIT 500`,
        w.values,
      );
      return rows.map(rowToConflict);
    },
    async queryEvents(t, query: EventQuery) {
      const w = new Where().add((p) => `tenant_id = ${p}`, t);
      if (query.session_id !== undefined) w.add((p) => `session_id = ${p}`, query.session_id);
      if (query.type !== undefined) w.add((p) => `type = ${p}`, query.type);
      if (query.decision_id !== undefined) w.add((p) => `decision_id = ${p}`, query.decision_id);
      if (query.after_seq !== undefined) {
        w.add((p) => (query.order === 'asc' ? `seq > ${p}` : `seq < ${p}`), query.after_seq);
      }
      const limit = w.next(query.limit);
      const rows = await all(
        `SELECT * FROM events WHERE ${w.sql} ORDER BY seq ${query.order === 'asc' ? 'ASC' : 'DESC'} LIMIT ${limit}`,
        w.values,
      );
      return rows.map(rowToEvent);
    },
    async getWebhook(t, id) {
      const r = await first('SELECT * FROM webhooks WHERE tenant_id = $1 AND id = $2', [t, id]);
      return r ? rowToWebhook(r) : null;
    },
    async listWebhooks(t) {
      return (await all('SELECT * FROM webhooks WHERE tenant_id = $1 ORDER BY id', [t])).map(rowToWebhook);
    },
    async getDelivery(t, id) {
      const r = await first('SELECT * FROM deliveries WHERE tenant_id = $1 AND delivery_id = $2', [t, id]);
      return r ? rowToDelivery(r) : null;
    },
    async listDeliveries(t, webhookId, query) {
      const w = new Where().add((p) => `tenant_id = ${p}`, t).add((p) => `webhook_id = ${p}`, webhookId);
      if (query.status !== undefined) w.add((p) => `status = ${p}`, query.status);
      if (query.before_id !== undefined) w.add((p) => `delivery_id < ${p}`, query.before_id);
      const limit = w.next(query.limit);
      const rows = await all(
        `SELECT * FROM deliveries WHERE ${w.sql} ORDER BY delivery_id DESC LIMIT ${limit}`,
        w.values,
      );
      return rows.map(rowToDelivery);
    },
  };
}

/** The writes of one transaction, bound to its client. */
function createTx(run: Run, schema: string): StoreTx {
  const reader = createReader(run);
  return {
    ...reader,
    async lockItem(t, s, k) {
      // Taken before reading, so that first writers of a key (no row to lock yet) serialise too;
      // the read below is a new statement, so it sees whatever the previous holder committed.
      await run(`SELECT pg_advisory_xact_lock(${ITEM_LOCK_CLASS}, hashtext($1::text))`, [
        JSON.stringify([schema, t, s, k]),
      ]);
      const r = (
        await run(
          `${CURRENT_ITEM_SELECT} WHERE i.tenant_id = $1 AND i.session_id = $2 AND i.key = $3 FOR UPDATE OF i`,
          [t, s, k],
        )
      ).rows[0];
      return r ? rowToItem(r) : null;
    },
    async insertItemVersion(t, item) {
      await run(
        `WITH inserted AS (
           INSERT INTO state_versions (tenant_id, session_id, key, version, value, type, source, trust, sensitivity, category, metadata, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12))
         INSERT INTO state_items (tenant_id, session_id, key, version, status) VALUES ($1, $2, $3, $4, $13)
         ON CONFLICT (tenant_id, session_id, key) DO UPDATE SET version = excluded.version, status = excluded.status`,
        [
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
          item.status === 'conflicted' ? 'conflicted' : 'current',
        ],
      );
    },
    async setItemStatus(t, s, k, status) {
      await run('UPDATE state_items SET status = $1 WHERE tenant_id = $2 AND session_id = $3 AND key = $4', [
        status,
        t,
        s,
        k,
      ]);
    },
    async insertConflict(t, c) {
      await run(
        `INSERT INTO conflicts (conflict_id, tenant_id, session_id, key, status, body, resolution, created_at, resolved_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          c.conflict_id,
          t,
          c.session_id,
          c.key,
          c.status,
          JSON.stringify({ current: c.current, proposed: c.proposed }),
          c.resolution,
          c.created_at,
          c.resolved_at,
        ],
      );
    },
    async updateConflict(t, id, patch) {
      await run(
        'UPDATE conflicts SET status = $1, resolution = $2, resolved_at = $3 WHERE tenant_id = $4 AND conflict_id = $5',
        [patch.status, patch.resolution, patch.resolved_at, t, id],
      );
    },
    async lockChainHead(t) {
      // One statement: inserts a seq-0 placeholder on the tenant's first append, otherwise takes
      // the row lock. A concurrent appender waits here and then sees the head as last committed.
      const r = (
        await run(
          `INSERT INTO chain_heads (tenant_id, seq, hash) VALUES ($1, 0, '')
           ON CONFLICT (tenant_id) DO UPDATE SET seq = chain_heads.seq
           RETURNING seq, hash`,
          [t],
        )
      ).rows[0]!;
      const seq = num(r['seq']);
      return seq === 0 ? null : ({ seq, hash: str(r['hash']) } satisfies ChainHead);
    },
    async appendEvent(t, e) {
      await run(
        `WITH appended AS (
           INSERT INTO events (tenant_id, seq, event_id, type, session_id, decision_id, occurred_at, data, prev_hash, hash)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10))
         INSERT INTO chain_heads (tenant_id, seq, hash) VALUES ($1, $2, $10)
         ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
        [
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
        ],
      );
    },
    async insertDeliveries(t, rows: NewDelivery[]) {
      if (rows.length === 0) return;
      const values: unknown[] = [t];
      const tuples = rows.map((d) => {
        const at = values.length;
        values.push(d.delivery_id, d.webhook_id, d.event_id, d.event_type, d.next_attempt_at, d.created_at);
        return `($${at + 1}, $1, $${at + 2}, $${at + 3}, $${at + 4}, 'pending', 0, $${at + 5}, $${at + 6}, $${at + 6})`;
      });
      await run(
        `INSERT INTO deliveries (delivery_id, tenant_id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at, updated_at)
         VALUES ${tuples.join(', ')}`,
        values,
      );
    },
    async insertWebhook(t, w) {
      await run(
        `INSERT INTO webhooks (id, tenant_id, url, events, filter, description, status, secrets, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
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
        ],
      );
    },
    async updateWebhook(t, id, patch) {
      await run(
        `UPDATE webhooks SET status = COALESCE($1, status), secrets = COALESCE($2, secrets), updated_at = COALESCE($3, updated_at)
         WHERE tenant_id = $4 AND id = $5`,
        [
          patch.status ?? null,
          patch.secrets === undefined ? null : JSON.stringify(patch.secrets),
          patch.updated_at ?? null,
          t,
          id,
        ],
      );
    },
    async deleteWebhook(t, id) {
      const result = await run(
        `WITH pending AS (DELETE FROM deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND status = 'pending')
         DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2`,
        [t, id],
      );
      return (result.rowCount ?? 0) > 0;
    },
    async resetDelivery(t, id, nextAttemptAt, updatedAt) {
      await run(
        `UPDATE deliveries SET status = 'pending', next_attempt_at = $1, lease_until = NULL, updated_at = $2, delivered_at = NULL
         WHERE tenant_id = $3 AND delivery_id = $4`,
        [nextAttemptAt, updatedAt, t, id],
      );
    },
  };
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Creates the schema if needed and applies pending migrations, serialised across instances. */
async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  await inTransaction(pool, 'BEGIN', async (client) => {
    // Two instances starting at once: the second waits here, then finds everything applied.
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_CLASS}, hashtext($1::text))`, [schema]);
    // CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when the schema exists; look first.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)',
    );
    const applied = new Set(
      (await client.query<Row>('SELECT version FROM schema_migrations')).rows.map((r) => num(r['version'])),
    );
    for (const m of POSTGRES_MIGRATIONS) {
      if (applied.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        m.version,
        m.name,
        new Date().toISOString(),
      ]);
    }
  });
}

/** Runs `fn` on one pooled connection between `begin` and COMMIT (ROLLBACK when it throws). */
async function inTransaction<T>(
  pool: pg.Pool,
  begin: string,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin);
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((e: Error) => {
        broken = e;
      });
      throw error;
    }
  } finally {
    // A connection whose ROLLBACK failed is in an unknown state: destroy it, don't pool it.
    client.release(broken);
  }
}

/** A row as dumped: integer columns as numbers (pg hands int8 back as a string), the rest as is. */
function dumpRow(row: Row, integers: ReadonlySet<string>): Record<string, string | number | null> {
  const out: Record<string, string | number | null> = {};
  for (const [column, value] of Object.entries(row)) {
    out[column] = value == null ? null : integers.has(column) ? Number(value) : (value as string);
  }
  return out;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Opens a PostgreSQL store: creates the pool, then (unless `migrate: false`) creates the schema
 * and applies pending migrations under an advisory lock, so instances may start at once.
 * @throws {GatehouseError} `invalid_request` when `schema` is not a plain lower-case identifier.
 * @throws the driver's error when the database is unreachable or a migration fails (the pool is closed).
 * @example
 * const store = await openPostgresStore({ connectionString: process.env.DATABASE_URL! });
 * const gh = createGatehouse({ store });
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = options.schema ?? 'public';
  if (!SCHEMA_NAME.test(schema)) {
    throw new GatehouseError(
      'invalid_request',
      `PostgreSQL schema '${schema}' must match ${SCHEMA_NAME.source} (lower-case letters, digits, _).`,
      { errors: [{ path: 'schema', message: `must match ${SCHEMA_NAME.source}` }] },
    );
  }
  // Not the startup `options` parameter: an `options` in the URL would silently replace it.
  // pg-pool awaits `onConnect` before it hands a new client out, so the schema is set first
  // (a 'connect' listener would race the first query; pg warns about that).
  const setSearchPath = `SET search_path TO ${quoteIdent(schema)}`;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.pool?.max ?? 10,
    idleTimeoutMillis: options.pool?.idleTimeoutMillis ?? 10_000,
    connectionTimeoutMillis: options.pool?.connectionTimeoutMillis ?? 10_000,
    onConnect: async (client: pg.ClientBase) => {
      await client.query(setSearchPath);
    },
  });
  const onError = options.onError;
  pool.on('error', (error) => onError?.(error));
  if (options.migrate ?? true) {
    try {
      await migrate(pool, schema);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }
  return createPostgresStore(pool, schema);
}

function createPostgresStore(pool: pg.Pool, schema: string): PostgresStore {
  const run: Run = (text, values) => pool.query<Row>(text, values);
  let closing: Promise<void> | undefined;

  return {
    kind: 'postgres',
    pool,
    schema,
    ...createReader(run),

    transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
      return inTransaction(pool, 'BEGIN', async (client) => {
        let finished = false;
        // A tx used after its transaction ended would run on a connection that is back in the pool.
        const txRun: Run = (text, values) => {
          if (finished) return Promise.reject(new Error('This transaction has already ended.'));
          return client.query<Row>(text, values);
        };
        try {
          return await fn(createTx(txRun, schema));
        } finally {
          finished = true;
        }
      });
    },

    async insertApiKey(k) {
      await run(
        `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, scopes, sources, created_at, revoked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        apiKeyValues(k),
      );
    },
    async findApiKeyByHash(hash) {
      const r = (await run('SELECT * FROM api_keys WHERE hash = $1', [hash])).rows[0];
      return r ? rowToKey(r) : null;
    },
    async listApiKeys(tenantId) {
      const result =
        tenantId === undefined
          ? await run('SELECT * FROM api_keys ORDER BY id')
          : await run('SELECT * FROM api_keys WHERE tenant_id = $1 ORDER BY id', [tenantId]);
      return result.rows.map(rowToKey);
    },
    async revokeApiKey(keyId, at) {
      const result = await run('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
        at,
        keyId,
      ]);
      return (result.rowCount ?? 0) > 0;
    },
    async insertFirstApiKey(k) {
      // The advisory lock makes "no key yet" and the insert one step across instances.
      return inTransaction(pool, 'BEGIN', async (client) => {
        await client.query(
          `SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_CLASS}, hashtext('first api key'))`,
        );
        const inserted = await client.query(
          `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, scopes, sources, created_at, revoked_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE NOT EXISTS (SELECT 1 FROM api_keys)`,
          apiKeyValues(k),
        );
        return (inserted.rowCount ?? 0) > 0;
      });
    },

    async countApiKeys() {
      return num((await run('SELECT count(*) AS n FROM api_keys')).rows[0]!['n']);
    },

    async claimDueDeliveries(options: {
      now: string;
      leaseUntil: string;
      limit: number;
    }): Promise<ClaimedDelivery[]> {
      // SKIP LOCKED: dispatchers on other instances pass over rows being claimed right now; the
      // lease then keeps them away until it expires. A CTE with a locking clause runs once.
      const claimed = (
        await run(
          `WITH due AS (
             SELECT d.delivery_id FROM deliveries d
             JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
             WHERE d.status = 'pending' AND d.next_attempt_at <= $2 AND (d.lease_until IS NULL OR d.lease_until <= $2)
               AND w.status = 'active'
             ORDER BY d.next_attempt_at
             LIMIT $3
             FOR UPDATE OF d SKIP LOCKED)
           UPDATE deliveries SET lease_until = $1 FROM due WHERE deliveries.delivery_id = due.delivery_id
           RETURNING deliveries.*`,
          [options.leaseUntil, options.now, options.limit],
        )
      ).rows;
      if (claimed.length === 0) return [];
      const webhookIds = [...new Set(claimed.map((r) => str(r['webhook_id'])))];
      const eventIds = claimed.map((r) => str(r['event_id']));
      const [webhooks, events] = await Promise.all([
        run('SELECT * FROM webhooks WHERE id = ANY($1::text[])', [webhookIds]),
        run('SELECT * FROM events WHERE event_id = ANY($1::text[])', [eventIds]),
      ]);
      const webhookById = new Map(webhooks.rows.map((r) => [`${str(r['tenant_id'])}\n${str(r['id'])}`, r]));
      const eventById = new Map(events.rows.map((r) => [`${str(r['tenant_id'])}\n${str(r['event_id'])}`, r]));
      const result: ClaimedDelivery[] = [];
      // RETURNING has no order; hand them out due-first, like the claim chose them.
      const byDue = (r: Row) => `${str(r['next_attempt_at'])}\n${str(r['delivery_id'])}`;
      claimed.sort((a, b) => (byDue(a) < byDue(b) ? -1 : byDue(a) > byDue(b) ? 1 : 0));
      for (const r of claimed) {
        const tenantId = str(r['tenant_id']);
        const webhook = webhookById.get(`${tenantId}\n${str(r['webhook_id'])}`);
        const event = eventById.get(`${tenantId}\n${str(r['event_id'])}`);
        // Deleted between the claim and this read: its pending deliveries are gone with it.
        if (!webhook || !event) continue;
        result.push({
          tenant_id: tenantId,
          delivery: rowToDelivery(r),
          webhook: rowToWebhook(webhook),
          event: withoutDecision(rowToEvent(event)),
        });
      }
      return result;
    },
    async recordDeliveryAttempt(tenantId, deliveryId, a: DeliveryAttempt) {
      await run(
        `UPDATE deliveries SET status = $1, attempts = $2, next_attempt_at = $3, last_status_code = $4, last_error = $5,
           delivered_at = $6, updated_at = $7, lease_until = NULL
         WHERE tenant_id = $8 AND delivery_id = $9`,
        [
          a.status,
          a.attempts,
          a.next_attempt_at,
          a.last_status_code,
          a.last_error,
          a.delivered_at,
          a.updated_at,
          tenantId,
          deliveryId,
        ],
      );
    },
    async disableWebhook(tenantId, webhookId, at) {
      await run(`UPDATE webhooks SET status = 'disabled', updated_at = $1 WHERE tenant_id = $2 AND id = $3`, [
        at,
        tenantId,
        webhookId,
      ]);
    },
    async nextDueAt() {
      const r = (await run(`SELECT min(next_attempt_at) AS t FROM deliveries WHERE status = 'pending'`))
        .rows[0]!;
      return strOrNull(r['t']);
    },

    async *scanEvents(tenantId: string, options: { pageSize?: number } = {}): AsyncIterable<HistoryEvent[]> {
      const pageSize = options.pageSize ?? 1000;
      let after = 0;
      for (;;) {
        const page = (
          await run('SELECT * FROM events WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [
            tenantId,
            after,
            pageSize,
          ])
        ).rows;
        if (page.length === 0) return;
        const events = page.map((r) => withoutDecision(rowToEvent(r)));
        yield events;
        after = events[events.length - 1]!.seq;
      }
    },
    async *dumpRows(options: { pageSize?: number } = {}): AsyncIterable<DumpRecord> {
      const pageSize = options.pageSize ?? 1000;
      // One snapshot for the whole dump: other instances keep writing, and a dump whose chain
      // heads ran ahead of its events would not load into a working store.
      const client = await pool.connect();
      let open = false;
      let broken: Error | undefined;
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        open = true;
        for (const table of STORE_TABLES) {
          const keys = STORE_TABLE_KEYS[table];
          const order = keys.join(', ');
          let after: unknown[] | undefined;
          for (;;) {
            const values = [...(after ?? []), pageSize];
            const where = after ? `WHERE (${order}) > (${keys.map((_, i) => `$${i + 1}`).join(', ')})` : '';
            const result = await client.query<Row>(
              `SELECT * FROM ${table} ${where} ORDER BY ${order} LIMIT $${values.length}`,
              values,
            );
            const integers = new Set(
              result.fields.filter((f) => INTEGER_TYPES.has(f.dataTypeID)).map((f) => f.name),
            );
            for (const row of result.rows) yield { table, row: dumpRow(row, integers) };
            if (result.rows.length < pageSize) break;
            const last = result.rows[result.rows.length - 1]!;
            after = keys.map((k) => last[k]);
          }
        }
        open = false;
        await client.query('COMMIT').catch((e: Error) => {
          broken = e;
          throw e;
        });
      } finally {
        // Also reached when the consumer stops early (`break` out of `for await`) or a read fails.
        if (open) {
          await client.query('ROLLBACK').catch((e: Error) => {
            broken = e;
          });
        }
        client.release(broken);
      }
    },
    loadRows(rows: AsyncIterable<DumpRecord>): Promise<number> {
      return inTransaction(pool, 'BEGIN', async (client) => {
        // Serialises against writers and against another load into the same schema: the second
        // load waits, then finds the store used.
        await client.query('LOCK TABLE events, api_keys, chain_heads IN SHARE ROW EXCLUSIVE MODE');
        const used = await client.query<Row>(
          'SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM api_keys) AS n',
        );
        if (num(used.rows[0]!['n']) > 0) {
          throw new GatehouseError(
            'invalid_request',
            'The target database is not empty: load a dump only into a new one.',
          );
        }
        const columns = new Map<string, Set<string>>();
        const known = await client.query<Row>(
          'SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1',
          [schema],
        );
        for (const r of known.rows) {
          const table = str(r['table_name']);
          if (!columns.has(table)) columns.set(table, new Set());
          columns.get(table)!.add(str(r['column_name']));
        }
        const tables = new Set<string>(STORE_TABLES);
        let count = 0;
        let batch:
          | { table: string; cols: string[]; signature: string; rows: DumpRecord['row'][] }
          | undefined;
        const flush = async () => {
          if (!batch || batch.rows.length === 0) return;
          const { table, cols } = batch;
          const values: unknown[] = [];
          const tuples = batch.rows.map((row) => {
            const start = values.length;
            for (const c of cols) values.push(row[c] ?? null);
            return `(${cols.map((_, i) => `$${start + i + 1}`).join(', ')})`;
          });
          await client.query(
            `INSERT INTO ${quoteIdent(table)} (${cols.map(quoteIdent).join(', ')}) VALUES ${tuples.join(', ')}`,
            values,
          );
          count += batch.rows.length;
          batch.rows = [];
        };
        for await (const { table, row } of rows) {
          const cols = Object.keys(row);
          const signature = `${table}(${cols.join(',')})`;
          if (batch?.signature !== signature) {
            // Table and column names go into the SQL text: only known ones get that far.
            const allowed = columns.get(table);
            if (!tables.has(table) || !allowed) {
              throw new GatehouseError('invalid_request', `Unknown table '${table}' in the dump.`);
            }
            const unknown = cols.filter((c) => !allowed.has(c));
            if (unknown.length > 0) {
              throw new GatehouseError(
                'invalid_request',
                `Unknown column(s) ${unknown.join(', ')} of ${table} in the dump.`,
              );
            }
            await flush();
            batch = { table, cols, signature, rows: [] };
          }
          batch.rows.push(row);
          if (batch.rows.length >= LOAD_BATCH_ROWS) await flush();
        }
        await flush();
        return count;
      });
    },
    async listTenants() {
      // seq > 0: a head still at its placeholder belongs to a tenant without events.
      const rows = (await run('SELECT tenant_id FROM chain_heads WHERE seq > 0 ORDER BY tenant_id')).rows;
      return rows.map((r) => str(r['tenant_id']));
    },

    async ping() {
      try {
        await withTimeout(run('SELECT 1'), PING_TIMEOUT_MS, `no answer within ${PING_TIMEOUT_MS} ms`);
      } catch (error) {
        throw new GatehouseError('unavailable', 'PostgreSQL is unreachable.', { cause: error });
      }
    },
    close() {
      closing ??= pool.end();
      return closing;
    },
  };
}
