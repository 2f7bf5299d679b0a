/**
 * API keys: random, prefixed, shown once, stored only as SHA-256, looked up by hash and compared
 * in constant time. A key belongs to one tenant, carries scopes, and caps the sources (and so the
 * trust) its holder may claim.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { GatehouseError, type GatehouseErrorOptions } from '../errors.js';
import type { IdGenerator, RandomBytes } from '../runtime.js';
import { KeyLabelSchema, type Scope } from '../schemas.js';
import type { KeyStore, StoredApiKey } from '../store.js';
import { parseInput } from '../validation.js';
import { type PrincipalRecord, principalOfKey } from './principalRecord.js';

/** The prefix every Gatehouse key starts with. */
export const KEY_PREFIX = 'gh_';

/** Sources a new key may write unless told otherwise: everything but `system`. */
export const DEFAULT_KEY_SOURCES = ['user_input', 'tool_output', 'retrieval', 'agent_inference'] as const;

/** Who is calling: what an authenticated key grants. */
export interface Principal {
  tenantId: string;
  keyId: string;
  /** The key's label (`gatehouse keys create --name`), for `GET /v1/me`. */
  name?: string;
  scopes: readonly Scope[];
  /** Sources this caller may write. */
  sources: readonly string[];
  /** The key's labels (`finance`), which a policy's approvers can name. */
  labels: readonly string[];
  /**
   * Who this is, as events record it: the key, or a token's issuer, subject and client.
   * @default `{ kind: 'key', key_id: keyId }`
   */
  record?: PrincipalRecord;
}

/** Options for {@link createApiKey}. */
export interface CreateApiKeyOptions {
  tenantId?: string;
  name?: string;
  /** @default ['admin'] */
  scopes?: readonly Scope[];
  /** @default everything but `system` */
  sources?: readonly string[];
  /**
   * Labels a policy's `approval.approvers` can name (`finance`).
   * @default []
   * @throws {GatehouseError} `invalid_request` for a label that is not lower-case letters, digits, `_ . -`
   */
  labels?: readonly string[];
}

/**
 * Creates the bootstrap key of a first start: only when the store has no key at all, atomically
 * across instances starting together. Undefined when a key already existed.
 */
export async function createFirstApiKey(
  store: KeyStore,
  deps: { ids: IdGenerator; randomBytes: RandomBytes; now: Date },
  options: CreateApiKeyOptions = {},
): Promise<{ secret: string; key: StoredApiKey } | undefined> {
  const made = buildApiKey(deps, options);
  return (await store.insertFirstApiKey(made.key)) ? made : undefined;
}

/** SHA-256 (hex) of a key's secret. */
export function hashApiKey(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/**
 * Creates and stores a key; the returned `secret` is the only time it is visible.
 * @example const { secret } = await createApiKey(store, deps, { scopes: ['gate:evaluate'] });
 */
export async function createApiKey(
  store: KeyStore,
  deps: { ids: IdGenerator; randomBytes: RandomBytes; now: Date },
  options: CreateApiKeyOptions = {},
): Promise<{ secret: string; key: StoredApiKey }> {
  const made = buildApiKey(deps, options);
  await store.insertApiKey(made.key);
  return made;
}

function buildApiKey(
  deps: { ids: IdGenerator; randomBytes: RandomBytes; now: Date },
  options: CreateApiKeyOptions,
): { secret: string; key: StoredApiKey } {
  const secret = KEY_PREFIX + Buffer.from(deps.randomBytes(32)).toString('base64url');
  const key: StoredApiKey = {
    id: deps.ids('key'),
    tenant_id: options.tenantId ?? 'default',
    name: options.name ?? 'key',
    prefix: secret.slice(0, KEY_PREFIX.length + 6),
    hash: hashApiKey(secret),
    scopes: [...(options.scopes ?? ['admin'])],
    sources: [...(options.sources ?? DEFAULT_KEY_SOURCES)],
    labels: [...new Set((options.labels ?? []).map((label) => parseInput(KeyLabelSchema, label, 'label')))],
    created_at: deps.now.toISOString(),
    revoked_at: null,
  };
  return { secret, key };
}

/**
 * Resolves a bearer token to a principal.
 * @throws {GatehouseError} `unauthorized` for a malformed, unknown or revoked key (one message for all, so
 *   the answer reveals nothing about which)
 */
export async function authenticateApiKey(store: KeyStore, token: string): Promise<Principal> {
  // Built only on failure: an error captures a stack, which the successful path never needs.
  const unauthorized = () =>
    new GatehouseError('unauthorized', 'The API key is missing, malformed, unknown or revoked.');
  if (!token.startsWith(KEY_PREFIX) || token.length > 200) throw unauthorized();
  const tokenHash = hashApiKey(token);
  const key = await store.findApiKeyByHash(tokenHash);
  if (!key || key.revoked_at !== null) throw unauthorized();
  // A store that caches keys hands out the same object again: its principal is built once.
  let principal = keyPrincipals.get(key);
  if (principal) return principal;
  if (!timingSafeEqual(Buffer.from(key.hash, 'hex'), Buffer.from(tokenHash, 'hex'))) throw unauthorized();
  principal = Object.freeze({
    tenantId: key.tenant_id,
    keyId: key.id,
    name: key.name,
    scopes: key.scopes,
    sources: key.sources,
    labels: key.labels,
    record: Object.freeze(principalOfKey(key.id)),
  });
  keyPrincipals.set(key, principal);
  return principal;
}

/** The principal of each key object a store handed out, while the store keeps that object. */
const keyPrincipals = new WeakMap<StoredApiKey, Principal>();

/** True when the principal holds `scope` (or `admin`); for a list, any one of them. */
export function hasScope(principal: Pick<Principal, 'scopes'>, scope: Scope | readonly Scope[]): boolean {
  if (principal.scopes.includes('admin')) return true;
  return typeof scope === 'string'
    ? principal.scopes.includes(scope)
    : scope.some((s) => principal.scopes.includes(s));
}

/**
 * @throws {GatehouseError} `forbidden` when the principal lacks `scope` (for a list: all of them)
 */
export function requireScope(
  principal: Pick<Principal, 'scopes'> & { record?: PrincipalRecord | undefined },
  scope: Scope | readonly Scope[],
): void {
  if (!hasScope(principal, scope)) {
    const named =
      typeof scope === 'string'
        ? `the '${scope}' scope`
        : `one of the scopes ${scope.map((s) => `'${s}'`).join(', ')}`;
    throw new GatehouseError('forbidden', `This API key lacks ${named}.`, {
      ...(typeof scope === 'string' ? missingScope(scope, principal.record) : {}),
    });
  }
}

/**
 * The options of a `forbidden` error for a missing scope: the scope, and the issuer of the
 * caller's token when it holds one (see {@link GatehouseErrorOptions.tokenIssuer}).
 */
export function missingScope(
  scope: Scope,
  record: PrincipalRecord | undefined,
): Pick<GatehouseErrorOptions, 'requiredScope' | 'tokenIssuer'> {
  return { requiredScope: scope, ...(record?.kind === 'oidc' ? { tokenIssuer: record.iss } : {}) };
}
