/**
 * Opens the store and the policy a configuration names, and builds the core on them. Shared by
 * every command, so `serve`, `mcp`, `keys` and `history` see the same database the same way.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  type CompiledPolicy,
  createGatehouse,
  defaultPolicy,
  type Gatehouse,
  GatehouseError,
  type GatehouseOptions,
  loadPolicyFile,
  type Store,
} from '../../src/index.js';
import type { PostgresStore } from '../postgres/index.js';
import type { ServiceConfig, StoreConfig } from './config.js';

/** How a command opens the store. */
export interface OpenStoreOptions {
  /**
   * Create a missing SQLite file (and its folder), as `serve`, `mcp`, `keys create` and `import`
   * do. Other commands only work on a database that exists: they refuse a missing file, so a
   * mistyped path is an error rather than a new, empty database.
   * @default false
   */
  create?: boolean;
}

/**
 * Opens the configured store: PostgreSQL when a URL is given, else the SQLite file.
 * @throws {GatehouseError} `not_found` for a missing SQLite file or a PostgreSQL schema Gatehouse
 * never set up, unless `options.create`
 */
export async function openStore(config: StoreConfig, options: OpenStoreOptions = {}): Promise<Store> {
  if (config.databaseUrl) {
    const { openPostgresStore } = await import('../postgres/index.js');
    const pgOptions = {
      connectionString: config.databaseUrl,
      ...(config.databaseSchema ? { schema: config.databaseSchema } : {}),
    };
    // Opening migrates, which creates the schema: a mistyped --database-schema would become a
    // new, empty database. Only a command that may create one opens a schema not set up yet.
    if (!options.create)
      await assertPostgresSchemaExists(await openPostgresStore({ ...pgOptions, migrate: false }));
    return openPostgresStore(pgOptions);
  }
  if (!options.create && config.database !== ':memory:' && !existsSync(config.database)) {
    throw new GatehouseError(
      'not_found',
      `No database at ${resolve(config.database)} (check --database or GATEHOUSE_DB; \`gatehouse serve\` creates one).`,
    );
  }
  const { openSqliteStore } = await import('../sqlite/index.js');
  return openSqliteStore({ filename: config.database, durability: config.durability });
}

/**
 * Refuses (and closes) a PostgreSQL store whose schema has no `schema_migrations`: Gatehouse has
 * never set it up. Closes the store in either case.
 * @throws {GatehouseError} `not_found`
 */
async function assertPostgresSchemaExists(store: PostgresStore): Promise<void> {
  try {
    const { rows } = await store.pool.query<{ found: boolean }>(
      "SELECT to_regclass(quote_ident($1) || '.schema_migrations') IS NOT NULL AS found",
      [store.schema],
    );
    if (rows[0]?.found !== true) {
      throw new GatehouseError(
        'not_found',
        `No Gatehouse database in PostgreSQL schema ${store.schema} (check --database-schema or GATEHOUSE_DB_SCHEMA; \`gatehouse serve\` creates one).`,
      );
    }
  } finally {
    await store.close();
  }
}

/** Loads the configured policy, or the built-in one. Fails closed: a bad file throws. */
export async function loadPolicy(config: Partial<Pick<ServiceConfig, 'policy'>>): Promise<CompiledPolicy> {
  return config.policy ? loadPolicyFile(config.policy) : defaultPolicy();
}

/**
 * Who the configured policy is recorded as when it becomes a tenant's active revision (`serve`
 * and `mcp` only: read-only commands never record one).
 */
export function policyOriginOf(config: Pick<ServiceConfig, 'policy'>): 'file' | 'builtin' {
  return config.policy ? 'file' : 'builtin';
}

/**
 * Opens store and policy and creates the core; without `config.policy`, the built-in policy.
 * @throws {GatehouseError} as {@link openStore} and {@link loadPolicy} do
 */
export async function openGatehouse(
  config: StoreConfig & Partial<Pick<ServiceConfig, 'policy'>>,
  extra: Omit<GatehouseOptions, 'store' | 'policy'> = {},
  options: OpenStoreOptions = {},
): Promise<Gatehouse> {
  const policy = await loadPolicy(config);
  const store = await openStore(config, options);
  return createGatehouse({ ...extra, store, policy });
}

/** Where a store lives, for messages (never prints a password). */
export function describeStore(config: Pick<StoreConfig, 'database' | 'databaseUrl'>): string {
  if (!config.databaseUrl) return `SQLite ${config.database}`;
  try {
    const url = new URL(config.databaseUrl);
    url.password = '';
    return `PostgreSQL ${url.host}${url.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}
