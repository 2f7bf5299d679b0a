/**
 * Service configuration: flags win over environment variables, which win over defaults.
 */
import { GatehouseError, type GatehouseOptions } from '../../src/index.js';
import { createHostOriginCheck } from '../mcp/index.js';

/** Where the database is: what every command that opens it reads. */
export interface StoreConfig {
  /** SQLite file. @default .gatehouse/gatehouse.db (env GATEHOUSE_DB) */
  database: string;
  /** PostgreSQL URL; when set, SQLite is not used. (env DATABASE_URL) */
  databaseUrl: string | undefined;
  /** PostgreSQL schema. @default public (env GATEHOUSE_DB_SCHEMA) */
  databaseSchema: string | undefined;
  /** SQLite durability. @default normal (env GATEHOUSE_DURABILITY) */
  durability: 'normal' | 'full';
}

/** Everything `gatehouse serve` and `gatehouse mcp` need to open a Gatehouse. */
export interface ServiceConfig extends StoreConfig {
  /** Policy file; the built-in policy when unset. (env GATEHOUSE_POLICY) */
  policy: string | undefined;
  /** Redis URL for shared TTL data. (env REDIS_URL) */
  redisUrl: string | undefined;
  /** Log level. @default info (env GATEHOUSE_LOG_LEVEL) */
  logLevel: string;
}

/** `serve` only. */
export interface ServeConfig extends ServiceConfig {
  /** Signs checkpoints and verifies stored ones (`--checkpoint-key`, `--public-key`). @default none */
  checkpointKeys?: Pick<GatehouseOptions, 'checkpointSigner' | 'checkpointPublicKey'>;
  /** Minutes between retention runs; 0: none. @default 60 (env GATEHOUSE_RETENTION_INTERVAL) */
  retentionIntervalMinutes?: number;
  /**
   * Where scheduled retention writes each prune's checkpoint, `<tenant>-<seq>.json`.
   * @default .gatehouse/checkpoints (env GATEHOUSE_CHECKPOINT_DIR)
   */
  checkpointDir?: string;
  /** @default 127.0.0.1 (env GATEHOUSE_HOST) */
  host: string;
  /** @default 8787 (env GATEHOUSE_PORT) */
  port: number;
  /** Development only: allow http:// webhook URLs on loopback. @default false (env GATEHOUSE_ALLOW_INSECURE_LOOPBACK_WEBHOOKS=1) */
  allowInsecureLoopbackWebhooks: boolean;
  /** Requests per second per key. @default 100 (env GATEHOUSE_RATE_LIMIT; 0 turns it off) */
  rateLimit: number;
  /** @default 65536 (env GATEHOUSE_MAX_BODY_BYTES) */
  maxBodyBytes: number;
  /** Idempotent responses kept in memory (without Redis), at most. @default 10000 (env GATEHOUSE_IDEMPOTENCY_MAX_ENTRIES) */
  idempotencyMaxEntries: number;
  /** Their bytes, at most. @default 33554432 (32 MiB; env GATEHOUSE_IDEMPOTENCY_MAX_BYTES) */
  idempotencyMaxBytes: number;
  /**
   * `Host` values /mcp accepts (`name` or `name:port`, `*` = any).
   * @default the loopback names, plus `host` when it is one specific address (env GATEHOUSE_MCP_ALLOWED_HOSTS)
   */
  mcpAllowedHosts: string[] | undefined;
  /**
   * `Origin` values /mcp accepts (`scheme://host[:port]`, `*` = any); requests without Origin always pass.
   * @default origins on the allowed hosts (env GATEHOUSE_MCP_ALLOWED_ORIGINS)
   */
  mcpAllowedOrigins: string[] | undefined;
  /** Serve the web console at `/ui/`. @default true (`--no-ui`, env GATEHOUSE_UI=0 turn it off) */
  ui: boolean;
  /**
   * Trusted token issuers (YAML or JSON file); needs `publicUrl`.
   * @default none: API keys only (env GATEHOUSE_IDENTITY_CONFIG)
   */
  identityConfig: string | undefined;
  /**
   * The service's public base URL (`https://gatehouse.example.org`): `/mcp`'s OAuth resource
   * identifier is built from it, never from a request's Host header. (env GATEHOUSE_PUBLIC_URL)
   */
  publicUrl: string | undefined;
}

/** Checks `--public-url`: an absolute http(s) URL without query or fragment; the trailing `/` dropped. */
function publicUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new GatehouseError('invalid_request', `--public-url must be an absolute URL, got '${value}'.`);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.search !== '' || url.hash !== '') {
    throw new GatehouseError(
      'invalid_request',
      `--public-url must be an http(s) URL without query or fragment, got '${value}'.`,
    );
  }
  return url.href.replace(/\/+$/, '');
}

type Flags = Record<string, unknown>;
const env = process.env;

function flagOrEnv(flags: Flags, flag: string, envName: string): string | undefined {
  const v = flags[flag];
  if (typeof v === 'string' && v !== '') return v;
  const e = env[envName];
  return e === undefined || e === '' ? undefined : e;
}

function integer(value: string | undefined, name: string, fallback: number, min = 0, max = 2 ** 31): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new GatehouseError(
      'invalid_request',
      `${name} must be an integer from ${min} to ${max}, got '${value}'.`,
    );
  }
  return n;
}

/** A comma-separated list; `undefined` when not given. */
export function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Checks each entry as the /mcp handler will, so a typo stops `serve` with the flag's name. */
function checkedList(
  value: string | undefined,
  name: string,
  check: (entries: string[]) => unknown,
): string[] | undefined {
  const entries = list(value);
  if (entries === undefined) return undefined;
  try {
    check(entries);
  } catch (error) {
    throw new GatehouseError('invalid_request', `${name}: ${(error as Error).message}`);
  }
  return entries;
}

/** Reads where the database is (the flags every command that opens it takes). */
export function readStoreConfig(flags: Flags): StoreConfig {
  const durability = flagOrEnv(flags, 'durability', 'GATEHOUSE_DURABILITY') ?? 'normal';
  if (durability !== 'normal' && durability !== 'full') {
    throw new GatehouseError(
      'invalid_request',
      `--durability must be 'normal' or 'full', got '${durability}'.`,
    );
  }
  return {
    database: flagOrEnv(flags, 'database', 'GATEHOUSE_DB') ?? '.gatehouse/gatehouse.db',
    databaseUrl: flagOrEnv(flags, 'databaseUrl', 'DATABASE_URL'),
    databaseSchema: flagOrEnv(flags, 'databaseSchema', 'GATEHOUSE_DB_SCHEMA'),
    durability,
  };
}

/** Reads the options of the commands that run a policy (`serve`, `mcp`, `keys create`, `policy history`). */
export function readServiceConfig(flags: Flags): ServiceConfig {
  return {
    ...readStoreConfig(flags),
    policy: flagOrEnv(flags, 'policy', 'GATEHOUSE_POLICY'),
    redisUrl: flagOrEnv(flags, 'redisUrl', 'REDIS_URL'),
    logLevel: flagOrEnv(flags, 'logLevel', 'GATEHOUSE_LOG_LEVEL') ?? 'info',
  };
}

/** Reads `serve`'s options. */
export function readServeConfig(flags: Flags): ServeConfig {
  const insecure =
    flags['allowInsecureLoopbackWebhooks'] === true ||
    env['GATEHOUSE_ALLOW_INSECURE_LOOPBACK_WEBHOOKS'] === '1';
  return {
    ...readServiceConfig(flags),
    host: flagOrEnv(flags, 'host', 'GATEHOUSE_HOST') ?? '127.0.0.1',
    port: integer(flagOrEnv(flags, 'port', 'GATEHOUSE_PORT'), '--port', 8787, 0, 65535),
    allowInsecureLoopbackWebhooks: insecure,
    rateLimit: integer(flagOrEnv(flags, 'rateLimit', 'GATEHOUSE_RATE_LIMIT'), '--rate-limit', 100),
    maxBodyBytes: integer(
      flagOrEnv(flags, 'maxBodyBytes', 'GATEHOUSE_MAX_BODY_BYTES'),
      '--max-body-bytes',
      65536,
      1024,
    ),
    idempotencyMaxEntries: integer(
      flagOrEnv(flags, 'idempotencyMaxEntries', 'GATEHOUSE_IDEMPOTENCY_MAX_ENTRIES'),
      '--idempotency-max-entries',
      10_000,
      1,
    ),
    idempotencyMaxBytes: integer(
      flagOrEnv(flags, 'idempotencyMaxBytes', 'GATEHOUSE_IDEMPOTENCY_MAX_BYTES'),
      '--idempotency-max-bytes',
      32 * 2 ** 20,
      1024,
    ),
    mcpAllowedHosts: checkedList(
      flagOrEnv(flags, 'mcpAllowedHosts', 'GATEHOUSE_MCP_ALLOWED_HOSTS'),
      '--mcp-allowed-hosts',
      (allowedHosts) => createHostOriginCheck({ allowedHosts }),
    ),
    ui: flags['ui'] !== false && env['GATEHOUSE_UI'] !== '0',
    mcpAllowedOrigins: checkedList(
      flagOrEnv(flags, 'mcpAllowedOrigins', 'GATEHOUSE_MCP_ALLOWED_ORIGINS'),
      '--mcp-allowed-origins',
      (allowedOrigins) => createHostOriginCheck({ allowedOrigins }),
    ),
    identityConfig: flagOrEnv(flags, 'identityConfig', 'GATEHOUSE_IDENTITY_CONFIG'),
    publicUrl: publicUrl(flagOrEnv(flags, 'publicUrl', 'GATEHOUSE_PUBLIC_URL')),
  };
}

/**
 * A comma-separated flag value whose entries must each be one of `allowed`.
 * @throws {GatehouseError} `invalid_request` naming the flag, every unknown entry and the allowed ones
 * @example
 * listOfChoices('admin,bogus', { flag: '--scopes', noun: 'scope', allowed: SCOPES });
 * // throws "--scopes: unknown scope 'bogus'; allowed: admin, …"
 */
export function listOfChoices(
  value: string,
  options: { flag: string; noun: string; allowed: readonly string[] },
): string[] {
  const entries = list(value) ?? [];
  const unknown = entries.filter((entry) => !options.allowed.includes(entry));
  if (unknown.length > 0) {
    const nouns = unknown.length === 1 ? options.noun : `${options.noun}s`;
    throw new GatehouseError(
      'invalid_request',
      `${options.flag}: unknown ${nouns} ${unknown.map((u) => `'${u}'`).join(', ')}; allowed: ${options.allowed.join(', ')}.`,
    );
  }
  return entries;
}
