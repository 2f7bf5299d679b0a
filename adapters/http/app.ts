/**
 * The `/v1` HTTP face: the route table run through one pipeline, with a web-standard
 * `fetch(Request) → Response` (tests call it without a port) and a lean node:http listener that
 * `startHttpServer` uses. Routes translate; the core decides.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Keyv from 'keyv';
import type { Logger } from 'pino';
import type { Gatehouse, KeyStore, Principal, TokenAuthenticator } from '../../src/index.js';
import { type BoundedMemoryStoreOptions, createBoundedMemoryStore } from './boundedMemoryStore.js';
import { type ConsoleOptions, createConsoleRoutes } from './consoleRoutes.js';
import { createHistoryFeed } from './historyFeed.js';
import { createHistoryStreamRoute, type HistoryStreamOptions } from './historyStream.js';
import { createIdempotency, type IdempotencyOptions } from './idempotency.js';
import { createMetrics, type Metrics } from './metrics.js';
import { abortedOnClose, createNodeListener, type NodeExchange } from './nodeListener.js';
import { buildOpenApiDocument } from './openapi.js';
import {
  type AnyRoute,
  authenticateBearer,
  createPipeline,
  type IdentityOptions,
  type Pipeline,
} from './pipeline.js';
import { createProtectedResourceRoutes, protectedResourceUrls } from './protectedResource.js';
import { createRateLimiter, type RateLimiterOptions } from './rateLimiter.js';
import { pathAndSearch, readNodeBody, readWebBody } from './requestParts.js';
import { API_ROUTES } from './routes.js';
import { createServiceRoutes } from './serviceRoutes.js';
import { dropWhenStalled } from './stalledResponses.js';

/** Options for {@link createHttpApp}. */
export interface HttpAppOptions {
  gatehouse: Gatehouse;
  /** Where API keys live; usually the same store. @default gatehouse.store */
  keys?: KeyStore;
  /** @default 64 KiB */
  maxBodyBytes?: number;
  /** Per-key rate limit; `false` turns it off. @default 100 requests/s, burst 200 */
  rateLimit?: RateLimiterOptions | false;
  /**
   * Shared TTL data (idempotency); Redis-backed for several instances.
   * @default in memory, bounded by `idempotency.maxEntries` and `idempotency.maxBytes`
   */
  ttlStore?: Keyv;
  /**
   * Idempotent responses (`Idempotency-Key` on a POST): how long each is kept; in memory (no
   * `ttlStore`), at most how many and how many bytes, the oldest going first; and the largest
   * response kept at all (a larger one is answered with `Idempotency-Status: not-stored`; so is
   * one over an eighth of `maxBytes` in memory).
   * @default 24 h, 10,000 entries, 32 MiB, 1 MiB
   */
  idempotency?: Pick<BoundedMemoryStoreOptions, 'maxEntries' | 'maxBytes'> &
    Pick<IdempotencyOptions, 'ttlMs' | 'maxResponseBytes' | 'storeTimeoutMs'>;
  logger?: Logger;
  /** Prometheus metrics. @default a fresh registry */
  metrics?: Metrics;
  /**
   * The MCP Streamable HTTP handler, mounted at `/mcp` behind the same bearer auth; `readBody`
   * reads the body (on node:http from the socket, without web streams); `checkCaller`
   * authenticates the request's bearer again (a tool that waits calls it before it acts).
   */
  mcp?: (
    request: Request,
    principal: Principal,
    readBody: (limit: number) => Promise<string>,
    checkCaller: () => Promise<Principal>,
  ) => Promise<Response>;
  /**
   * Makes the problem `type` URIs absolute, e.g. `https://gatehouse.example.org`.
   * @default '' (relative `/problems/<code>`, resolved against the URL the answer came from)
   */
  problemBaseUrl?: string;
  /**
   * Serves the web console at `/ui/` (`true`, or where its compiled modules are).
   * @default false (`gatehouse serve` turns it on; `--no-ui` off)
   */
  console?: boolean | ConsoleOptions;
  /**
   * `GET /v1/history/stream`: poll interval, heartbeat, open streams per key, per tenant and in
   * all, lifetime, and how long a client that stops reading keeps its connection.
   * @default 1 s, 15 s, 10, 50, 100, 1 h, 30 s
   */
  historyStream?: Omit<HistoryStreamOptions, 'gatehouse' | 'feed' | 'keys' | 'tokens'>;
  /**
   * Accept access tokens from trusted issuers besides API keys, and serve the OAuth Protected
   * Resource Metadata (RFC 9728) for `/mcp`. `publicUrl` is the service's public base URL
   * (`https://gatehouse.example.org`): `/mcp`'s resource identifier is built from it, never from
   * a request's Host header.
   * @default none: API keys only
   */
  identity?: { tokens: TokenAuthenticator; publicUrl: string };
}

/** The app: a web-standard handler plus what the node:http face and tests need. */
export interface HttpApp {
  /** Answers a web `Request`. */
  fetch(request: Request): Promise<Response>;
  /** Like Hono's `app.request`: a path (`/v1/...`), a URL or a Request, with optional init. */
  request(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** Every route: `{ method, path }` with Hono-style patterns; `/mcp` is `ALL`. */
  readonly routes: ReadonlyArray<{ method: string; path: string }>;
  /** The node:http listener: the same pipeline without web Request or stream objects. */
  readonly nodeListener: (req: IncomingMessage, res: ServerResponse) => void;
  /** Ends the open history streams (before the server closes, so none holds it up). Safe twice. */
  close(): void;
}

const nodeListeners = new WeakMap<(request: Request) => unknown, HttpApp['nodeListener']>();

/**
 * The lean node:http listener of an app's `fetch`, so `startHttpServer(app.fetch)` (as existing
 * callers write it) still gets the lean path; undefined for any other fetch function.
 */
export function nodeListenerOf(fetch: (request: Request) => unknown): HttpApp['nodeListener'] | undefined {
  return nodeListeners.get(fetch);
}

/**
 * Builds the app.
 * @example
 * const app = createHttpApp({ gatehouse });
 * const res = await app.request('/v1/gates/evaluate', { method: 'POST', headers, body });
 * await startHttpServer(app.fetch, { port: 8787 });
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const gatehouse = options.gatehouse;
  const metrics = options.metrics ?? createMetrics();
  const serviceRoutes = createServiceRoutes({ gatehouse, metrics, openApiDocument: buildOpenApiDocument });
  const apiRoutes: AnyRoute[] = Object.entries(API_ROUTES).map(([operationId, route]) => ({
    kind: 'api',
    operationId,
    route: route as never,
  }));
  const mcp = options.mcp;
  const feed = createHistoryFeed();
  const keys = options.keys ?? gatehouse.store;
  const identity: IdentityOptions | undefined = options.identity && {
    tokens: options.identity.tokens,
    resourceMetadataUrl: protectedResourceUrls(options.identity.publicUrl).metadata,
  };
  const webRoutes: AnyRoute[] = [
    createHistoryStreamRoute({ gatehouse, feed, keys, tokens: identity?.tokens, ...options.historyStream }),
    ...(mcp
      ? [
          {
            kind: 'web',
            method: 'ALL',
            path: '/mcp',
            target: 'mcp',
            handle: (request, principal, face) =>
              mcp(request, principal, face.readBody, () =>
                authenticateBearer(keys, request.headers.get('authorization'), {
                  authenticator: identity?.tokens,
                  target: 'mcp',
                }),
              ),
          } satisfies AnyRoute,
        ]
      : []),
  ];
  const consoleRoutes =
    options.console === undefined || options.console === false
      ? []
      : createConsoleRoutes(options.console === true ? {} : options.console);

  const inner: Pipeline = createPipeline(
    {
      gatehouse,
      keys,
      maxBodyBytes: options.maxBodyBytes ?? 64 * 1024,
      limiter: options.rateLimit === false ? null : createRateLimiter(options.rateLimit),
      idempotency: createIdempotency({
        store:
          options.ttlStore ??
          new Keyv({
            store: createBoundedMemoryStore({
              maxEntries: options.idempotency?.maxEntries,
              maxBytes: options.idempotency?.maxBytes,
            }),
            namespace: 'idem',
          }),
        ttlMs: options.idempotency?.ttlMs,
        maxResponseBytes: options.idempotency?.maxResponseBytes,
        storeTimeoutMs: options.idempotency?.storeTimeoutMs,
        onError: (err) => options.logger?.warn({ err }, 'idempotency store failed'),
      }),
      metrics,
      logger: options.logger,
      ...(options.problemBaseUrl === undefined ? {} : { problemBaseUrl: options.problemBaseUrl }),
      identity,
    },
    [
      ...serviceRoutes,
      ...(options.identity ? createProtectedResourceRoutes(options.identity) : []),
      ...consoleRoutes,
      ...apiRoutes,
      ...webRoutes,
    ],
  );
  // A write answered here may have appended events: the open history streams read them now
  // instead of at their next poll.
  const pipeline: Pipeline = {
    routes: inner.routes,
    isWebPath: inner.isWebPath,
    async handle(incoming, request) {
      const reply = await inner.handle(incoming, request);
      if (incoming.method === 'POST' && reply.status < 300) feed.wake();
      return reply;
    },
  };

  // `node` is the Node request and response behind `request` when the node face converted it (a
  // web route): the body is read from the socket's Buffers instead of through web streams, and a
  // stream can have a client that stopped reading cut off.
  const serve = async (request: Request, node?: NodeExchange): Promise<Response> => {
    const { path, search } = pathAndSearch(request.url);
    let signal: AbortSignal | undefined;
    const reply = await pipeline.handle(
      {
        method: request.method,
        path,
        search,
        header: (name) => request.headers.get(name) ?? undefined,
        text: node ? (limit) => readNodeBody(node.req, limit) : (limit) => readWebBody(request, limit),
        dropWhenStalled: node ? (ms) => dropWhenStalled(node.res, ms) : undefined,
        get signal() {
          // Behind node:http not `request.signal`: @hono/node-server would build a whole web
          // Request for it, taking the body stream that `text` reads. A web Request's own signal
          // otherwise (@hono/node-server aborts it on a disconnect once it has been read).
          signal ??= node ? abortedOnClose(node.res) : request.signal;
          return signal;
        },
      },
      request,
    );
    if (reply instanceof Response) return reply;
    return new Response(reply.body, { status: reply.status, headers: reply.headers });
  };
  const fetch = (request: Request): Promise<Response> => serve(request);

  const app: HttpApp = {
    fetch,
    request(input, init) {
      if (input instanceof Request) return fetch(init ? new Request(input, init) : input);
      const url = typeof input === 'string' && input.startsWith('/') ? `http://localhost${input}` : input;
      return fetch(new Request(url, init));
    },
    routes: pipeline.routes,
    nodeListener: createNodeListener(pipeline, serve),
    close: () => feed.close(),
  };
  nodeListeners.set(fetch, app.nodeListener);
  return app;
}
