/**
 * Revocations of API keys, heard from every instance on one PostgreSQL database: a revocation
 * sends `NOTIFY gatehouse_api_keys, '<schema>'` in the same statement as its UPDATE (so it is
 * delivered when, and only if, it commits), and each store that caches keys LISTENs on a
 * connection of its own. The cache is trusted only while that connection is up and listening:
 * before LISTEN answers, after an error or a drop, lookups go to the database until it listens
 * again.
 */
import { GatehouseError } from '../../src/index.js';
import { PG_MISSING } from './pgPool.js';

/** The channel every Gatehouse schema notifies on; the payload says which schema. */
export const KEY_CHANNEL = 'gatehouse_api_keys';

/** A revocation that notifies listeners in the same statement; rows = keys revoked (0 or 1). */
export const REVOKE_AND_NOTIFY = `WITH revoked AS (
    UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id)
  SELECT pg_notify('${KEY_CHANNEL}', $3) FROM revoked`;

/** Reconnects after this long when the listening connection failed. */
const RETRY_MS = 1000;
/**
 * The listening connection is asked a trivial query this often. A connection that died without a
 * word (a failover, a firewall dropping idle flows, a host gone) delivers no NOTIFY and no error
 * either: only an unanswered question tells.
 */
const HEARTBEAT_MS = 1000;
/** A question unanswered this long: the connection is taken for dead, and the cache is no longer trusted. */
const SILENT_MS = 3000;

/** The part of `pg.Client` a listener uses. */
interface ListenerClient {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  end(): Promise<void>;
  /** The socket (pg's pure-JS client): destroyed when the server went silent, as `end` would wait for it. */
  connection?: { stream?: { destroy?: () => void } };
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
}

/** Options for {@link KeyRevocationListener}. */
export interface KeyRevocationListenerOptions {
  connectionString: string;
  schema: string;
  /** Called on every revocation in the schema, and whenever listening stops (anything may have been missed). */
  onRevoked: () => void;
  onError?: ((error: Error) => void) | undefined;
}

/** One LISTEN connection per store, opened on first use. */
export class KeyRevocationListener {
  readonly #options: KeyRevocationListenerOptions;
  #client: ListenerClient | undefined;
  #listening = false;
  #starting: Promise<void> | undefined;
  #closed = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  /** When the unanswered heartbeat was sent (`performance.now()`), if one is. */
  #askedAt: number | undefined;
  /** Waiting for the next notification of this schema (a revocation of this store waits for its own echo). */
  #waiters: Array<() => void> = [];

  constructor(options: KeyRevocationListenerOptions) {
    this.#options = options;
  }

  /**
   * True while revocations are heard: only then may keys be cached. A heartbeat unanswered for
   * {@link SILENT_MS} ends it at once, before the timer that drops the connection runs.
   */
  get listening(): boolean {
    return this.#listening && !this.#silent();
  }

  #silent(): boolean {
    return this.#askedAt !== undefined && performance.now() - this.#askedAt >= SILENT_MS;
  }

  /**
   * Starts listening (once) and resolves when it listens or failed to. While a failed connection
   * waits to retry, resolves at once: lookups then go to the database rather than wait.
   */
  ready(): Promise<void> {
    if (this.#closed || this.#listening || this.#retry) return Promise.resolve();
    this.#starting ??= this.#connect().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  /**
   * Resolves when the next notification arrives (or after `ms`): a revocation waits for its own,
   * which PostgreSQL hands to every listening instance at the same commit.
   */
  nextNotification(ms: number): Promise<void> {
    if (!this.#listening) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    await this.#starting?.catch(() => undefined);
    this.#stopped();
    await this.#client?.end().catch(() => undefined);
    this.#client = undefined;
  }

  async #connect(): Promise<void> {
    let Client: new (config: { connectionString: string; application_name: string }) => ListenerClient;
    try {
      Client = (await import('pg')).default.Client as unknown as typeof Client;
    } catch (error) {
      throw new GatehouseError('unavailable', PG_MISSING, { cause: error });
    }
    // Named, so an operator (or a test) can tell it from the pool's connections in pg_stat_activity.
    const client = new Client({
      connectionString: this.#options.connectionString,
      application_name: `gatehouse-keys:${this.#options.schema}`,
    });
    this.#client = client;
    const failed = (error?: Error, silent = false) => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#stopped();
      if (error) this.#options.onError?.(error);
      if (silent) client.connection?.stream?.destroy?.();
      client.end().catch(() => undefined);
      if (!this.#closed) {
        this.#retry = setTimeout(() => {
          this.#retry = undefined;
          void this.ready();
        }, RETRY_MS);
        this.#retry.unref?.();
      }
    };
    client.on('error', failed);
    client.on('end', () => failed());
    client.on('notification', (message) => {
      if (message.channel !== KEY_CHANNEL || message.payload !== this.#options.schema) return;
      this.#options.onRevoked();
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const w of waiters) w();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${KEY_CHANNEL}`);
      if (this.#client === client && !this.#closed) {
        this.#listening = true;
        this.#heartbeat = setInterval(() => {
          if (this.#silent()) {
            failed(new Error(`The LISTEN connection answered nothing for ${SILENT_MS} ms.`), true);
          } else if (this.#askedAt === undefined) {
            this.#askedAt = performance.now();
            client.query('SELECT 1').then(
              () => {
                if (this.#client === client) this.#askedAt = undefined;
              },
              // The connection's own 'error' or 'end' reports it.
              () => undefined,
            );
          }
        }, HEARTBEAT_MS);
        this.#heartbeat.unref?.();
      }
    } catch (error) {
      failed(error as Error);
    }
  }

  /** Not listening any more: whatever was cached may be stale. */
  #stopped(): void {
    const was = this.#listening;
    this.#listening = false;
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    this.#askedAt = undefined;
    if (was) this.#options.onRevoked();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}
