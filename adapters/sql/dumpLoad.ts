/**
 * Dump and load, shared by the SQL stores: the paging of a dump, and the checks a load makes
 * before any table or column name of the dump reaches SQL text. Each store supplies the snapshot
 * (dump) or the transaction (load) around them.
 */
import { type DumpRecord, GatehouseError, STORE_TABLE_KEYS, STORE_TABLES } from '../../src/index.js';
import type { Statement } from './dialect.js';
import { num } from './rows.js';
import { dumpPage } from './statements.js';

/** Every table in dump order, each in primary-key pages read by `readPage`. */
export async function* dumpTables(
  readPage: (page: Statement) => Promise<DumpRecord['row'][]>,
  pageSize: number,
): AsyncIterable<DumpRecord> {
  for (const table of STORE_TABLES) {
    const keys = STORE_TABLE_KEYS[table];
    let after: unknown[] | undefined;
    for (;;) {
      const rows = await readPage(dumpPage(table, keys, after, pageSize));
      for (const row of rows) yield { table, row };
      if (rows.length < pageSize) break;
      const last = rows[rows.length - 1]!;
      after = keys.map((k) => last[k]);
    }
  }
}

/** Refuses a load into a store that has events or keys (`count` of {@link countUsedRows}). */
export function assertEmptyForLoad(count: unknown): void {
  if (num(count) > 0) {
    throw new GatehouseError(
      'invalid_request',
      'The target database is not empty: load a dump only into a new one.',
    );
  }
}

/** How a store writes the rows of a load. */
export interface LoadTarget {
  /** The columns of each table, from the database's own schema. */
  columns: ReadonlyMap<string, ReadonlySet<string>>;
  /** Inserts rows of one table that all have `columns` (checked against the schema). */
  insert(table: string, columns: readonly string[], rows: readonly DumpRecord['row'][]): Promise<void>;
  /** Rows per `insert` call at most. */
  batchRows: number;
}

/**
 * Loads dump records, batching consecutive rows of the same table and columns; throws on an
 * unknown table or column before it reaches SQL. Resolves to the number of rows loaded.
 * @throws {GatehouseError} `invalid_request` for an unknown table or column.
 */
export async function loadRecords(records: AsyncIterable<DumpRecord>, target: LoadTarget): Promise<number> {
  const tables = new Set<string>(STORE_TABLES);
  let count = 0;
  let batch: { table: string; columns: string[]; signature: string; rows: DumpRecord['row'][] } | undefined;
  const flush = async () => {
    if (!batch || batch.rows.length === 0) return;
    await target.insert(batch.table, batch.columns, batch.rows);
    count += batch.rows.length;
    batch.rows = [];
  };
  for await (const { table, row } of records) {
    const columns = Object.keys(row);
    const signature = `${table}(${columns.join(',')})`;
    if (batch?.signature !== signature) {
      checkColumns(table, columns, tables.has(table) ? target.columns.get(table) : undefined);
      await flush();
      batch = { table, columns, signature, rows: [] };
    }
    batch.rows.push(row);
    if (batch.rows.length >= target.batchRows) await flush();
  }
  await flush();
  return count;
}

function checkColumns(
  table: string,
  columns: readonly string[],
  known: ReadonlySet<string> | undefined,
): void {
  if (!known) throw new GatehouseError('invalid_request', `Unknown table '${table}' in the dump.`);
  const unknown = columns.filter((c) => !known.has(c));
  if (unknown.length > 0) {
    throw new GatehouseError(
      'invalid_request',
      `Unknown column(s) ${unknown.join(', ')} of ${table} in the dump.`,
    );
  }
}
