/**
 * How the shared store code runs a statement: each store hands it an executor over its
 * connection (SQLite) or pool / transaction client (PostgreSQL). SQL is written with `?`
 * placeholders; the executor applies its dialect.
 */
import type { Statement } from './dialect.js';
import type { Row } from './rows.js';

/** Runs statements on one connection, pool or transaction. */
export interface SqlExecutor {
  /** Every row, as objects. */
  all(sql: string, args?: readonly unknown[]): Promise<Row[]>;
  /** The first row, or undefined. */
  get(sql: string, args?: readonly unknown[]): Promise<Row | undefined>;
  /** Every row as an array in the SELECT's column order. */
  rows(sql: string, args?: readonly unknown[]): Promise<unknown[][]>;
  /** A write; resolves to the number of rows it changed. */
  run(sql: string, args?: readonly unknown[]): Promise<number>;
  /** A write with `RETURNING`: its rows. */
  runReturning(sql: string, args?: readonly unknown[]): Promise<Row[]>;
  /**
   * Several writes in order, as one statement where the dialect can combine them; resolves to
   * the last one's changes.
   */
  runAll(statements: readonly Statement[]): Promise<number>;
}
