/**
 * The shape of one `/v1` route, declared once: the server's pipeline, the OpenAPI document and
 * the typed client are all read from it. Kept free of server dependencies (no Hono, Keyv, pino)
 * so that `gatehouse/client` can import the table without pulling the server in.
 */
import type { z } from 'zod';
import type { CallContext, ErrorCode, Gatehouse, Principal, Scope } from '../../src/index.js';

/** The methods `/v1` routes use. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Success statuses a route may answer with. */
export type SuccessStatus = 200 | 201 | 202 | 204;

/** What a route's handler receives: parsed path and query, the raw JSON body, the caller. */
export interface RouteCall<P, Q> {
  params: P;
  query: Q;
  /**
   * The parsed JSON body, not yet validated: the core parses it with the contract's schema, so
   * each request is validated once.
   */
  body: unknown;
  /** The caller's tenant and the sources it may write. */
  context: CallContext;
  /** The authenticated key (`GET /v1/me` describes it). */
  principal: Principal;
  gatehouse: Gatehouse;
  /** Counts a decision in the metrics (the evaluate route). */
  observeDecision(verdict: string): void;
  /** A request header by lower-case name (only those the route declares in `headers`). */
  header(name: string): string | undefined;
  /** Aborts when the client goes away before the answer is sent (a long-poll then ends). */
  readonly signal: AbortSignal;
}

/** A request header a route reads, for the OpenAPI document. */
export interface RouteHeader {
  /** Lower-case name. */
  name: string;
  description: string;
}

/** One `/v1` operation. `P`, `Q` and `R` are the zod schemas of path, query and response. */
export interface ApiRoute<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** OpenAPI-style path: `/v1/state/items/{key}`. */
  path: string;
  /** One line for the document and the client's JSDoc. */
  summary: string;
  description?: string;
  /** The document's tag (an area of the API). */
  tag: 'State' | 'Gate' | 'History' | 'Webhooks' | 'Approvals' | 'Keys' | 'Policy';
  /**
   * The scope a key needs; for a list, any one of them; `null` lets any valid key call it
   * (`GET /v1/me`).
   */
  scope: Scope | readonly [Scope, ...Scope[]] | null;
  /** Path parameters, by name; strings as sent, after percent-decoding. */
  params?: P;
  /** Query parameters (a strict object: unknown ones are `invalid_request`). */
  query?: Q;
  /** The JSON body: its contract schema (validated by the core), and whether it may be absent. */
  body?: { schema: z.ZodType; name: string; optional?: boolean };
  /** The success answer: its schema (none for 204) and a description per status. */
  response: { schema?: R; name?: string; statuses: Partial<Record<SuccessStatus, string>> };
  /** Request headers the handler reads (besides auth and `Idempotency-Key`). */
  headers?: readonly RouteHeader[];
  /** Response headers derived from the answer (an `ETag`). */
  responseHeaders?(body: z.output<R>): Record<string, string>;
  /** The status of an answer, when it depends on it. @default the first of `response.statuses` */
  statusOf?(body: z.output<R>): SuccessStatus;
  /** Error codes the operation itself produces, besides auth, scope, limits and validation. */
  errors: readonly ErrorCode[];
  /**
   * The sessions this operation erased, read off its answer. Entries of the `Idempotency-Key`
   * store kept for requests naming them are deleted at once, and this route's own answers are
   * replayed without the erasure check (they hold no erased content).
   */
  erases?(body: z.output<R>): readonly string[];
  /** Calls the core: adapters translate, the core decides. */
  handle(call: RouteCall<z.output<P>, z.output<Q>>): Promise<z.output<R>>;
}

/** Declares a route with its types inferred from its schemas. */
export function defineRoute<P extends z.ZodType, Q extends z.ZodType, R extends z.ZodType>(
  route: ApiRoute<P, Q, R>,
): ApiRoute<P, Q, R> {
  return route;
}

/** The first declared success status of a route. */
export function defaultStatus(route: ApiRoute): SuccessStatus {
  return Number(Object.keys(route.response.statuses)[0]) as SuccessStatus;
}
