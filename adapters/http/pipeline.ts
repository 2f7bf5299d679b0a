/**
 * The one request pipeline over the route table: match → auth → rate limit → scope → path and
 * query → body (with its limit, parsed once) → Idempotency-Key → handler → JSON or problem+json.
 * It speaks plain values ({@link Incoming} in, {@link Reply} out), so the web face (`fetch`) and
 * the node:http face share it and neither builds the other's objects.
 */
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from '@opentelemetry/api';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import type { Logger } from 'pino';
import {
  authenticateApiKey,
  type CallContext,
  type Gatehouse,
  GatehouseError,
  httpDurationHistogram,
  inSpan,
  KEY_PREFIX,
  type KeyStore,
  type Principal,
  parseInput,
  principalAttributes,
  requireScope,
  type Scope,
  type TokenAuthenticator,
  type TokenTarget,
  toGatehouseError,
  tracingActive,
} from '../../src/index.js';
import type { Idempotency } from './idempotency.js';
import type { Metrics } from './metrics.js';
import { CLIENT_CLOSED_REQUEST, type ProblemOptions, problemReply, type Reply } from './problem.js';
import type { RateLimiter } from './rateLimiter.js';
import { queryObject } from './requestParts.js';
import { type ApiRoute, defaultStatus } from './route.js';

/** A request as the pipeline needs it; each face builds one from its own request object. */
export interface Incoming {
  method: string;
  /** The raw path, percent-encoding kept. */
  path: string;
  /** The query string without `?` (may be empty). */
  search: string;
  /** A header by lower-case name. */
  header(name: string): string | undefined;
  /**
   * The body as UTF-8 text, refusing more than `limit` bytes.
   * @throws {GatehouseError} `payload_too_large`
   */
  text(limit: number): Promise<string>;
  /**
   * Aborts when the client goes away before the answer is sent. Read only by a route that needs
   * it (the node:http face builds it on first read).
   */
  readonly signal: AbortSignal;
  /**
   * Closes the connection once the client has taken nothing of the answer for `ms` while more
   * waits to be written (its socket's buffers stay full). Only the node:http face sees the socket;
   * elsewhere the host server decides.
   */
  dropWhenStalled?: ((ms: number) => void) | undefined;
}

/** An unauthenticated service route: `/healthz`, `/readyz`, `/metrics`, the document, problem pages. */
export interface ServiceRoute {
  kind: 'service';
  method: 'GET';
  /** OpenAPI-style path. */
  path: string;
  handle(params: Record<string, string>): Promise<Reply>;
}

/** A `/v1` operation of the table. */
export interface OperationRoute {
  kind: 'api';
  operationId: string;
  route: ApiRoute;
}

/** What a face gives a {@link WebRoute} besides the `Request`. */
export interface WebFace {
  /** The face's body reader ({@link Incoming.text}), cheaper than `request.body` on node:http. */
  readBody: Incoming['text'];
  /** {@link Incoming.dropWhenStalled}, where the face has it. */
  dropWhenStalled?: ((ms: number) => void) | undefined;
}

/**
 * A route that needs a web `Request` after auth (`/mcp`) or answers a stream
 * (`/v1/history/stream`); the node face hands it to the web face.
 */
export interface WebRoute {
  kind: 'web';
  method: 'ALL' | 'GET';
  path: string;
  /** Which audience a token must carry here. @default 'api' */
  target?: TokenTarget;
  handle(request: Request, principal: Principal, face: WebFace): Promise<Response>;
}

/** Any route the pipeline serves. */
export type AnyRoute = ServiceRoute | OperationRoute | WebRoute;

/** What {@link createPipeline} needs. */
export interface PipelineOptions {
  gatehouse: Gatehouse;
  keys: KeyStore;
  maxBodyBytes: number;
  limiter: RateLimiter | null;
  idempotency: Idempotency;
  metrics: Metrics;
  logger?: Logger | undefined;
  /** Base of the problem `type` URIs. @default '' (relative) */
  problemBaseUrl?: string;
  /** Tokens from trusted issuers besides API keys. @default none: API keys only */
  identity?: IdentityOptions | undefined;
}

/** What the pipeline needs to accept tokens and to answer with OAuth challenges. */
export interface IdentityOptions {
  tokens: TokenAuthenticator;
  /** The Protected Resource Metadata URL that every 401 and 403 points to (RFC 9728 §5.1). */
  resourceMetadataUrl: string;
}

/**
 * The `WWW-Authenticate` value of an identity-aware answer: on 401 where the metadata is and
 * which scopes to ask for; on a 403 for a missing scope, `insufficient_scope` with the scope
 * values that grant it (step-up).
 */
export function bearerChallenge(identity: IdentityOptions, error: GatehouseError): string | undefined {
  const quote = (value: string) => `"${value.replace(/["\\]/g, '')}"`;
  const parts: string[] = [];
  if (error.code === 'unauthorized') {
    if (error.tokenError) parts.push(`error=${quote(error.tokenError)}`);
    parts.push(`resource_metadata=${quote(identity.resourceMetadataUrl)}`);
    const scope = defaultScopes(identity.tokens);
    if (scope.length > 0) parts.push(`scope=${quote(scope.join(' '))}`);
  } else if (error.code === 'forbidden' && error.requiredScope !== undefined) {
    const scope = identity.tokens.scopesGranting(error.requiredScope as Scope, error.tokenIssuer);
    parts.push('error="insufficient_scope"');
    if (scope.length > 0) parts.push(`scope=${quote(scope[0]!)}`);
    parts.push(`resource_metadata=${quote(identity.resourceMetadataUrl)}`);
  } else {
    return undefined;
  }
  return `Bearer ${parts.join(', ')}`;
}

/**
 * What the MCP handler answers a tool call beyond a token's scopes with
 * (`insufficientScopeChallenge`): the {@link bearerChallenge} of that scope, named as the token's
 * issuer maps it.
 */
export function stepUpChallenge(identity: IdentityOptions): (scope: Scope, issuer: string) => string {
  return (scope, issuer) =>
    bearerChallenge(
      identity,
      new GatehouseError('forbidden', 'insufficient scope', { requiredScope: scope, tokenIssuer: issuer }),
    ) ?? 'Bearer error="insufficient_scope"';
}

/** What a first authorization asks for: every mapped scope value except those granting `admin`. */
function defaultScopes(tokens: TokenAuthenticator): string[] {
  const admin = new Set(tokens.scopesGranting('admin'));
  const ordinary = tokens.scopesSupported.filter((s) => !admin.has(s));
  return ordinary.length > 0 ? ordinary : [...tokens.scopesSupported];
}

/** The pipeline: `match` tells a face which kind of route a path is; `handle` answers it. */
export interface Pipeline {
  /** The route list, Hono-style patterns (`/v1/state/items/:key`), for listings and tests. */
  readonly routes: ReadonlyArray<{ method: string; path: string }>;
  /** True when `path` is served by a {@link WebRoute} (the node face then builds a `Request`). */
  isWebPath(path: string): boolean;
  /** Answers one request. `request` is given by the web face, for {@link WebRoute}s. */
  handle(incoming: Incoming, request?: Request): Promise<Reply | Response>;
}

interface PathEntry {
  /** The metrics label and listing pattern. */
  pattern: string;
  byMethod: Map<string, AnyRoute>;
  web: boolean;
}

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/** Reads W3C `traceparent` / `tracestate` from either face's request headers. */
const headerGetter: TextMapGetter<Incoming> = {
  get: (incoming, name) => incoming.header(name),
  keys: () => [],
};

/** `/v1/items/{key}` → `/v1/items/:key` (Hono's and the metrics' pattern syntax). */
export function colonPattern(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

function decode(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function jsonReply(status: number, body: unknown): Reply {
  if (status === 204 || body === undefined) return { status, headers: {}, body: null };
  return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

/**
 * Resolves an `Authorization: Bearer <key or token>` header to its principal; a stream checks its
 * credential again with it while it stays open. A bearer that looks like a Gatehouse key (`gh_…`)
 * goes the key path; anything else is a token, when `tokens` is given.
 * @throws {GatehouseError} `unauthorized` when the header is missing or malformed, or the key is
 *   unknown or revoked, or the token is not valid here; `forbidden` for a token that maps to nothing
 */
export async function authenticateBearer(
  keys: KeyStore,
  header: string | null | undefined,
  tokens?: { authenticator: TokenAuthenticator | undefined; target: TokenTarget },
): Promise<Principal> {
  const token = header ? BEARER.exec(header)?.[1] : undefined;
  if (token === undefined) {
    throw new GatehouseError(
      'unauthorized',
      header ? 'The Authorization header must be `Bearer <key>`.' : 'Missing Authorization: Bearer <key>.',
    );
  }
  if (tokens?.authenticator && !token.startsWith(KEY_PREFIX)) {
    return tokens.authenticator.authenticate(token, tokens.target);
  }
  return authenticateApiKey(keys, token);
}

/** The HTTP methods (RFC 9110, and PATCH) named as they are in metrics and spans. */
const KNOWN_METHODS = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

/** Builds the pipeline over `routes`. */
export function createPipeline(options: PipelineOptions, routes: readonly AnyRoute[]): Pipeline {
  const { gatehouse, keys, maxBodyBytes, limiter, idempotency, metrics } = options;
  const log = options.logger;
  const problemOptions = (instance: string): ProblemOptions => ({
    instance,
    ...(options.problemBaseUrl === undefined ? {} : { typeBaseUrl: options.problemBaseUrl }),
  });
  const identity = options.identity;
  const problem = (thrown: unknown, path: string, headers?: Record<string, string>) => {
    const error = toGatehouseError(thrown);
    if (error.code === 'internal') log?.error({ err: error.cause ?? thrown, path }, 'request failed');
    const challenge = identity ? bearerChallenge(identity, error) : undefined;
    return problemReply(
      error,
      problemOptions(path),
      challenge ? { ...headers, 'www-authenticate': challenge } : headers,
    );
  };
  const observeDecision = (verdict: string) => metrics.observeDecision(verdict);

  // One router entry per path; the method is looked up afterwards, so a known path with another
  // method is a 405 with `Allow`, not a 404. Hono's RegExpRouter compiles every path into one
  // regular expression: one match per request, whatever the number of routes.
  const router = new RegExpRouter<PathEntry>();
  const entries = new Map<string, PathEntry>();
  for (const route of routes) {
    const path = route.kind === 'api' ? route.route.path : route.path;
    const method = route.kind === 'api' ? route.route.method : route.method;
    const pattern = colonPattern(path);
    let entry = entries.get(pattern);
    if (!entry) {
      entry = { pattern, byMethod: new Map(), web: route.kind === 'web' };
      entries.set(pattern, entry);
      router.add('ALL', pattern, entry);
    }
    entry.byMethod.set(method, route);
  }
  const listing = routes.map((r) =>
    r.kind === 'api'
      ? { method: r.route.method, path: colonPattern(r.route.path) }
      : { method: r.method, path: colonPattern(r.path) },
  );

  function match(path: string): { entry: PathEntry; params: Record<string, string> } | undefined {
    const [handlers, stash] = router.match('ALL', path);
    const found = handlers[0];
    if (!found) return undefined;
    const [entry, indexes] = found;
    const params: Record<string, string> = {};
    for (const [name, at] of Object.entries(indexes as Record<string, number | string>)) {
      const raw = stash ? stash[at as number] : (at as string);
      params[name] = decode(raw ?? '');
    }
    return { entry, params };
  }

  async function authenticate(incoming: Incoming, target: TokenTarget): Promise<Principal> {
    const principal = await authenticateBearer(keys, incoming.header('authorization'), {
      authenticator: identity?.tokens,
      target,
    });
    trace.getActiveSpan()?.setAttributes(principalAttributes(principal));
    if (limiter) {
      const wait = limiter(principal.keyId);
      if (wait > 0) {
        throw new GatehouseError('rate_limited', 'Rate limit exceeded for this API key; retry later.', {
          retryAfter: wait,
        });
      }
    }
    return principal;
  }

  async function readJson(incoming: Incoming, optional: boolean): Promise<{ value: unknown; text: string }> {
    const text = await incoming.text(maxBodyBytes);
    if (optional && text.trim() === '') return { value: {}, text };
    if (!isJson(incoming.header('content-type'))) {
      throw new GatehouseError(
        'unsupported_media_type',
        'The request body must be JSON (Content-Type: application/json).',
      );
    }
    try {
      return { value: JSON.parse(text), text };
    } catch (error) {
      throw new GatehouseError(
        'malformed_request',
        `The request body is not valid JSON: ${(error as Error).message}`,
      );
    }
  }

  async function operation(
    route: ApiRoute,
    incoming: Incoming,
    rawParams: Record<string, string>,
  ): Promise<Reply> {
    const principal = await authenticate(incoming, 'api');
    if (route.scope !== null) requireScope(principal, route.scope);
    const params = route.params ? parseInput(route.params, rawParams, 'path') : rawParams;
    const query = route.query ? parseInput(route.query, queryObject(incoming.search), 'query') : {};
    let body: unknown;
    let text = '';
    if (route.body) ({ value: body, text } = await readJson(incoming, route.body.optional === true));
    const context: CallContext = {
      tenantId: principal.tenantId,
      allowedSources: principal.sources,
      keyId: principal.keyId,
      ...(principal.record === undefined ? {} : { principal: principal.record }),
      scopes: principal.scopes,
      labels: principal.labels,
    };
    const run = async (): Promise<Reply> => {
      try {
        const result = await route.handle({
          params,
          query,
          body,
          context,
          principal,
          gatehouse,
          observeDecision,
          header: (name) => incoming.header(name),
          get signal() {
            return incoming.signal;
          },
        });
        if (route.erases) await idempotency.forget(principal.tenantId, route.erases(result));
        const reply = jsonReply(route.statusOf ? route.statusOf(result) : defaultStatus(route), result);
        if (route.responseHeaders) Object.assign(reply.headers, route.responseHeaders(result));
        return reply;
      } catch (error) {
        // The client went away and the operation stopped for it: nobody reads this answer, and it
        // is no server error to log.
        if (incoming.signal.aborted) return { status: CLIENT_CLOSED_REQUEST, headers: {}, body: null };
        return problem(error, incoming.path);
      }
    };
    const key = route.method === 'POST' ? incoming.header('idempotency-key') : undefined;
    if (key === undefined) return run();
    const named = (body as { session_id?: unknown } | undefined)?.session_id;
    // The tenant is part of the scope: a token whose claim picks the tenant has one key ID in each,
    // and a request in one tenant must never be answered with another tenant's stored response.
    return idempotency(`${principal.keyId}:${principal.tenantId}:POST:${incoming.path}`, key, text, run, {
      tenantId: principal.tenantId,
      sessions: typeof named === 'string' ? [named] : [],
      erasedSince: route.erases
        ? null
        : (ids, since) =>
            gatehouse.erasedSessionsSince(
              { session_ids: ids, since: new Date(since).toISOString() },
              context,
            ),
    });
  }

  async function dispatch(
    incoming: Incoming,
    request: Request | undefined,
  ): Promise<{
    reply: Reply | Response;
    pattern: string;
  }> {
    const found = match(incoming.path);
    if (!found) {
      const error = new GatehouseError('not_found', `No route ${incoming.method} ${incoming.path}.`);
      return { reply: problem(error, incoming.path), pattern: 'unmatched' };
    }
    const { entry, params } = found;
    const method = incoming.method === 'HEAD' && !entry.byMethod.has('HEAD') ? 'GET' : incoming.method;
    const route = entry.byMethod.get(method) ?? entry.byMethod.get('ALL');
    if (!route) {
      const allowed = [...entry.byMethod.keys()].join(', ');
      const error = new GatehouseError(
        'method_not_allowed',
        `${incoming.method} is not allowed on ${incoming.path}; use ${allowed}.`,
      );
      return { reply: problem(error, incoming.path, { allow: allowed }), pattern: entry.pattern };
    }
    try {
      switch (route.kind) {
        case 'service':
          return { reply: await route.handle(params), pattern: entry.pattern };
        case 'api':
          return { reply: await operation(route.route, incoming, params), pattern: entry.pattern };
        case 'web': {
          const principal = await authenticate(incoming, route.target ?? 'api');
          if (!request) throw new Error(`${entry.pattern} needs a web Request`);
          const face: WebFace = {
            readBody: (limit) => incoming.text(limit),
            dropWhenStalled: incoming.dropWhenStalled,
          };
          return { reply: await route.handle(request, principal, face), pattern: entry.pattern };
        }
      }
    } catch (error) {
      return { reply: problem(error, incoming.path), pattern: entry.pattern };
    }
  }

  return {
    routes: listing,
    isWebPath: (path) => match(path)?.entry.web === true,
    handle(incoming, request) {
      const started = performance.now();
      // A method the caller makes up is `_OTHER` (as OTel's HTTP conventions say): a label or a
      // span name per made-up method would grow without bound.
      const method = KNOWN_METHODS.has(incoming.method) ? incoming.method : '_OTHER';
      // One server span per request, a child of the caller's trace when it sent `traceparent`;
      // named `METHOD /route/:pattern` once the route is known (low cardinality, no IDs).
      const parent = tracingActive()
        ? propagation.extract(context.active(), incoming, headerGetter)
        : undefined;
      const attributes = { 'http.request.method': method };
      return inSpan(method, { kind: SpanKind.SERVER, attributes, parent }, async (span) => {
        const { reply, pattern } = await dispatch(incoming, request);
        const seconds = (performance.now() - started) / 1000;
        metrics.observeRequest(method, pattern, reply.status, seconds);
        const route = pattern === 'unmatched' ? {} : { 'http.route': pattern };
        const done = { ...attributes, ...route, 'http.response.status_code': reply.status };
        httpDurationHistogram().record(seconds, done);
        if (span.isRecording()) {
          if (pattern !== 'unmatched') span.updateName(`${method} ${pattern}`);
          span.setAttributes(done);
          if (reply.status >= 500) {
            span.setAttribute('error.type', String(reply.status));
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
        }
        log?.debug({ method, path: incoming.path, status: reply.status }, 'request');
        return incoming.method === 'HEAD' && !(reply instanceof Response) ? { ...reply, body: null } : reply;
      });
    },
  };
}
