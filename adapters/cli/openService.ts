/**
 * Opens the store and the policy a configuration names, and builds the core on them. Shared by
 * every command, so `serve`, `mcp`, `keys` and `history` see the same database the same way.
 */
import {
  type CompiledPolicy,
  createGatehouse,
  defaultPolicy,
  type Gatehouse,
  type GatehouseOptions,
  loadPolicyFile,
  type Store,
} from '../../src/index.js';
import type { ServiceConfig } from './config.js';

/** Opens the configured store: PostgreSQL when a URL is given, else the SQLite file. */
export async function openStore(
  config: Pick<ServiceConfig, 'database' | 'databaseUrl' | 'databaseSchema' | 'durability'>,
): Promise<Store> {
  if (config.databaseUrl) {
    const { openPostgresStore } = await import('../postgres/index.js');
    return openPostgresStore({
      connectionString: config.databaseUrl,
      ...(config.databaseSchema ? { schema: config.databaseSchema } : {}),
    });
  }
  const { openSqliteStore } = await import('../sqlite/index.js');
  return openSqliteStore({ filename: config.database, durability: config.durability });
}

/** Loads the configured policy, or the built-in one. Fails closed: a bad file throws. */
export async function loadPolicy(config: Pick<ServiceConfig, 'policy'>): Promise<CompiledPolicy> {
  return config.policy ? loadPolicyFile(config.policy) : defaultPolicy();
}

/**
 * Who the configured policy is recorded as when it becomes a tenant's active revision (`serve`
 * and `mcp` only: read-only commands never record one).
 */
export function policyOriginOf(config: Pick<ServiceConfig, 'policy'>): 'file' | 'builtin' {
  return config.policy ? 'file' : 'builtin';
}

/** Opens store and policy and creates the core. */
export async function openGatehouse(
  config: ServiceConfig,
  extra: Omit<GatehouseOptions, 'store' | 'policy'> = {},
): Promise<Gatehouse> {
  const policy = await loadPolicy(config);
  const store = await openStore(config);
  return createGatehouse({ ...extra, store, policy });
}

/** Where a store lives, for messages (never prints a password). */
export function describeStore(config: Pick<ServiceConfig, 'database' | 'databaseUrl'>): string {
  if (!config.databaseUrl) return `SQLite ${config.database}`;
  try {
    const url = new URL(config.databaseUrl);
    url.password = '';
    return `PostgreSQL ${url.host}${url.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}
