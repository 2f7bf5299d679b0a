/**
 * Bearer tokens from trusted issuers → principals. Gatehouse is a resource server: it verifies
 * access tokens (JWTs against the issuer's key set with `jose`, opaque ones by RFC 7662
 * introspection where configured), maps their claims to a tenant, scopes, approver labels and
 * sources, and never issues or forwards a token.
 */
import { createHash } from 'node:crypto';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  type JSONWebKeySet,
  type JWTPayload,
  errors as joseErrors,
  jwtVerify,
} from 'jose';
import { GatehouseError } from '../errors.js';
import type { Scope } from '../schemas.js';
import { DEFAULT_KEY_SOURCES, type Principal } from './apiKeys.js';
import { ASYMMETRIC_ALGORITHMS, type IdentityConfig, type IssuerConfig } from './identityConfig.js';
import { principalOfToken } from './principalRecord.js';

/** Which face a token is presented to: `/mcp` needs the MCP URL as audience, `/v1` a configured one. */
export type TokenTarget = 'mcp' | 'api';

/** Options for {@link createTokenAuthenticator}. */
export interface TokenAuthenticatorOptions {
  config: IdentityConfig;
  /**
   * The canonical URL of `/mcp` (the RFC 8707 resource, from the configured public URL, never
   * from a Host header). Without it, tokens are not accepted on `/mcp`.
   */
  mcpResource?: string | undefined;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default () => new Date() */
  now?: () => Date;
}

/** Verifies tokens; what the HTTP face asks of identity. */
export interface TokenAuthenticator {
  /**
   * @throws {GatehouseError} `unauthorized` (with `tokenError: 'invalid_token'`) for a token that
   *   is not valid here; `forbidden` for a valid token that maps to no tenant or no scope;
   *   `unavailable` when the issuer's keys or introspection cannot be reached
   */
  authenticate(token: string, target: TokenTarget): Promise<Principal>;
  /**
   * The token scope values that grant `scope` (or `admin`): what a step-up asks for. With
   * `issuer`, only that issuer's: a value another issuer maps means nothing to the caller's.
   */
  scopesGranting(scope: Scope, issuer?: string): string[];
  /** Every token scope value the configuration maps (`scopes_supported`). */
  readonly scopesSupported: readonly string[];
  /** The trusted issuers (`authorization_servers`). */
  readonly issuers: readonly string[];
}

const invalid = (message: string, cause?: unknown) =>
  new GatehouseError('unauthorized', message, { tokenError: 'invalid_token', cause });

const unavailable = (message: string, cause?: unknown) =>
  new GatehouseError('unavailable', message, { cause });

/**
 * A claim by name, or by dotted path into nested claims, as a list of strings: a top-level claim
 * whose name holds dots (Auth0's namespaced `https://example.com/roles`) is found by its whole
 * name first. A scope claim written as one string is split on spaces: `scope` always is
 * (RFC 8693, RFC 9068), and Entra ID writes `scp` that way too.
 */
function claimValues(payload: Record<string, unknown>, claim: string): string[] {
  let value: unknown = payload;
  if (Object.hasOwn(payload, claim)) value = payload[claim];
  else {
    for (const part of claim.split('.')) {
      if (value === null || typeof value !== 'object') return [];
      value = Object.hasOwn(value, part) ? (value as Record<string, unknown>)[part] : undefined;
    }
  }
  if (typeof value === 'string') return isScopeClaim(claim) ? value.split(' ').filter(Boolean) : [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return [];
}

/**
 * A short, stable, pseudonymous ID of an issuer's subject: used where a key ID is (rate limits,
 * self-approval, idempotency). A token without `sub` is its client's (`cli_`), so a client and a
 * user whose `sub` happens to be that client's ID never share one.
 */
function subjectId(iss: string, sub: string, kind: 'sub' | 'cli' = 'sub'): string {
  return `${kind}_${createHash('sha256').update(`${iss}\n${sub}`).digest('base64url').slice(0, 22)}`;
}

function isScopeClaim(claim: string): boolean {
  return claim === 'scope' || claim === 'scp';
}

/** Explains why jose refused a token, without echoing the token. */
function describeJoseError(error: unknown): GatehouseError {
  if (error instanceof joseErrors.JWTExpired) return invalid('The token has expired.', error);
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case 'aud':
        return invalid('The token is not meant for this resource (audience).', error);
      case 'iss':
        return invalid('The token is not from the issuer it names.', error);
      case 'nbf':
        return invalid('The token is not valid yet.', error);
      default:
        return invalid(`The token's '${error.claim}' claim is not valid: ${error.reason}.`, error);
    }
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed) {
    return invalid('The token is signed with an algorithm this issuer may not use.', error);
  }
  if (error instanceof joseErrors.JWKSNoMatchingKey) {
    return invalid("No key of the issuer's key set verifies the token.", error);
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
    return invalid('The token signature is not valid.', error);
  }
  if (!(error instanceof joseErrors.JOSEError) || error instanceof joseErrors.JWKSTimeout) {
    return new GatehouseError('unavailable', "The token issuer's keys could not be fetched.", {
      cause: error,
    });
  }
  if (error instanceof joseErrors.JWKSInvalid) {
    return new GatehouseError('unavailable', "The token issuer's key set is not valid.", { cause: error });
  }
  return invalid('The token is not a valid signed JWT.', error);
}

/** An introspection answer (RFC 7662): the token's claims and whether it is active. */
type IntrospectionPayload = JWTPayload & { active?: unknown };

/** How long an introspection answer is reused at most (a token revoked at the IdP stops within it). */
const INTROSPECTION_TTL_MS = 30_000;

/** Introspection answers kept at most; the oldest goes first. */
const INTROSPECTION_CACHE_MAX = 10_000;

/**
 * Runs a fetch from an issuer unless one failed less than `ms` ago: then answers `unavailable`
 * at once. jose starts its cooldown only after a key set fetch that succeeded, so while an IdP is
 * down every made-up `kid`, and every forged token naming a trusted issuer, would fetch again.
 */
function failureCooldown(ms: number, now: () => Date) {
  let failedAt = Number.NEGATIVE_INFINITY;
  return async <T>(what: string, fetchIt: () => Promise<T>): Promise<T> => {
    const wait = failedAt + ms - now().getTime();
    if (wait > 0) {
      const message = `${what} failed less than ${ms / 1000} s ago; not fetched again yet.`;
      throw new GatehouseError('unavailable', message, { retryAfter: wait / 1000 });
    }
    try {
      return await fetchIt();
    } catch (error) {
      failedAt = now().getTime();
      throw error instanceof GatehouseError
        ? error
        : unavailable(`${what} could not be fetched or read.`, error);
    }
  };
}

interface IssuerRuntime {
  config: IssuerConfig;
  keys(): Promise<ReturnType<typeof createRemoteJWKSet>>;
}

/**
 * Creates the authenticator over a parsed configuration.
 * @example
 * const tokens = createTokenAuthenticator({ config, mcpResource: 'https://gh.example.org/mcp' });
 * const principal = await tokens.authenticate(bearer, 'mcp');
 */
export function createTokenAuthenticator(options: TokenAuthenticatorOptions): TokenAuthenticator {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const now = options.now ?? (() => new Date());
  const byIssuer = new Map<string, IssuerRuntime>();
  for (const config of options.config.issuers) {
    let keySet: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
    const cooldownMs = config.jwks_cooldown_seconds * 1000;
    const discoveryCooldown = failureCooldown(cooldownMs, now);
    const keySetCooldown = failureCooldown(cooldownMs, now);
    const jwksUrl = async (): Promise<URL> => {
      if (config.jwks_uri) return new URL(config.jwks_uri);
      const base = config.issuer.replace(/\/+$/, '');
      const res = await fetchImpl(`${base}/.well-known/openid-configuration`, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(5000),
      });
      const doc = res.ok ? ((await res.json()) as { jwks_uri?: unknown; issuer?: unknown } | null) : null;
      if (typeof doc?.jwks_uri !== 'string' || doc.issuer !== config.issuer) {
        throw unavailable(`The discovery document of ${config.issuer} names no jwks_uri for that issuer.`);
      }
      return new URL(doc.jwks_uri);
    };
    /**
     * jose's key set fetch, checked here: an error answer, a body that is not JSON or not a key
     * set is the IdP failing (`unavailable`), never the token's fault, and starts the cooldown.
     */
    const fetchKeySet = async (url: string, init: RequestInit): Promise<Response> => {
      const res = await fetchImpl(url, init);
      if (res.status !== 200) {
        throw unavailable(`The key set of ${config.issuer} answered HTTP ${res.status}.`);
      }
      const body = await res.json();
      createLocalJWKSet(body as JSONWebKeySet); // throws unless it is a JSON Web Key Set
      return Response.json(body);
    };
    byIssuer.set(config.issuer, {
      config,
      keys() {
        if (keySet === undefined) {
          keySet = discoveryCooldown(`The discovery document of ${config.issuer}`, jwksUrl).then((url) =>
            createRemoteJWKSet(url, {
              cooldownDuration: cooldownMs,
              timeoutDuration: 5000,
              [customFetch]: (input, init) =>
                keySetCooldown(`The key set of ${config.issuer}`, () => fetchKeySet(input, init)),
            }),
          );
          // A failed discovery is tried again after the cooldown, not remembered.
          keySet.catch(() => {
            keySet = undefined;
          });
        }
        return keySet;
      },
    });
  }

  const audiencesFor = (issuer: IssuerConfig, target: TokenTarget): string[] => {
    if (target === 'mcp') return options.mcpResource ? [options.mcpResource] : [];
    return issuer.audiences;
  };

  /** Claims → principal; refuses a token that reaches no tenant or no scope. */
  function principalOf(issuer: IssuerConfig, payload: JWTPayload): Principal {
    const claims = payload as Record<string, unknown>;
    // A token bound to a key (DPoP's `jkt`, mTLS's `x5t#S256`) is usable only with a proof of
    // possession, which a bearer request does not carry and Gatehouse does not check: taken as a
    // bearer, a stolen bound token would work here (RFC 8705 §3, RFC 9449 §7).
    if (claims['cnf'] !== undefined) {
      throw invalid('The token is bound to a key (cnf); only bearer tokens are accepted here.');
    }
    const clientId = claims['client_id'] ?? claims['azp'];
    // A client-credentials token's subject is its client (RFC 9068 §2.2); some issuers leave `sub`
    // out. A `sub` that is there must be a subject: read as absent, every user of one client whose
    // IdP wrote it otherwise (a number, "") became that client's one principal.
    const hasSub = payload.sub !== undefined;
    if (hasSub && (typeof payload.sub !== 'string' || payload.sub === '')) {
      throw invalid("The token's 'sub' claim is not a non-empty string.");
    }
    const sub = hasSub ? payload.sub : clientId;
    if (typeof sub !== 'string' || sub === '') throw invalid('The token names no subject and no client.');
    let tenantId: string;
    if (issuer.tenant !== undefined) {
      tenantId = issuer.tenant;
    } else {
      const named = claimValues(claims, issuer.tenant_claim ?? '');
      const allowed = issuer.tenants ?? [];
      const match = named.length === 1 && allowed.includes(named[0]!) ? named[0] : undefined;
      if (match === undefined) {
        throw new GatehouseError(
          'forbidden',
          `The token's '${issuer.tenant_claim}' claim names no tenant this issuer may reach.`,
        );
      }
      tenantId = match;
    }
    const scopes = new Set<Scope>();
    const labels = new Set<string>();
    const sources = new Set<string>(issuer.default_sources ?? DEFAULT_KEY_SOURCES);
    for (const rule of issuer.map) {
      if (!claimValues(claims, rule.claim).includes(rule.value)) continue;
      for (const s of rule.scopes) scopes.add(s);
      for (const l of rule.labels) labels.add(l);
      for (const s of rule.sources) sources.add(s);
    }
    if (scopes.size === 0) {
      throw new GatehouseError(
        'forbidden',
        'The token is valid but its claims map to no Gatehouse scope (see the identity configuration).',
      );
    }
    const act = (claims['act'] as { sub?: unknown } | undefined)?.sub;
    return {
      tenantId,
      keyId: subjectId(issuer.issuer, sub, hasSub ? 'sub' : 'cli'),
      scopes: [...scopes],
      sources: [...sources],
      labels: [...labels],
      record: principalOfToken({
        iss: issuer.issuer,
        sub,
        clientId: typeof clientId === 'string' ? clientId : undefined,
        act: typeof act === 'string' ? act : undefined,
      }),
    };
  }

  async function verifyJwt(token: string, target: TokenTarget): Promise<Principal> {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch (error) {
      throw invalid('The token is not a valid signed JWT.', error);
    }
    const runtime = typeof iss === 'string' ? byIssuer.get(iss) : undefined;
    if (!runtime) throw invalid('The token is not from a trusted issuer.');
    const { config } = runtime;
    const audience = audiencesFor(config, target);
    if (audience.length === 0) {
      throw invalid(
        target === 'mcp'
          ? 'Tokens are not accepted on /mcp without a configured public URL.'
          : 'This issuer has no /v1 audience configured.',
      );
    }
    const verifyOptions = {
      issuer: config.issuer,
      audience,
      algorithms: [...(config.algorithms ?? ASYMMETRIC_ALGORITHMS)],
      clockTolerance: config.clock_tolerance_seconds,
      requiredClaims: ['exp'],
      currentDate: now(),
    };
    let payload: JWTPayload;
    try {
      const keys = await runtime.keys();
      try {
        ({ payload } = await jwtVerify(token, keys, verifyOptions));
      } catch (error) {
        if (!(error instanceof joseErrors.JWKSMultipleMatchingKeys)) throw error;
        payload = await verifyWithEach(token, error, verifyOptions);
      }
    } catch (error) {
      if (error instanceof GatehouseError) throw error;
      throw describeJoseError(error);
    }
    return principalOf(config, payload);
  }

  /**
   * A token without `kid` (or with one the set holds twice) against each key of its type in the
   * issuer's set, as jose leaves to its caller: an issuer publishing its next key beside the
   * current one had every such token refused. Bounded by the issuer's own key set.
   */
  async function verifyWithEach(
    token: string,
    candidates: InstanceType<typeof joseErrors.JWKSMultipleMatchingKeys>,
    verifyOptions: Parameters<typeof jwtVerify>[2],
  ): Promise<JWTPayload> {
    for await (const key of candidates) {
      try {
        return (await jwtVerify(token, key, verifyOptions)).payload;
      } catch (error) {
        if (!(error instanceof joseErrors.JWSSignatureVerificationFailed)) throw error;
      }
    }
    throw new joseErrors.JWKSNoMatchingKey();
  }

  /**
   * Introspection answers by SHA-256 of the token: an active one until its `exp`, at most
   * {@link INTROSPECTION_TTL_MS}; an inactive one for that long too. Without them every request
   * with an opaque bearer cost a POST to the IdP, and so did every made-up bearer anyone sent.
   */
  const introspected = new Map<string, { payload: IntrospectionPayload | null; until: number }>();

  async function introspectionOf(
    token: string,
    spec: NonNullable<IssuerConfig['introspection']>,
  ): Promise<IntrospectionPayload | null> {
    const id = createHash('sha256').update(token).digest('hex');
    const at = now().getTime();
    const kept = introspected.get(id);
    if (kept !== undefined && kept.until > at) return kept.payload;
    let res: Response;
    try {
      res = await fetchImpl(spec.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: `Basic ${Buffer.from(`${encodeURIComponent(spec.client_id)}:${encodeURIComponent(spec.client_secret)}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        signal: AbortSignal.timeout(5000),
      });
    } catch (error) {
      throw new GatehouseError('unavailable', 'The token introspection endpoint could not be reached.', {
        cause: error,
      });
    }
    if (!res.ok) {
      throw new GatehouseError('unavailable', `The token introspection endpoint answered ${res.status}.`);
    }
    // A proxy's HTML error page or a JSON that is no object is the endpoint failing, not the token.
    const body: unknown = await res.json().catch(() => null);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw unavailable('The token introspection endpoint answered no JSON object.');
    }
    const payload = (body as IntrospectionPayload).active === true ? (body as IntrospectionPayload) : null;
    const expires = typeof payload?.exp === 'number' ? payload.exp * 1000 : Number.POSITIVE_INFINITY;
    if (introspected.size >= INTROSPECTION_CACHE_MAX) introspected.delete(introspected.keys().next().value!);
    introspected.set(id, { payload, until: Math.min(at + INTROSPECTION_TTL_MS, expires) });
    return payload;
  }

  async function introspect(token: string, target: TokenTarget): Promise<Principal> {
    const candidates = [...byIssuer.values()].filter((r) => r.config.introspection);
    if (candidates.length === 0) throw invalid('The token is not a JWT and no issuer introspects tokens.');
    for (const { config } of candidates) {
      const payload = await introspectionOf(token, config.introspection!);
      if (payload === null) continue;
      if (payload.iss !== undefined && payload.iss !== config.issuer) continue;
      const seconds = Math.floor(now().getTime() / 1000);
      if (typeof payload.exp === 'number' && payload.exp + config.clock_tolerance_seconds < seconds) {
        throw invalid('The token has expired.');
      }
      const wanted = audiencesFor(config, target);
      const aud = payload.aud === undefined ? [] : Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      if (!aud.some((a) => wanted.includes(a))) {
        throw invalid('The token is not meant for this resource (audience).');
      }
      return principalOf(config, payload);
    }
    throw invalid('The token is not active.');
  }

  const scopeValues = new Set<string>();
  for (const issuer of options.config.issuers) {
    for (const rule of issuer.map) if (isScopeClaim(rule.claim)) scopeValues.add(rule.value);
  }

  return {
    authenticate(token, target) {
      // A JWS compact token has three dot-separated parts; anything else is opaque.
      return token.split('.').length === 3 ? verifyJwt(token, target) : introspect(token, target);
    },
    scopesGranting(scope, only) {
      const granting = new Set<string>();
      for (const issuer of options.config.issuers) {
        if (only !== undefined && issuer.issuer !== only) continue;
        for (const rule of issuer.map) {
          if (!isScopeClaim(rule.claim)) continue;
          if (rule.scopes.includes(scope) || rule.scopes.includes('admin')) granting.add(rule.value);
        }
      }
      // Narrowest first: a rule granting exactly this scope before an admin rule.
      return [...granting].sort((a, b) => Number(isAdminValue(a)) - Number(isAdminValue(b)));
    },
    scopesSupported: [...scopeValues],
    issuers: [...byIssuer.keys()],
  };

  function isAdminValue(value: string): boolean {
    return options.config.issuers.some((i) =>
      i.map.some((r) => r.value === value && isScopeClaim(r.claim) && r.scopes.includes('admin')),
    );
  }
}
