/**
 * What differs between the SQL of the two stores, and nothing else: each dialect
 * (adapters/sqlite/dialect.ts, adapters/postgres/dialect.ts) is one small object, as Kysely keeps
 * its dialect adapters. Statements (adapters/sql/statements.ts) are written once with `?`
 * placeholders and these hooks where the databases part ways.
 */

/** A statement and its positional arguments, `?` placeholders in text order. */
export interface Statement {
  sql: string;
  args: readonly unknown[];
  /** A write that returns rows (`RETURNING`), rather than a read. */
  writes?: boolean;
}

/** The SQL differences of one database. */
export interface SqlDialect {
  readonly name: 'sqlite' | 'postgres';
  /** Turns `?` placeholders into the driver's own (`$1`, `$2`… on PostgreSQL). */
  placeholders(sql: string): string;
  /**
   * A hint naming the index a query over `events` must use, placed after the table name. SQLite
   * has no table statistics (no ANALYZE) and would otherwise walk the primary key in order and
   * filter row by row; PostgreSQL's planner needs no hint.
   */
  eventsIndex(index: string): string;
  /**
   * The read of a session's current items (every evaluation runs it), where the dialect needs
   * its own form; else `listSessionItems` (adapters/sql/statements.ts). Same columns, same order.
   */
  readonly listSessionItems?: string;
  /** Appended to the read of an item that the transaction is about to change. */
  readonly lockCurrentItem: string;
  /**
   * Reads the tenant's chain head and holds it until the transaction ends; a row with `seq` 0 or
   * no row means no event yet.
   */
  lockChainHead(tenantId: string): Statement;
  /**
   * True where each append also moves the tenant's row in `chain_heads` (PostgreSQL: the row is
   * the lock that serialises a tenant's appenders across instances). False where the head is read
   * off the events themselves (SQLite: one writer at a time, and a row written per commit is a
   * page per commit).
   */
  readonly chainHeadRow: boolean;
  /**
   * Several writes as one statement (a round trip saved on a networked database), or undefined
   * where they run one after another. The combined statement reports the last write's changes.
   */
  combineWrites?(statements: readonly Statement[]): Statement;
}

/** Numbers `?` placeholders `$1`, `$2`… in text order (the statements hold no `?` literal). */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
