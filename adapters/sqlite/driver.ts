/**
 * The SQLite connection the store runs on: a small Gatehouse-owned interface with two tiny
 * implementations, the built-in `node:sqlite` where the runtime has it (Node >= 22.13) and
 * better-sqlite3 only where it does not (Node 20). better-sqlite3 12 aborts the process on
 * Node >= 24.19 when a statement is finalised outside a JS context, so it is never loaded on a
 * runtime that has `node:sqlite`; it is an optional peer dependency, required only on Node 20.
 *
 * Neither driver's types appear here, so the published declarations need neither
 * `@types/better-sqlite3` nor a Node version whose types include `node:sqlite`.
 */
import { createRequire } from 'node:module';
import { GatehouseError } from '../../src/index.js';

/** A row as an object, column name to value (integers as numbers). */
export type SqliteRow = Record<string, unknown>;

/** A prepared statement; parameters are positional (`?`). */
export interface SqliteStatement {
  /** Runs a write; the number of rows it changed. */
  run(...params: unknown[]): { changes: number };
  /** The first row, or `undefined`. */
  get(...params: unknown[]): SqliteRow | undefined;
  /** Every row, as objects. */
  all(...params: unknown[]): SqliteRow[];
  /** Every row, as arrays in the column order of the statement (no objects to build and read). */
  rows(...params: unknown[]): unknown[][];
}

/** One SQLite connection. */
export interface SqliteDatabase {
  /** Which driver runs it. */
  readonly driver: 'node:sqlite' | 'better-sqlite3';
  /** Compiles a statement. Statements are cheap to keep: cache them. */
  prepare(sql: string): SqliteStatement;
  /** Runs one or more statements without parameters (DDL, pragmas). */
  exec(sql: string): void;
  /** Starts a transaction: `IMMEDIATE` takes the write lock at once. */
  begin(mode?: 'DEFERRED' | 'IMMEDIATE'): void;
  commit(): void;
  rollback(): void;
  /**
   * True while a transaction is open. Before Node 22.16 `node:sqlite` cannot say, and only
   * `begin`/`commit`/`rollback` are counted (not a BEGIN run through `exec`).
   */
  readonly inTransaction: boolean;
  close(): void;
}

/** Options for {@link openSqliteDatabase}. */
export interface SqliteDatabaseOptions {
  /** Open read-only (for tools that inspect a store's file). @default false */
  readOnly?: boolean;
}

/** The part of `node:sqlite` used here (its types are only in @types/node >= 22). */
interface NodeSqliteModule {
  DatabaseSync: new (
    path: string,
    options?: { readOnly?: boolean },
  ) => {
    prepare(sql: string): NodeSqliteStatement;
    exec(sql: string): void;
    close(): void;
    /** Node >= 22.16 / 24. */
    readonly isTransaction?: boolean;
  };
}
interface NodeSqliteStatement {
  run(...params: unknown[]): { changes: number | bigint };
  get(...params: unknown[]): SqliteRow | undefined;
  all(...params: unknown[]): SqliteRow[];
  /** Node >= 22.16 / 24. */
  setReturnArrays?(enabled: boolean): void;
}

/** The part of better-sqlite3 used here. */
type BetterSqliteConstructor = new (
  path: string,
  options?: { readonly?: boolean },
) => {
  prepare(sql: string): BetterSqliteStatement;
  exec(sql: string): void;
  close(): void;
  readonly inTransaction: boolean;
};
interface BetterSqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): SqliteRow | undefined;
  all(...params: unknown[]): SqliteRow[];
  raw(enabled: boolean): BetterSqliteStatement;
}

/** How a driver is found; replaced only by tests of the missing-driver message. */
export interface SqliteDriverResolver {
  /** `node:sqlite`, or undefined where the runtime lacks it. */
  nodeSqlite(): NodeSqliteModule | undefined;
  /** better-sqlite3's constructor; throws `MODULE_NOT_FOUND` when it is not installed. */
  betterSqlite3(): BetterSqliteConstructor;
}

const requireFromHere = createRequire(import.meta.url);

const defaultResolver: SqliteDriverResolver = {
  nodeSqlite() {
    // Detected by loading, not from the version: Node 22.5-22.12 have it only behind a flag.
    try {
      return process.getBuiltinModule('node:sqlite') as NodeSqliteModule | undefined;
    } catch {
      return undefined;
    }
  },
  betterSqlite3() {
    return requireFromHere('better-sqlite3') as BetterSqliteConstructor;
  },
};

/** The message for a Node 20 without better-sqlite3. */
export const BETTER_SQLITE3_MISSING =
  'On Node 20 the SQLite store needs better-sqlite3@12: npm install better-sqlite3@12';

/** The driver this runtime uses, without opening anything. */
export function sqliteDriverName(resolver: SqliteDriverResolver = defaultResolver): SqliteDatabase['driver'] {
  return resolver.nodeSqlite() ? 'node:sqlite' : 'better-sqlite3';
}

/**
 * Opens a SQLite connection with the runtime's driver. Sets no pragma: callers set each one they
 * rely on, because `node:sqlite` is not built with better-sqlite3's compile-time defaults.
 * @throws {GatehouseError} `unavailable` on a runtime without `node:sqlite` when better-sqlite3 is
 * not installed.
 * @example
 * const db = openSqliteDatabase('.gatehouse/gatehouse.db');
 */
export function openSqliteDatabase(
  filename: string,
  options: SqliteDatabaseOptions = {},
  resolver: SqliteDriverResolver = defaultResolver,
): SqliteDatabase {
  const nodeSqlite = resolver.nodeSqlite();
  if (nodeSqlite) return openWithNodeSqlite(nodeSqlite, filename, options);
  let Database: BetterSqliteConstructor;
  try {
    Database = resolver.betterSqlite3();
  } catch (error) {
    if ((error as { code?: unknown }).code === 'MODULE_NOT_FOUND') {
      throw new GatehouseError('unavailable', BETTER_SQLITE3_MISSING, { cause: error });
    }
    throw error;
  }
  return openWithBetterSqlite3(Database, filename, options);
}

/** Statements run that may have written, on every connection this module opened in this process. */
let writes = 0;
/** What a SELECT or PRAGMA query may not do: change the database (`WITH` may end in an INSERT). */
const READ_ONLY_SQL = /^\s*(?:SELECT|PRAGMA)\b/i;

/**
 * A number that moves whenever a connection opened here in this process may have written (a
 * statement other than SELECT/PRAGMA ran, or `exec`). The SQLite store reads `PRAGMA
 * data_version` once per event-loop turn, and again in the same turn only when this moved: a
 * write by another connection of this process reaches a caller without I/O in between.
 */
export function sqliteWritesInProcess(): number {
  return writes;
}

/**
 * Whether `error` is SQLite's "database is locked" (SQLITE_BUSY, SQLITE_LOCKED and their extended
 * codes): another connection held the lock past the busy timeout. better-sqlite3 names the code;
 * `node:sqlite` gives the number (`errcode`, its low byte the primary code: 5 busy, 6 locked).
 */
function isLockedError(error: unknown): boolean {
  const e = error as { code?: unknown; errcode?: unknown } | null;
  if (typeof e?.code === 'string' && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(e.code)) return true;
  return typeof e?.errcode === 'number' && [5, 6].includes(e.errcode & 0xff);
}

/**
 * `fn`, with a locked database reported as `unavailable` (a retry may succeed), like an
 * unreachable PostgreSQL, instead of as the driver's error (an internal error to a caller).
 */
function lockAsUnavailable<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    try {
      return fn(...args);
    } catch (error) {
      if (!isLockedError(error)) throw error;
      throw new GatehouseError(
        'unavailable',
        'The SQLite database is locked by another connection (it stayed locked past the busy timeout); retry.',
        { cause: error },
      );
    }
  };
}

/** The statement's methods, each reporting a locked database as `unavailable` (see {@link lockAsUnavailable}). */
function lockGuarded(statement: SqliteStatement): SqliteStatement {
  return {
    run: lockAsUnavailable(statement.run),
    get: lockAsUnavailable(statement.get),
    all: lockAsUnavailable(statement.all),
    rows: lockAsUnavailable(statement.rows),
  };
}

/** `fn`, each call counted in {@link sqliteWritesInProcess}. */
function counted<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    writes += 1;
    return fn(...args);
  };
}

/** `statement`, counting its runs in {@link sqliteWritesInProcess} unless `sql` is a query. */
function countingWrites(sql: string, statement: SqliteStatement): SqliteStatement {
  if (READ_ONLY_SQL.test(sql)) return statement;
  return {
    run: counted(statement.run),
    get: counted(statement.get),
    all: counted(statement.all),
    rows: counted(statement.rows),
  };
}

/** Runs BEGIN/COMMIT/ROLLBACK as statements prepared once (cheaper than `exec` each time). */
function controlStatements(db: { prepare(sql: string): { run(): unknown } }): (sql: string) => void {
  const prepared = new Map<string, { run(): unknown }>();
  return lockAsUnavailable((sql: string) => {
    let statement = prepared.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      prepared.set(sql, statement);
    }
    statement.run();
  });
}

function openWithNodeSqlite(
  sqlite: NodeSqliteModule,
  filename: string,
  options: SqliteDatabaseOptions,
): SqliteDatabase {
  const db = new sqlite.DatabaseSync(filename, { readOnly: options.readOnly ?? false });
  // Where the driver cannot say (before Node 22.16), the store's own BEGIN/COMMIT keep count.
  const reportsTransaction = typeof db.isTransaction === 'boolean';
  let open = false;
  const runControl = controlStatements(db);
  return {
    driver: 'node:sqlite',
    prepare(sql) {
      const stmt = db.prepare(sql);
      let arrays: NodeSqliteStatement | undefined;
      const arrayRows = (params: unknown[]): unknown[][] => {
        if (typeof stmt.setReturnArrays !== 'function') {
          // Before Node 22.16: the row objects keep the SELECT's column order.
          return stmt.all(...params).map((r) => Object.values(r));
        }
        if (!arrays) {
          arrays = db.prepare(sql);
          arrays.setReturnArrays!(true);
        }
        return arrays.all(...params) as unknown as unknown[][];
      };
      return countingWrites(
        sql,
        lockGuarded({
          run: (...params) => ({ changes: Number(stmt.run(...params).changes) }),
          get: (...params) => stmt.get(...params),
          all: (...params) => stmt.all(...params),
          rows: (...params) => arrayRows(params),
        }),
      );
    },
    exec: counted(
      lockAsUnavailable((sql: string) => {
        db.exec(sql);
      }),
    ),
    begin(mode = 'DEFERRED') {
      runControl(`BEGIN ${mode}`);
      open = true;
    },
    commit() {
      runControl('COMMIT');
      open = false;
    },
    rollback() {
      runControl('ROLLBACK');
      open = false;
    },
    get inTransaction() {
      return reportsTransaction ? db.isTransaction === true : open;
    },
    close: () => db.close(),
  };
}

function openWithBetterSqlite3(
  Database: BetterSqliteConstructor,
  filename: string,
  options: SqliteDatabaseOptions,
): SqliteDatabase {
  const db = new Database(filename, { readonly: options.readOnly ?? false });
  const runControl = controlStatements(db);
  return {
    driver: 'better-sqlite3',
    prepare(sql) {
      const stmt = db.prepare(sql);
      let arrays: BetterSqliteStatement | undefined;
      const rows = (params: unknown[]): unknown[][] => {
        arrays ??= db.prepare(sql).raw(true);
        return arrays.all(...params) as unknown as unknown[][];
      };
      return countingWrites(
        sql,
        lockGuarded({
          run: (...params) => stmt.run(...params),
          get: (...params) => stmt.get(...params),
          all: (...params) => stmt.all(...params),
          rows: (...params) => rows(params),
        }),
      );
    },
    exec: counted(
      lockAsUnavailable((sql: string) => {
        db.exec(sql);
      }),
    ),
    begin: (mode = 'DEFERRED') => runControl(`BEGIN ${mode}`),
    commit: () => runControl('COMMIT'),
    rollback: () => runControl('ROLLBACK'),
    get inTransaction() {
      return db.inTransaction;
    },
    close: () => db.close(),
  };
}
