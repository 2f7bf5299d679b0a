/**
 * `GET /v1/history/stream`: new history events as server-sent events, as they are written.
 * Each event is `id: <seq>` and `data: <the event as JSON>`; a client resumes with
 * `Last-Event-ID` (or `?after_seq=`). The stream reads the store through the core's
 * `readHistory` (one indexed range scan after the last seq), again whenever a write on this
 * instance rings the {@link HistoryFeed} or the poll interval passes; a comment line every
 * heartbeat keeps proxies from closing it; it ends when the client goes away or the app closes.
 * At every wake it checks its API key again (through the store's key cache, which hears of
 * revocations), and ends with a comment saying why once the key is revoked: nothing written after
 * a revocation reaches the stream.
 * Streams are bounded: so many per key, per tenant and per app ({@link StreamLimits}); each lives
 * at most `maxLifetimeMs` (then ends with a comment; the client resumes with `Last-Event-ID`);
 * on node:http a client that stops reading is cut off after `stallMs`.
 * A route of its own kind because its answer is a stream, not one JSON value.
 */
import { z } from 'zod';
import {
  EventTypeSchema,
  encodeCursor,
  type Gatehouse,
  GatehouseError,
  type HistoryEvent,
  type KeyStore,
  type Principal,
  parseInput,
  queryNumber,
  requireScope,
  SessionIdSchema,
  type TokenAuthenticator,
  VerdictSchema,
} from '../../src/index.js';
import type { HistoryFeed } from './historyFeed.js';
import { authenticateBearer, type WebFace, type WebRoute } from './pipeline.js';
import { pathAndSearch, queryObject } from './requestParts.js';
import { createStreamLimits } from './streamLimits.js';

/** The stream's query: the filters of `GET /v1/history/events`, plus a verdict and a start. */
export const HistoryStreamQuerySchema = z.strictObject({
  session_id: SessionIdSchema.optional().describe('Only this session.'),
  type: EventTypeSchema.optional().describe('Only this event type.'),
  verdict: VerdictSchema.optional().describe('Only `gate_evaluation` events with this verdict.'),
  after_seq: queryNumber('after_seq', { min: 0 })
    .optional()
    .describe('Start after this seq (the `Last-Event-ID` header wins). Default: only events from now on.'),
});

/** How the OpenAPI document describes the stream. */
export const HISTORY_STREAM_DOC = {
  operationId: 'streamHistory',
  path: '/v1/history/stream',
  summary: 'Follow new history events (server-sent events)',
  description:
    "A `text/event-stream`: one message per new event, `id` = its `seq`, `data` = the event as JSON. Resume with the `Last-Event-ID` header (or `after_seq`). A comment line is sent every heartbeat; the stream ends when the client disconnects, or with a comment saying why when the API key is revoked, a token can no longer be checked (its identity provider is unavailable) or the stream reaches its maximum lifetime (1 h by default). Open streams are limited per key (10) and per tenant (50): past either, 429 `rate_limited`; past the server's limit (100), 503.",
  scope: 'history:read',
  query: HistoryStreamQuerySchema,
} as const;

/** Options for {@link createHistoryStreamRoute}. */
export interface HistoryStreamOptions {
  gatehouse: Gatehouse;
  feed: HistoryFeed;
  /** Where the stream checks its key again at every wake (revoked: the stream ends). */
  keys: KeyStore;
  /** Checks a token instead (expired: the stream ends). @default API keys only */
  tokens?: TokenAuthenticator | undefined;
  /** How often a stream reads the store when nothing rang. @default 1000 */
  pollMs?: number;
  /** How long a stream stays silent before a comment line. @default 15000 */
  heartbeatMs?: number;
  /** Open streams per app; more are `unavailable` (503). @default 100 */
  maxStreams?: number;
  /** Open streams per API key; more are `rate_limited` (429). @default 10 */
  maxStreamsPerKey?: number;
  /** Open streams per tenant, all its keys together; more are `rate_limited` (429). @default 50 */
  maxStreamsPerTenant?: number;
  /**
   * How long a stream lives: then it ends with a comment, and the client resumes with
   * `Last-Event-ID` (browsers' `EventSource` does so by itself). Bounds how long an idle client
   * that reads nothing holds its place. @default 3600000 (1 h)
   */
  maxLifetimeMs?: number;
  /**
   * On node:http: a client that has taken nothing for this long while data waits to be written
   * (its socket's buffers stay full) is disconnected (after 1 to 1.5 times this). @default 30000
   */
  stallMs?: number;
}

const PAGE = 100;
const encoder = new TextEncoder();

function lastEventId(request: Request): number | undefined {
  const header = request.headers.get('last-event-id');
  if (header === null || header.trim() === '') return undefined;
  if (!/^\d{1,15}$/.test(header.trim())) {
    throw new GatehouseError('invalid_request', 'Last-Event-ID must be the seq of an event (an integer).', {
      errors: [{ path: 'Last-Event-ID', message: 'must be a non-negative integer' }],
    });
  }
  return Number(header.trim());
}

function message(event: HistoryEvent): string {
  return `id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** The stream route, served by the pipeline after bearer auth like `/mcp`. */
export function createHistoryStreamRoute(options: HistoryStreamOptions): WebRoute {
  const { gatehouse, feed, keys } = options;
  const pollMs = options.pollMs ?? 1000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const maxLifetimeMs = options.maxLifetimeMs ?? 3_600_000;
  const stallMs = options.stallMs ?? 30_000;
  const limits = createStreamLimits({
    maxTotal: options.maxStreams,
    maxPerKey: options.maxStreamsPerKey,
    maxPerTenant: options.maxStreamsPerTenant,
  });

  async function handle(request: Request, principal: Principal, face: WebFace): Promise<Response> {
    requireScope(principal, HISTORY_STREAM_DOC.scope);
    const query = parseInput(
      HistoryStreamQuerySchema,
      queryObject(pathAndSearch(request.url).search),
      'query',
    );
    const ctx = { tenantId: principal.tenantId };
    const filters = {
      ...(query.session_id === undefined ? {} : { session_id: query.session_id }),
      ...(query.type === undefined ? {} : { type: query.type }),
    };
    let last = lastEventId(request) ?? query.after_seq;
    const giveBack = limits.take(principal);
    if (last === undefined) {
      try {
        const head = await gatehouse.readHistory({ ...filters, limit: 1, order: 'desc' }, ctx);
        last = head.events[0]?.seq ?? 0;
      } catch (error) {
        giveBack();
        throw error;
      }
    }

    const stop = new AbortController();
    const onAbort = () => stop.abort();
    request.signal.addEventListener('abort', onAbort, { once: true });
    const openedAt = Date.now();
    let lastWrite = openedAt;
    let first = true;
    let ended = false;
    const authorization = request.headers.get('authorization');
    /**
     * Why the stream must end, null while the credential is still good: a key was revoked (or is
     * unknown; the store's key cache hears of revocations), a token is no longer accepted (it
     * expired), or a token cannot be checked now (its IdP is unavailable: the client reconnects,
     * and gets 503 until the IdP is back).
     */
    const keyEnds = async (): Promise<string | null> => {
      try {
        await authenticateBearer(keys, authorization, { authenticator: options.tokens, target: 'api' });
        return null;
      } catch (error) {
        if (error instanceof GatehouseError && error.code === 'unauthorized') {
          return principal.record?.kind === 'oidc'
            ? `the token is no longer accepted (${error.message})`
            : 'the API key was revoked';
        }
        if (error instanceof GatehouseError && error.code === 'unavailable') {
          return 'the token cannot be checked now (its identity provider is unavailable); reconnect with Last-Event-ID';
        }
        throw error;
      }
    };
    const release = () => {
      giveBack();
      request.signal.removeEventListener('abort', onAbort);
    };

    /** The next chunk to send, or undefined when the stream is over. */
    async function next(): Promise<string | undefined> {
      if (ended) return undefined;
      if (first) {
        first = false;
        return `retry: 2000\n: following after seq ${last}\n\n`;
      }
      for (;;) {
        if (stop.signal.aborted || feed.closed) return undefined;
        const lifeLeft = maxLifetimeMs - (Date.now() - openedAt);
        if (lifeLeft <= 0) {
          ended = true;
          return ': closed: the stream reached its maximum lifetime; reconnect with Last-Event-ID\n\n';
        }
        const ends = await keyEnds();
        if (ends !== null) {
          ended = true;
          return `: closed: ${ends}\n\n`;
        }
        const page = await gatehouse.readHistory(
          {
            ...filters,
            order: 'asc',
            limit: PAGE,
            ...(last! > 0 ? { cursor: encodeCursor({ seq: last!, order: 'asc' }) } : {}),
          },
          ctx,
        );
        let out = '';
        for (const event of page.events) {
          last = event.seq;
          if (query.verdict !== undefined && event.data['verdict'] !== query.verdict) continue;
          out += message(event);
        }
        if (out !== '') {
          lastWrite = Date.now();
          return out;
        }
        if (page.next_cursor !== null) continue;
        if (Date.now() - lastWrite >= heartbeatMs) {
          lastWrite = Date.now();
          return ': heartbeat\n\n';
        }
        await feed.wait(Math.min(pollMs, heartbeatMs - (Date.now() - lastWrite), lifeLeft), stop.signal);
      }
    }

    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const chunk = await next();
          if (chunk === undefined) {
            release();
            controller.close();
          } else controller.enqueue(encoder.encode(chunk));
        } catch {
          // The store failed mid-stream: end it; the client resumes from its last id.
          release();
          controller.close();
        }
      },
      cancel() {
        stop.abort();
        release();
      },
    });
    face.dropWhenStalled?.(stallMs);
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
      },
    });
  }

  return { kind: 'web', method: 'GET', path: HISTORY_STREAM_DOC.path, handle };
}
