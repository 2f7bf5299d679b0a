/**
 * The `/v1` HTTP face: a web-standard handler (Hono). Routes translate; the core decides.
 * `app.fetch(request)` is all a test needs; `startHttpServer` puts it on a port.
 */
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { methodNotAllowed } from 'hono/method-not-allowed';
import Keyv from 'keyv';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  authenticateApiKey,
  type CallContext,
  type Gatehouse,
  GatehouseError,
  type KeyStore,
  type Principal,
  parseInput,
  requireScope,
  type Scope,
  toGatehouseError,
} from '../../src/index.js';
import { createIdempotency } from './idempotency.js';
import { createMetrics, type Metrics } from './metrics.js';
import { buildOpenApiDocument } from './openapi.js';
import { problemResponse } from './problem.js';
import { createRateLimiter, type RateLimiterOptions } from './rateLimiter.js';

/** Options for {@link createHttpApp}. */
export interface HttpAppOptions {
  gatehouse: Gatehouse;
  /** Where API keys live; usually the same store. @default gatehouse.store */
  keys?: KeyStore;
  /** @default 64 KiB */
  maxBodyBytes?: number;
  /** Per-key rate limit; `false` turns it off. @default 100 requests/s, burst 200 */
  rateLimit?: RateLimiterOptions | false;
  /** Shared TTL data (idempotency); Redis-backed for several instances. @default in memory */
  ttlStore?: Keyv;
  logger?: Logger;
  /** Prometheus metrics. @default a fresh registry */
  metrics?: Metrics;
  /** The MCP Streamable HTTP handler, mounted at `/mcp` behind the same bearer auth. */
  mcp?: (request: Request, principal: Principal) => Promise<Response>;
}

type Env = { Variables: { principal: Principal } };

const SessionQuery = z.strictObject({ session_id: z.string() });
const ConflictsQuery = z.strictObject({
  session_id: z.string().optional(),
  key: z.string().optional(),
  status: z.enum(['open', 'resolved']).optional(),
});
const DeliveriesQuery = z.strictObject({
  status: z.enum(['pending', 'delivered', 'failed']).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before_id: z.string().max(64).optional(),
});

function ctxOf(principal: Principal): CallContext {
  return { tenantId: principal.tenantId, allowedSources: principal.sources };
}

/** A path parameter; every route declares the ones it reads. */
function param(c: Context<Env>, name: string): string {
  return c.req.param(name) ?? '';
}

function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

/**
 * Builds the Hono app.
 * @example
 * const app = createHttpApp({ gatehouse });
 * const res = await app.request('/v1/gates/evaluate', { method: 'POST', headers, body });
 */
export function createHttpApp(options: HttpAppOptions): Hono<Env> {
  const gh = options.gatehouse;
  const keys = options.keys ?? gh.store;
  const maxBody = options.maxBodyBytes ?? 64 * 1024;
  const limiter = options.rateLimit === false ? null : createRateLimiter(options.rateLimit);
  const idempotency = createIdempotency({ store: options.ttlStore ?? new Keyv({ namespace: 'idem' }) });
  const metrics = options.metrics ?? createMetrics();
  const log = options.logger;

  const app = new Hono<Env>();

  app.onError((error, c) => {
    const gatehouseError = toGatehouseError(error);
    if (gatehouseError.code === 'internal') {
      log?.error({ err: gatehouseError.cause ?? error, path: c.req.path }, 'request failed');
    }
    return problemResponse(gatehouseError, c.req.path);
  });
  app.notFound((c) =>
    problemResponse(new GatehouseError('not_found', `No route ${c.req.method} ${c.req.path}.`), c.req.path),
  );

  app.use(
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) =>
        problemResponse(
          new GatehouseError(
            'method_not_allowed',
            `${c.req.method} is not allowed on ${c.req.path}; use ${methods.join(', ')}.`,
          ),
          c.req.path,
          { allow: methods.join(', ') },
        ),
    }),
  );

  app.use(async (c, next) => {
    const started = performance.now();
    await next();
    const route = c.req.routePath;
    metrics.observeRequest(c.req.method, route, c.res.status, (performance.now() - started) / 1000);
    log?.debug({ method: c.req.method, path: c.req.path, status: c.res.status }, 'request');
  });

  // ---- unauthenticated -----------------------------------------------------------------------
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      await gh.store.ping();
      return c.json({ status: 'ready', store: gh.store.kind });
    } catch {
      return problemResponse(new GatehouseError('unavailable', 'The database is unreachable.'), c.req.path);
    }
  });
  app.get('/metrics', async (c) =>
    c.body(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType }),
  );
  app.get('/v1/openapi.json', (c) => c.json(buildOpenApiDocument()));

  // ---- auth, limits, body -----------------------------------------------------------------
  const authenticate = async (c: Context<Env>, next: () => Promise<void>) => {
    const header = c.req.header('authorization');
    const match = header ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      throw new GatehouseError(
        'unauthorized',
        header ? 'The Authorization header must be `Bearer <key>`.' : 'Missing Authorization: Bearer <key>.',
      );
    }
    const principal = await authenticateApiKey(keys, match[1]!);
    if (limiter) {
      const wait = limiter(principal.keyId);
      if (wait > 0) {
        throw new GatehouseError('rate_limited', 'Rate limit exceeded for this API key; retry later.', {
          retryAfter: wait,
        });
      }
    }
    c.set('principal', principal);
    await next();
  };
  app.use('/v1/*', authenticate);
  app.use('/mcp', authenticate);
  const limitBody = bodyLimit({
    maxSize: maxBody,
    onError: (c) =>
      problemResponse(
        new GatehouseError('payload_too_large', `The request body exceeds ${maxBody} bytes.`),
        c.req.path,
      ),
  });
  // A GET or HEAD request has no body (a web Request cannot carry one), so the limit has nothing
  // to check; asking it would read `c.req.raw.body`, which makes @hono/node-server build a full
  // Request (abort controller, stream over the socket) for every read.
  app.use('/v1/*', (c, next) =>
    c.req.method === 'GET' || c.req.method === 'HEAD' ? next() : limitBody(c, next),
  );

  /** Reads a JSON body (an empty body is `{}` when `optional`). */
  async function jsonBody(c: Context<Env>, optional = false): Promise<{ value: unknown; text: string }> {
    const text = await c.req.text();
    if (text.trim() === '' && optional) return { value: {}, text };
    if (!isJson(c.req.header('content-type'))) {
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

  /** A POST route: scope check, JSON body, Idempotency-Key replay. */
  function post(
    path: string,
    scope: Scope,
    handler: (c: Context<Env>, body: unknown, principal: Principal) => Promise<Response>,
    bodyOptional = false,
  ) {
    app.post(path, async (c) => {
      const principal = c.get('principal');
      requireScope(principal, scope);
      const { value, text } = await jsonBody(c, bodyOptional);
      const key = c.req.header('idempotency-key');
      const run = () => handler(c, value, principal).catch((e: unknown) => problemResponse(e, c.req.path));
      if (key === undefined) return run();
      return idempotency(`${principal.keyId}:POST:${c.req.path}`, key, text, run);
    });
  }

  function get(
    path: string,
    scope: Scope,
    handler: (c: Context<Env>, principal: Principal) => Promise<Response>,
  ) {
    app.get(path, async (c) => {
      const principal = c.get('principal');
      requireScope(principal, scope);
      return handler(c, principal);
    });
  }

  const query = <S extends z.ZodType>(c: Context<Env>, schema: S): z.output<S> =>
    parseInput(schema, c.req.query(), 'query');

  // ---- state ---------------------------------------------------------------------------------
  post('/v1/state/items', 'state:write', async (c, body, p) => {
    const result = await gh.recordState(body as never, ctxOf(p));
    return c.json(result, result.changed ? 201 : 200);
  });
  get('/v1/state/items', 'state:read', async (c, p) => {
    const { session_id } = query(c, SessionQuery);
    return c.json({ items: await gh.listItems(session_id, ctxOf(p)) });
  });
  get('/v1/state/items/:key', 'state:read', async (c, p) => {
    const { session_id } = query(c, SessionQuery);
    return c.json(await gh.getItem(session_id, param(c, 'key'), ctxOf(p)));
  });
  get('/v1/state/items/:key/versions', 'state:read', async (c, p) => {
    const { session_id } = query(c, SessionQuery);
    return c.json({ versions: await gh.listItemVersions(session_id, param(c, 'key'), ctxOf(p)) });
  });
  get('/v1/state/items/:key/versions/:version', 'state:read', async (c, p) => {
    const { session_id } = query(c, SessionQuery);
    const version = Number(param(c, 'version'));
    return c.json(await gh.getItemVersion(session_id, param(c, 'key'), version, ctxOf(p)));
  });
  get('/v1/state/conflicts', 'state:read', async (c, p) => {
    const q = query(c, ConflictsQuery);
    return c.json({
      conflicts: await gh.listConflicts(
        {
          ...(q.session_id === undefined ? {} : { session_id: q.session_id }),
          ...(q.key === undefined ? {} : { key: q.key }),
          ...(q.status === undefined ? {} : { status: q.status }),
        },
        ctxOf(p),
      ),
    });
  });
  get('/v1/state/conflicts/:id', 'state:read', async (c, p) =>
    c.json(await gh.getConflict(param(c, 'id'), ctxOf(p))),
  );
  post('/v1/state/conflicts/:id/resolve', 'state:write', async (c, body, p) =>
    c.json(await gh.resolveConflict(param(c, 'id'), body as never, ctxOf(p))),
  );

  // ---- gate and decisions --------------------------------------------------------------------
  post('/v1/gates/evaluate', 'gate:evaluate', async (c, body, p) => {
    const decision = await gh.evaluate(body as never, ctxOf(p));
    metrics.observeDecision(decision.verdict);
    return c.json(decision, 200);
  });
  get('/v1/decisions/:id', 'history:read', async (c, p) =>
    c.json(await gh.getDecision(param(c, 'id'), ctxOf(p))),
  );
  post('/v1/decisions/:id/outcome', 'gate:evaluate', async (c, body, p) =>
    c.json(await gh.recordOutcome(param(c, 'id'), body as never, ctxOf(p)), 201),
  );

  // ---- history -------------------------------------------------------------------------------
  get('/v1/history/events', 'history:read', async (c, p) =>
    c.json(await gh.readHistory(c.req.query(), ctxOf(p))),
  );
  get('/v1/history/verify', 'history:read', async (c, p) => c.json(await gh.verifyHistory(ctxOf(p))));

  // ---- webhooks ------------------------------------------------------------------------------
  post('/v1/webhooks', 'webhooks:manage', async (c, body, p) =>
    c.json(await gh.createWebhook(body as never, ctxOf(p)), 201),
  );
  get('/v1/webhooks', 'webhooks:manage', async (c, p) =>
    c.json({ webhooks: await gh.listWebhooks(ctxOf(p)) }),
  );
  get('/v1/webhooks/:id', 'webhooks:manage', async (c, p) =>
    c.json(await gh.getWebhook(param(c, 'id'), ctxOf(p))),
  );
  app.delete('/v1/webhooks/:id', async (c) => {
    const p = c.get('principal');
    requireScope(p, 'webhooks:manage');
    await gh.deleteWebhook(param(c, 'id'), ctxOf(p));
    return c.body(null, 204);
  });
  post(
    '/v1/webhooks/:id/rotate-secret',
    'webhooks:manage',
    async (c, body, p) => c.json(await gh.rotateWebhookSecret(param(c, 'id'), body as never, ctxOf(p))),
    true,
  );
  post(
    '/v1/webhooks/:id/enable',
    'webhooks:manage',
    async (c, _body, p) => c.json(await gh.enableWebhook(param(c, 'id'), ctxOf(p))),
    true,
  );
  get('/v1/webhooks/:id/deliveries', 'webhooks:manage', async (c, p) => {
    const q = query(c, DeliveriesQuery);
    const deliveries = await gh.listDeliveries(
      param(c, 'id'),
      {
        limit: q.limit,
        ...(q.status === undefined ? {} : { status: q.status }),
        ...(q.before_id === undefined ? {} : { before_id: q.before_id }),
      },
      ctxOf(p),
    );
    return c.json({ deliveries });
  });
  post(
    '/v1/webhooks/:id/deliveries/:delivery_id/redeliver',
    'webhooks:manage',
    async (c, _body, p) => c.json(await gh.redeliver(param(c, 'id'), param(c, 'delivery_id'), ctxOf(p)), 202),
    true,
  );

  // ---- MCP -----------------------------------------------------------------------------------
  const mcp = options.mcp;
  if (mcp) {
    app.all('/mcp', async (c) => mcp(c.req.raw, c.get('principal')));
  }

  return app;
}
