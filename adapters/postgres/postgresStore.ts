/**
 * The Store for many instances on one database: PostgreSQL through a `pg` pool. The SQL is the
 * SQLite store's (adapters/sql/statements.ts, with ./dialect.ts); what SQLite gets from its single
 * writer, this store gets from locks taken inside each transaction (READ COMMITTED):
 * - an item is locked with a transaction-scoped advisory lock on (schema, tenant, session, key),
 *   then its row is read `FOR UPDATE`; the advisory lock also covers the first write, when there
 *   is no row yet to lock. Items asked for together (a batch's declared items) are locked and
 *   read, with their open conflicts, in one statement of each kind (./itemReads.ts);
 * - a tenant's chain head is locked by an upsert that takes the row lock and returns the newest
 *   committed head, so appends of one tenant serialise and `seq` stays gap-free;
 * - transactions that declare their tenant are group-committed (adapters/sql/groupCommit.ts): one
 *   batch at a time per store, one database transaction per batch that locks its tenants' chain
 *   heads first, in tenant order, then runs each caller in a savepoint. The chain-head lock is
 *   taken and the COMMIT paid once per batch, and item locks are only ever taken under the
 *   tenant's chain-head lock, so batches of several instances cannot deadlock. The batch's
 *   connection pipelines (./pipelinedBatch.ts): a batch of evaluations, or of state writes that
 *   read nothing but their declared items and conflicts, is two round trips;
 * - statements whose result columns are spelled out are prepared once per connection;
 * - a session's items are remembered and handed out again while a stamp read in their place
 *   says they are unchanged (./sessionItems.ts);
 * - webhook deliveries are claimed with `FOR UPDATE SKIP LOCKED` and a lease;
 * - API keys found by hash are cached while a LISTEN connection hears every revocation of the
 *   schema (./keyRevocations.ts); a revocation returns once its NOTIFY came back to this store;
 * - a dump reads one REPEATABLE READ snapshot; a load locks the history tables and runs in one
 *   transaction.
 */
import {
  claimPageSize,
  createIdGenerator,
  type DumpRecord,
  fairShare,
  GatehouseError,
  type Store,
  type StoreTx,
  systemRandomBytes,
  TenantWalk,
  type TransactionOptions,
} from '../../src/index.js';
import { ApiKeyCache } from '../sql/apiKeyCache.js';
import { numberPlaceholders, type Statement } from '../sql/dialect.js';
import { assertEmptyForLoad, dumpTables, loadRecords } from '../sql/dumpLoad.js';
import type { SqlExecutor } from '../sql/executor.js';
import { type BatchMember, GroupCommitQueue, runBatch } from '../sql/groupCommit.js';
import {
  TenantUpgrade,
  UPGRADE_FIRST_EVENT,
  UPGRADE_PAGE,
  UPGRADE_PAGE_SIZE,
  UPGRADE_TENANTS,
} from '../sql/historyUpgrade.js';
import { apiKeyValues, num, type Row, str } from '../sql/rows.js';
import * as sql from '../sql/statements.js';
import type { DeferredWrite } from '../sql/storeOperations.js';
import * as operations from '../sql/storeOperations.js';
import { reportDisconnectsAsUnavailable } from './connectionErrors.js';
import { dueFirst, dueOfNextTenants, insertItemVersions, LEASE_CHOSEN, postgresDialect } from './dialect.js';
import { ItemReads } from './itemReads.js';
import { KeyRevocationListener, REVOKE_AND_NOTIFY } from './keyRevocations.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import {
  createPostgresPool,
  type PostgresClient,
  type PostgresPool,
  type PostgresQuery,
  type PostgresQueryable,
  type PostgresQueryResult,
} from './pgPool.js';
import { PipelinedBatch } from './pipelinedBatch.js';
import { SessionItemsCache } from './sessionItems.js';

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
  /** The connection pool (a `pg.Pool`). Writing through it directly bypasses every rule of the core. */
  readonly pool: PostgresPool;
  /** The schema holding the tables. */
  readonly schema: string;
}

/** Advisory-lock classes (first key of the two-key form), so Gatehouse's locks never meet others'. */
const MIGRATION_LOCK_CLASS = 0x47480001;
const ITEM_LOCK_CLASS = 0x47480002;
/** The item locks of the keys in its array parameter, in order. */
const LOCK_ITEMS = `SELECT pg_advisory_xact_lock(${ITEM_LOCK_CLASS}, hashtext(x)) FROM unnest(?::text[]) AS x`;
const PING_TIMEOUT_MS = 5000;
/**
 * Most transactions committed together. Each caller's savepoint is a subtransaction; past 64 in
 * one transaction PostgreSQL's snapshots overflow their subtransaction cache and slow every session.
 */
const GROUP_COMMIT_MAX = 32;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Type OIDs of int2, int4 and int8: dumped as numbers, whatever the driver hands back. */
const INTEGER_TYPES = new Set([20, 21, 23]);
/** Rows per INSERT when loading a dump (PostgreSQL allows 65535 parameters per statement). */
const LOAD_BATCH_ROWS = 500;

/** A shared statement's text in PostgreSQL's form, and its prepared-statement name if it has one. */
interface Prepared {
  text: string;
  name: string | undefined;
}

/** Most distinct texts remembered (and prepared on each connection that runs them). */
const PREPARED_MAX = 1000;
const prepared = new Map<string, Prepared>();

/**
 * `?` placeholders numbered once per SQL text, and a name for each text whose result columns are
 * spelled out: a named statement is parsed and planned once per connection instead of on every
 * run (planning the session read of an evaluation cost more than running it). A text with `*`
 * stays unnamed: a column added by a later migration would change its result type, which a
 * prepared statement refuses.
 */
function toPostgres(text: string): Prepared {
  let out = prepared.get(text);
  if (out === undefined) {
    // Dynamic texts (filters, id lists, row counts) come in a bounded number of shapes.
    const remembered = prepared.size < PREPARED_MAX;
    out = {
      text: postgresDialect.placeholders(text),
      name: remembered && !text.includes('*') ? `gatehouse_${prepared.size + 1}` : undefined,
    };
    if (remembered) prepared.set(text, out);
  }
  return out;
}

/** A query for `pg`: the statement's PostgreSQL text, its name when it has one, its values. */
function toQuery(text: string, values: readonly unknown[] = [], rowMode?: 'array'): PostgresQuery {
  const { text: pgText, name } = toPostgres(text);
  return {
    text: pgText,
    values,
    ...(name === undefined ? {} : { name }),
    ...(rowMode === undefined ? {} : { rowMode }),
  };
}

/** Runs the shared statements over a pool (committed data) or a transaction's client. */
function createExecutor(db: PostgresQueryable): SqlExecutor {
  const query = (text: string, args?: readonly unknown[]) => db.query<Row>(toQuery(text, args));
  return {
    all: async (text, args) => (await query(text, args)).rows,
    get: async (text, args) => (await query(text, args)).rows[0],
    rows: async (text, args) => (await db.query<unknown[]>(toQuery(text, args, 'array'))).rows,
    run: async (text, args) => (await query(text, args)).rowCount ?? 0,
    runReturning: async (text, args) => (await query(text, args)).rows,
    runAll: async (statements) => {
      const one = postgresDialect.combineWrites!(statements);
      return (await query(one.sql, one.args)).rowCount ?? 0;
    },
  };
}

/** Runs `fn` on one pooled connection between `begin` and COMMIT (ROLLBACK when it throws). */
async function inTransaction<T>(
  pool: PostgresPool,
  begin: string,
  fn: (client: PostgresClient) => Promise<T>,
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

/**
 * Re-encodes every tenant's history in format 2, in the caller's transaction (the migration's,
 * or a load's: `detect` then skips tenants already in format 2); the trigger refusing UPDATE on
 * `events` is disabled only inside it.
 */
async function upgradeHistory(client: PostgresClient, options: { detect?: boolean } = {}): Promise<void> {
  let tenants = (await client.query<Row>(UPGRADE_TENANTS)).rows.map((r) => str(r['tenant_id']));
  if (options.detect) {
    const format1: string[] = [];
    for (const t of tenants) {
      const [first] = (await client.query<Row>(numberPlaceholders(UPGRADE_FIRST_EVENT), [t])).rows;
      if (first !== undefined && TenantUpgrade.isFormat1(t, first)) format1.push(t);
    }
    tenants = format1;
  }
  if (tenants.length === 0) return;
  const run = (s: Statement) => client.query(numberPlaceholders(s.sql), [...s.args]);
  await client.query('ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete');
  const ids = createIdGenerator();
  for (const tenantId of tenants) {
    const upgrade = new TenantUpgrade(tenantId, systemRandomBytes);
    for (;;) {
      const page = (
        await client.query<Row>(numberPlaceholders(UPGRADE_PAGE), [tenantId, upgrade.seq, UPGRADE_PAGE_SIZE])
      ).rows;
      for (const row of page) for (const s of upgrade.next(row)) await run(s);
      if (page.length < UPGRADE_PAGE_SIZE) break;
    }
    const at = new Date().toISOString();
    for (const s of upgrade.finish({ eventId: ids('evt'), occurredAt: at, chainHeadRow: true })) await run(s);
  }
  await client.query('ALTER TABLE events ENABLE TRIGGER events_no_update_or_delete');
}

/** Creates the schema if needed and applies pending migrations, serialised across instances. */
async function migrate(pool: PostgresPool, schema: string): Promise<void> {
  await inTransaction(pool, 'BEGIN', async (client) => {
    // Two instances starting at once: the second waits here, then finds everything applied.
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_CLASS}, hashtext($1::text))`, [schema]);
    // CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when the schema exists; look first.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${sql.quoteIdent(schema)}`);
    await client.query(`SET LOCAL search_path TO ${sql.quoteIdent(schema)}`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)',
    );
    const applied = new Set(
      (await client.query<Row>('SELECT version FROM schema_migrations')).rows.map((r) => num(r['version'])),
    );
    for (const m of POSTGRES_MIGRATIONS) {
      if (applied.has(m.version)) continue;
      await client.query(m.sql);
      if (m.upgradeHistory) await upgradeHistory(client);
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        m.version,
        m.name,
        new Date().toISOString(),
      ]);
    }
  });
}

/** A row as dumped: integer columns as numbers (pg hands int8 back as a string), the rest as is. */
function dumpRow(row: Row, integers: ReadonlySet<string>): DumpRecord['row'] {
  const out: DumpRecord['row'] = {};
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
 * @throws {GatehouseError} `invalid_request` when `schema` is not a plain lower-case identifier;
 * `unavailable` when the `pg` package is not installed.
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
  const setSearchPath = `SET search_path TO ${sql.quoteIdent(schema)}`;
  const pool = await createPostgresPool({
    connectionString: options.connectionString,
    max: options.pool?.max ?? 10,
    idleTimeoutMillis: options.pool?.idleTimeoutMillis ?? 10_000,
    connectionTimeoutMillis: options.pool?.connectionTimeoutMillis ?? 10_000,
    // A group-commit batch sends what it need not wait for together with what it waits for.
    pipeline: true,
    onConnect: async (client) => {
      await client.query(setSearchPath);
    },
  });
  const onError = options.onError;
  pool.on('error', (error) => onError?.(error));
  // pg-pool listens for errors only on idle connections: a connection dropped while checked out
  // (a terminated backend mid-transaction, a failover) would emit an 'error' nobody hears, which
  // crashes the process. The query in flight is rejected with the same failure, so it is reported
  // there (as `unavailable`); this listener only keeps the event from being unhandled.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  if (options.migrate ?? true) {
    try {
      await migrate(pool, schema);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }
  return reportDisconnectsAsUnavailable(createPostgresStore(pool, schema, options));
}

/** How long a revocation waits for its own NOTIFY to come back before it returns anyway. */
const REVOCATION_ECHO_MS = 2000;

function createPostgresStore(
  pool: PostgresPool,
  schema: string,
  options: Pick<PostgresStoreOptions, 'connectionString' | 'onError'>,
): PostgresStore {
  const db = createExecutor(pool);
  /** Where the next claim's walk over tenants with pending deliveries goes on from. */
  const walk = new TenantWalk();
  let closing: Promise<void> | undefined;
  const keyCache = new ApiKeyCache();
  const revocations = new KeyRevocationListener({
    connectionString: options.connectionString,
    schema,
    onRevoked: () => keyCache.clear(),
    onError: options.onError,
  });
  const keyStore = operations.createSqlKeyStore(db);
  const sessionItems = new SessionItemsCache();

  /** A transaction's API over one connection (`db` refuses statements once it has ended). */
  function transactionApi(db: PostgresQueryable, defer?: (write: DeferredWrite) => void): StoreTx {
    const txDb = createExecutor(db);
    const tx = operations.createSqlTx(txDb, postgresDialect, defer ? { defer } : {});
    // The advisory lock is taken before reading, so that first writers of a key (no row to lock
    // yet) serialise too.
    const reads = new ItemReads(txDb, LOCK_ITEMS, (t, s, k) => JSON.stringify([schema, t, s, k]));
    return {
      ...tx,
      lockItem: (t, s, k) => reads.lockItem(t, s, k),
      listConflicts: (t, q) =>
        q.status === 'open' && q.session_id !== undefined && q.key !== undefined
          ? reads.openConflicts(t, q.session_id, q.key)
          : tx.listConflicts(t, q),
    };
  }

  /** Runs one batch of declared-tenant transactions on one pooled connection, pipelined. */
  async function runGroup(batch: readonly BatchMember[]): Promise<void> {
    const client = await pool.connect();
    const pipelined = new PipelinedBatch(client, {
      toQuery,
      combineWrites: postgresDialect.combineWrites!,
      insertItemVersions,
      transaction: transactionApi,
    });
    try {
      await runBatch(batch, pipelined.connection, { lockTenantsFirst: true });
    } finally {
      // A connection whose ROLLBACK failed is in an unknown state: destroy it, don't pool it.
      client.release(pipelined.broken);
    }
  }
  const group = new GroupCommitQueue({ maxBatch: GROUP_COMMIT_MAX, run: runGroup });

  return {
    kind: 'postgres',
    pool,
    schema,
    ...operations.createSqlReader(db, postgresDialect),
    listItems: (tenantId, sessionId) => sessionItems.read(db, tenantId, sessionId),
    ...keyStore,

    async findApiKeyByHash(hash) {
      if (!revocations.listening) await revocations.ready();
      // Cached only while every revocation is heard; a lookup begun before listening started
      // (or before a revocation arrived) is not remembered.
      const cacheable = revocations.listening;
      if (cacheable) {
        const cached = keyCache.get(hash);
        if (cached) return cached;
      }
      const generation = keyCache.generation;
      const key = await keyStore.findApiKeyByHash(hash);
      if (cacheable && revocations.listening) keyCache.remember(hash, key, generation);
      return key;
    },

    async revokeApiKey(keyId, at) {
      const echo = revocations.nextNotification(REVOCATION_ECHO_MS);
      const revoked = ((await db.run(REVOKE_AND_NOTIFY, [at, keyId, schema])) ?? 0) > 0;
      keyCache.clear();
      // PostgreSQL delivers the NOTIFY to every listening instance at once: once this store has
      // its own, the others have theirs too (or are about to read it from their socket).
      if (revoked) {
        await echo;
        // One more turn of the event loop: other stores of this process read their copy now.
        await new Promise((resolve) => setImmediate(resolve));
      }
      return revoked;
    },
    ...operations.createSqlOutbox(db),
    claimDueDeliveries: operations.createLeasedClaim(db, (o) =>
      inTransaction(pool, 'BEGIN', async (client) => {
        const tx = createExecutor(client);
        const page = claimPageSize(o.limit);
        const first = dueFirst({ now: o.now, limit: page });
        const rows = await tx.rows(first.sql, first.args);
        if (rows.length === page) {
          const capped = o.share
            ? [...o.share.heldByTenant].filter(([, n]) => n >= o.share!.perTenant).map(([t]) => t)
            : [];
          const next = dueOfNextTenants({ now: o.now, limit: o.limit, after: walk.after, capped });
          const walked = await tx.rows(next.sql, next.args);
          const order = new Map(walked.map((r) => [str(r[1]), num(r[4])]));
          walk.walked([...order.keys()].sort((a, b) => order.get(a)! - order.get(b)!));
          const seen = new Set(rows.map((r) => str(r[0])));
          for (const r of walked) if (r[0] !== null && !seen.has(str(r[0]))) rows.push(r);
        }
        const candidates = rows.map((r) => ({
          delivery_id: str(r[0]),
          tenant_id: str(r[1]),
          webhook_id: str(r[2]),
          next_attempt_at: str(r[3]),
        }));
        const chosen = fairShare(candidates, o.limit, o.share);
        if (chosen.length === 0) return [];
        return tx.runReturning(LEASE_CHOSEN, [o.leaseUntil, chosen.map((c) => c.delivery_id)]);
      }),
    ),

    transaction<T>(fn: (tx: StoreTx) => Promise<T>, options?: TransactionOptions): Promise<T> {
      if (options?.tenantId !== undefined) return group.enqueue(fn, options);
      return inTransaction(pool, 'BEGIN', async (client) => {
        let finished = false;
        // A tx used after its transaction ended would run on a connection that is back in the pool.
        const guarded: PostgresQueryable = {
          query: ((...args: Parameters<PostgresClient['query']>) =>
            finished
              ? Promise.reject(new Error('This transaction has already ended.'))
              : client.query(...args)) as PostgresQueryable['query'],
        };
        try {
          return await fn(transactionApi(guarded));
        } finally {
          finished = true;
        }
      });
    },

    insertFirstApiKey(k) {
      // The advisory lock makes "no key yet" and the insert one step across instances.
      return inTransaction(pool, 'BEGIN', async (client) => {
        await client.query(
          `SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_CLASS}, hashtext('first api key'))`,
        );
        return (await createExecutor(client).run(sql.insertFirstApiKey, apiKeyValues(k))) > 0;
      });
    },

    scanEvents: (tenantId, options) => operations.scanEvents(db, tenantId, options),
    listTenants: () => operations.listTenants(db),

    async *dumpRows(options: { pageSize?: number } = {}): AsyncIterable<DumpRecord> {
      // One snapshot for the whole dump: other instances keep writing, and a dump whose chain
      // heads ran ahead of its events would not load into a working store.
      const client = await pool.connect();
      let open = false;
      let broken: Error | undefined;
      const readPage = async (page: Statement) => {
        const result: PostgresQueryResult<Row> = await client.query<Row>(toQuery(page.sql, page.args));
        const integers = new Set(
          result.fields.filter((f) => INTEGER_TYPES.has(f.dataTypeID)).map((f) => f.name),
        );
        return result.rows.map((row) => dumpRow(row, integers));
      };
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        open = true;
        yield* dumpTables(readPage, options.pageSize ?? 1000);
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

    loadRows(records: AsyncIterable<DumpRecord>): Promise<number> {
      return inTransaction(pool, 'BEGIN', async (client) => {
        const txDb = createExecutor(client);
        // Serialises against writers and against another load into the same schema: the second
        // load waits, then finds the store used.
        await client.query('LOCK TABLE events, api_keys, chain_heads IN SHARE ROW EXCLUSIVE MODE');
        assertEmptyForLoad((await txDb.get(sql.countUsedRows))!['n']);
        const columns = new Map<string, Set<string>>();
        const known = await txDb.all(
          'SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ?',
          [schema],
        );
        for (const r of known) {
          const table = str(r['table_name']);
          if (!columns.has(table)) columns.set(table, new Set());
          columns.get(table)!.add(str(r['column_name']));
        }
        const count = await loadRecords(records, {
          columns,
          batchRows: LOAD_BATCH_ROWS,
          insert: async (table, cols, rows) => {
            // Rebuilt from the loaded events below: a dump's heads are no proof of the chain.
            if (table === 'chain_heads') return;
            const values = rows.flatMap((row) => cols.map((c) => row[c] ?? null));
            await txDb.run(sql.insertRows(table, cols, rows.length), values);
          },
        });
        await client.query(
          'INSERT INTO chain_heads (tenant_id, seq, hash) SELECT DISTINCT ON (tenant_id) tenant_id, seq, hash FROM events ORDER BY tenant_id, seq DESC',
        );
        // A dump of a version before history format 2 is upgraded as the migration would have
        // (unless the schema is older still: then the migration will).
        if (columns.has('event_values')) await upgradeHistory(client, { detect: true });
        return count;
      });
    },

    async ping() {
      try {
        await withTimeout(db.get('SELECT 1'), PING_TIMEOUT_MS, `no answer within ${PING_TIMEOUT_MS} ms`);
      } catch (error) {
        throw new GatehouseError('unavailable', 'PostgreSQL is unreachable.', { cause: error });
      }
    },
    close() {
      closing ??= group
        .drain()
        .then(() => revocations.close())
        .then(() => pool.end());
      return closing;
    },
  };
}
