/**
 * The part of `pg` the PostgreSQL store uses, as Gatehouse's own structural types, and the lazy
 * load of `pg` itself: it is an optional peer dependency, needed only by those who use this
 * store, and the published declarations must type-check without `@types/pg`.
 */
import { GatehouseError } from '../../src/index.js';

/** A result as `pg` returns it. */
// biome-ignore lint/suspicious/noExplicitAny: rows are untyped, as in pg's own `QueryResult<any>`.
export interface PostgresQueryResult<R = any> {
  rows: R[];
  rowCount: number | null;
  fields: Array<{ name: string; dataTypeID: number }>;
}

/**
 * A query as a config object: `rowMode: 'array'` for positional rows; `name` prepares it once
 * per connection under that name.
 */
export type PostgresQuery = { text: string; values?: readonly unknown[]; rowMode?: 'array'; name?: string };

/** What runs queries: a pool or one client. */
export interface PostgresQueryable {
  // biome-ignore lint/suspicious/noExplicitAny: as pg's own default.
  query<R = any>(text: string, values?: readonly unknown[]): Promise<PostgresQueryResult<R>>;
  // biome-ignore lint/suspicious/noExplicitAny: as pg's own default.
  query<R = any>(query: PostgresQuery): Promise<PostgresQueryResult<R>>;
}

/** One connection checked out of the pool. */
export interface PostgresClient extends PostgresQueryable {
  /** Back to the pool; with an error, the connection is destroyed instead. */
  release(error?: Error | boolean): void;
}

/** A connection as the pool's `'connect'` event hands it out: it can be listened to. */
export interface PostgresConnection extends PostgresClient {
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** A `pg.Pool`, as far as Gatehouse uses it. */
export interface PostgresPool extends PostgresQueryable {
  connect(): Promise<PostgresClient>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** Each new connection, once, before it is first handed out. */
  on(event: 'connect', listener: (client: PostgresConnection) => void): unknown;
}

/** The settings Gatehouse passes to `new pg.Pool`. */
export interface PostgresPoolConfig {
  connectionString: string;
  max: number;
  idleTimeoutMillis: number;
  connectionTimeoutMillis: number;
  /** Send queries without waiting for the previous one's answer (pg ≥ 8.23). */
  pipeline: boolean;
  onConnect: (client: PostgresQueryable) => Promise<void>;
}

/** The message when `pg` is not installed. */
export const PG_MISSING = 'The PostgreSQL store needs pg: npm install pg@8';

/**
 * Creates a `pg.Pool`, loading `pg` on first use.
 * @throws {GatehouseError} `unavailable` when `pg` is not installed.
 */
export async function createPostgresPool(config: PostgresPoolConfig): Promise<PostgresPool> {
  let Pool: new (config: PostgresPoolConfig) => PostgresPool;
  try {
    Pool = (await import('pg')).default.Pool as unknown as typeof Pool;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND') {
      throw new GatehouseError('unavailable', PG_MISSING, { cause: error });
    }
    throw error;
  }
  return new Pool(config);
}
