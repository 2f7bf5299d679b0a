/**
 * One group-commit batch (adapters/sql/groupCommit.ts) on one PostgreSQL connection in pipeline
 * mode (pg ≥ 8.23). What a caller does not wait for is not sent on its own round trip:
 * - BEGIN goes out with the batch's first statements (its chain-head locks and webhook lists);
 * - writes whose result no caller reads (events, outbox rows, item versions, conflicts) are held
 *   back and sent with the next statement, or with COMMIT: a batch's events go out as one
 *   multi-row INSERT per tenant that moves the chain head once;
 * - a caller's savepoint is opened only when that caller sends a statement of its own, together
 *   with it. A caller whose writes were all held back is undone by dropping them.
 * A batch of evaluations thus costs two round trips however many callers it holds (locks, then
 * events and COMMIT), and holds its tenants' chain heads for little more than one of them.
 *
 * Failures keep the batch's promises: a statement a caller sent, or that caller's own held-back
 * writes sent with it, fails that caller alone (its savepoint is rolled back); a failure of
 * anything else (BEGIN, a savepoint, earlier callers' writes) loses the transaction, which
 * `isOpen` reports, and writes sent with COMMIT fail the whole batch as a failed COMMIT does.
 * Held-back writes are ones only the database can refuse (a full disk, a lost connection):
 * inputs are checked storable before they reach a transaction, and their keys are unique by
 * construction or held under the item's lock.
 */
import type { NewDelivery, SealedFields, StateItem, StoredEvent, StoreTx } from '../../src/index.js';
import type { Statement } from '../sql/dialect.js';
import type { BatchConnection } from '../sql/groupCommit.js';
import * as sql from '../sql/statements.js';
import type { DeferredWrite } from '../sql/storeOperations.js';
import type { PostgresClient, PostgresQuery, PostgresQueryable, PostgresQueryResult } from './pgPool.js';

/** Rows per multi-row INSERT: far below PostgreSQL's 65535 parameters per statement. */
const ROWS_PER_INSERT = 500;
const SAVEPOINT = 'SAVEPOINT gatehouse_tx';
const NEXT_SAVEPOINT = 'RELEASE SAVEPOINT gatehouse_tx; SAVEPOINT gatehouse_tx';

/** How the batch turns the shared statements into PostgreSQL's. */
export interface PipelinedBatchOptions {
  /** A shared statement as a query for `pg` (placeholders numbered, prepared by name where it may be). */
  toQuery(text: string, values: readonly unknown[]): PostgresQuery;
  /** Several writes as one statement (data-modifying CTEs). */
  combineWrites(statements: readonly Statement[]): Statement;
  /** New versions of one tenant's items as one statement. */
  insertItemVersions(tenantId: string, items: readonly StateItem[]): Statement;
  /** The store's transaction API over the batch's connection, with its writes held back. */
  transaction(db: PostgresQueryable, defer: (write: DeferredWrite) => void): StoreTx;
}

type Query = string | PostgresQuery;
const ignore = () => undefined;

/** The socket under a `pg` client, where the driver exposes it (the pure-JS client does). */
interface Corkable {
  cork(): void;
  uncork(): void;
}
function socketOf(client: PostgresClient): Corkable | undefined {
  const stream = (client as { connection?: { stream?: Partial<Corkable> } }).connection?.stream;
  return typeof stream?.cork === 'function' && typeof stream.uncork === 'function'
    ? (stream as Corkable)
    : undefined;
}

/** A group-commit batch on one pipelining connection: hand {@link connection} to `runBatch`. */
export class PipelinedBatch {
  readonly #client: PostgresClient;
  readonly #socket: Corkable | undefined;
  #corked = false;
  readonly #options: PipelinedBatchOptions;
  readonly #tx: StoreTx;
  /** Sent, and not yet awaited by a caller. */
  #inFlight: Promise<unknown>[] = [];
  /** Held-back writes of callers that finished. */
  #carried: DeferredWrite[] = [];
  /** Held-back writes of the running caller. */
  #mine: DeferredWrite[] = [];
  /** The running caller gets a savepoint, not sent yet. */
  #savepointDue = false;
  /** The running caller's savepoint was sent. */
  #callerHasSavepoint = false;
  /** A savepoint is open on the server (the next one releases it first). */
  #savepointOpen = false;
  #open = false;
  /** Why the transaction is lost: something failed that no single caller owns. */
  #lost: unknown;
  /** Set when ROLLBACK failed: the connection is in an unknown state. */
  #broken: Error | undefined;

  constructor(client: PostgresClient, options: PipelinedBatchOptions) {
    this.#client = client;
    this.#socket = socketOf(client);
    this.#options = options;
    const db = { query: (q: Query, values?: readonly unknown[]) => this.#statement(q, values) };
    this.#tx = options.transaction(db as PostgresQueryable, (write) => this.#defer(write));
  }

  /** Why the connection must not go back to the pool, if it must not. */
  get broken(): Error | undefined {
    return this.#broken;
  }

  /** The batch's transaction steps, for `runBatch`. */
  readonly connection: BatchConnection = {
    begin: async () => {
      this.#open = true;
      this.#send('BEGIN', undefined, true);
      return this.#tx;
    },
    savepoint: async () => {
      this.#carried.push(...this.#mine);
      this.#mine = [];
      this.#savepointDue = true;
      this.#callerHasSavepoint = false;
    },
    rollbackToSavepoint: async () => {
      this.#mine = [];
      this.#savepointDue = false;
      if (!this.#callerHasSavepoint) return;
      this.#callerHasSavepoint = false;
      await this.#awaitWith(this.#query('ROLLBACK TO SAVEPOINT gatehouse_tx'));
    },
    commit: async () => {
      this.#carried.push(...this.#mine);
      this.#mine = [];
      this.#sendWrites(this.#takeCarried(), true);
      const commit = this.#query('COMMIT');
      this.#open = false;
      // A COMMIT after a failed statement reports ROLLBACK without an error: the failure is
      // that statement's, which this awaits too.
      await this.#awaitWith(commit);
    },
    rollback: async () => {
      this.#open = false;
      this.#carried = [];
      this.#mine = [];
      const earlier = this.#inFlight;
      this.#inFlight = [];
      const rollback = this.#query('ROLLBACK');
      await Promise.allSettled(earlier);
      await rollback.catch((e: Error) => {
        this.#broken = e;
        throw e;
      });
    },
    isOpen: () => this.#lost === undefined && this.#broken === undefined,
  };

  #defer(write: DeferredWrite): void {
    if (!this.#open) throw new Error('This transaction has already ended.');
    this.#mine.push(write);
  }

  /** A caller's statement: what was held back goes first, in the same round trip. */
  #statement(q: Query, values: readonly unknown[] | undefined): Promise<PostgresQueryResult> {
    if (!this.#open) return Promise.reject(new Error('This transaction has already ended.'));
    this.#sendWrites(this.#takeCarried(), true);
    if (this.#savepointDue) {
      this.#send(this.#savepointOpen ? NEXT_SAVEPOINT : SAVEPOINT, undefined, true);
      this.#savepointDue = false;
      this.#savepointOpen = true;
      this.#callerHasSavepoint = true;
    }
    const mine = this.#mine;
    this.#mine = [];
    this.#sendWrites(mine, false);
    return this.#awaitWith(this.#query(q, values));
  }

  #takeCarried(): DeferredWrite[] {
    const carried = this.#carried;
    this.#carried = [];
    return carried;
  }

  #query(q: Query, values?: readonly unknown[]): Promise<PostgresQueryResult> {
    this.#cork();
    return typeof q === 'string' ? this.#client.query(q, values) : this.#client.query(q);
  }

  /**
   * Holds the socket's writes until the current tick's promise callbacks have run: what the batch
   * sends together (BEGIN and the locks, the writes and COMMIT) leaves in one system call rather
   * than one per message (each a quarter of the driver's time in profiles).
   */
  #cork(): void {
    if (this.#corked || !this.#socket) return;
    this.#corked = true;
    this.#socket.cork();
    process.nextTick(() => {
      this.#corked = false;
      this.#socket!.uncork();
    });
  }

  /** Sends without waiting; `shared`: a failure loses the whole transaction. */
  #send(q: Query, values: readonly unknown[] | undefined, shared: boolean): void {
    const sent = this.#query(q, values);
    const tracked = shared
      ? sent.catch((error: unknown) => {
          this.#lost ??= error;
          throw error;
        })
      : sent;
    // Awaited by the next statement or COMMIT; until then, not an unhandled rejection.
    tracked.catch(ignore);
    this.#inFlight.push(tracked);
  }

  /** Resolves to `last`'s result once everything sent before it succeeded; else the first failure. */
  async #awaitWith(last: Promise<PostgresQueryResult>): Promise<PostgresQueryResult> {
    const earlier = this.#inFlight;
    this.#inFlight = [];
    const results = await Promise.all([...earlier, last]);
    return results[results.length - 1] as PostgresQueryResult;
  }

  /**
   * Held-back writes as few statements: each tenant's events in one INSERT that also moves its
   * chain head, each tenant's outbox rows in one INSERT, the rest in their order, where item
   * versions in a row (no other write between them) of one tenant are one statement. Events and
   * outbox rows go first: no other held-back write touches their tables.
   */
  #sendWrites(writes: readonly DeferredWrite[], shared: boolean): void {
    if (writes.length === 0) return;
    const events = new Map<string, Array<StoredEvent & { fields: SealedFields | null }>>();
    const deliveries = new Map<string, NewDelivery[]>();
    const rest: Statement[] = [];
    let versions: { tenantId: string; items: StateItem[] } | undefined;
    const endVersions = () => {
      if (versions) rest.push(this.#options.insertItemVersions(versions.tenantId, versions.items));
      versions = undefined;
    };
    for (const w of writes) {
      if (w.kind === 'event') push(events, w.tenantId, [{ ...w.event, fields: w.fields }]);
      else if (w.kind === 'deliveries') push(deliveries, w.tenantId, w.rows);
      else if (w.kind === 'itemVersion') {
        if (versions?.tenantId !== w.tenantId || versions.items.length === ROWS_PER_INSERT) endVersions();
        versions ??= { tenantId: w.tenantId, items: [] };
        versions.items.push(w.item);
      } else {
        endVersions();
        rest.push(this.#options.combineWrites(w.statements));
      }
    }
    endVersions();
    const out: Statement[] = [];
    for (const [tenantId, list] of events) {
      for (let i = 0; i < list.length; i += ROWS_PER_INSERT) {
        const chunk = list.slice(i, i + ROWS_PER_INSERT);
        const values = sql.insertEventValues(tenantId, chunk);
        out.push(
          this.#options.combineWrites([
            sql.insertEvents(tenantId, chunk),
            ...(values ? [values] : []),
            sql.moveChainHead(tenantId, chunk[chunk.length - 1]!),
          ]),
        );
      }
    }
    for (const [tenantId, rows] of deliveries) {
      for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
        out.push(sql.insertDeliveries(tenantId, rows.slice(i, i + ROWS_PER_INSERT)));
      }
    }
    out.push(...rest);
    for (const s of out) this.#send(this.#options.toQuery(s.sql, s.args), undefined, shared);
  }
}

function push<T>(map: Map<string, T[]>, key: string, values: readonly T[]): void {
  const list = map.get(key);
  if (list) list.push(...values);
  else map.set(key, [...values]);
}
