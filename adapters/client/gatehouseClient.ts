/**
 * A typed client for the `/v1` HTTP API, on undici. Each method is one operation of the route
 * table (adapters/http/routes.ts: method, path, parameters, and the schema its answer is checked
 * against) and mirrors the core method of the same name, so code written against an in-process
 * `Gatehouse` moves to a remote one unchanged; failures are the same `GatehouseError` codes.
 */
import { context, propagation } from '@opentelemetry/api';
import { request } from 'undici';
import type { z } from 'zod';
import {
  type ActivePolicy,
  type Approval,
  type ApprovalPage,
  type ApprovalQuery,
  type ApprovalWait,
  type Conflict,
  type CreateWebhookInput,
  type DecideApprovalInput,
  type Decision,
  type DecisionRecord,
  type Delivery,
  type EraseInput,
  type EraseSubjectInput,
  type ErasureReport,
  type EvaluateInput,
  GatehouseError,
  type HistoryEvent,
  type HistoryPage,
  type HistoryQuery,
  type LegalHold,
  type LegalHoldList,
  MAX_APPROVAL_WAIT_SECONDS,
  type OutcomeInput,
  type PlaceHoldInput,
  type PolicyRevision,
  type PolicyRevisionList,
  type PolicyRevisionQuery,
  type RecordStateInput,
  type RecordStateResult,
  type ReplayInput,
  type ReplayReport,
  type ResolveConflictInput,
  type RetentionInput,
  type RetentionView,
  type Scope,
  type SessionTag,
  type StateItem,
  type SubjectErasureReport,
  type TagSessionInput,
  type VerifyResult,
  type Webhook,
  type WebhookWithSecret,
} from '../../src/index.js';
import type { ApiRoute } from '../http/route.js';
import { API_ROUTES, type OperationId } from '../http/routes.js';
import { type GatehouseClientOptions, MAX_TIMEOUT_MS, resolveClientOptions } from './clientOptions.js';
import { errorFromResponse, unavailableError } from './responseErrors.js';

/** Per-call options of the POST methods. */
export interface WriteOptions {
  /**
   * Sent as `Idempotency-Key`: the server replays the first response to a repeated key, so a
   * write retried after a timeout is applied once.
   */
  idempotencyKey?: string;
}

/** Query of {@link GatehouseClient.listConflicts}. */
export interface ConflictQuery {
  session_id?: string;
  key?: string;
  status?: 'open' | 'resolved';
}

/** Query of {@link GatehouseClient.listDeliveries}. */
export interface DeliveryQuery {
  status?: Delivery['status'];
  /** @default 50 (server side) */
  limit?: number;
  before_id?: string;
}

/**
 * The `/v1` API as methods. Every method rejects with a {@link GatehouseError}: the server's own
 * code for a problem+json answer, `invalid_request` for a request that cannot be sent (a body
 * that is not JSON-serialisable, a header value with control characters), `unavailable` when no
 * answer came in time.
 */
export interface GatehouseClient {
  /** `POST /v1/state/items`. @throws {GatehouseError} `invalid_request`, `forbidden`, `version_conflict` */
  recordState(input: RecordStateInput, options?: WriteOptions): Promise<RecordStateResult>;
  /** `GET /v1/state/items/{key}`. @throws {GatehouseError} `not_found` */
  getItem(sessionId: string, key: string): Promise<StateItem>;
  /** `GET /v1/state/items/{key}/versions/{version}`. @throws {GatehouseError} `not_found` */
  getItemVersion(sessionId: string, key: string, version: number): Promise<StateItem>;
  /** `GET /v1/state/items/{key}/versions`, oldest first. @throws {GatehouseError} `not_found` */
  listItemVersions(sessionId: string, key: string): Promise<StateItem[]>;
  /** `GET /v1/state/items`: the current items of a session. */
  listItems(sessionId: string): Promise<StateItem[]>;
  /** `GET /v1/state/conflicts`, newest first. */
  listConflicts(query?: ConflictQuery): Promise<Conflict[]>;
  /** `GET /v1/state/conflicts/{id}`. @throws {GatehouseError} `not_found` */
  getConflict(conflictId: string): Promise<Conflict>;
  /** `POST /v1/state/conflicts/{id}/resolve`. @throws {GatehouseError} `not_found`, `forbidden`, `version_conflict` */
  resolveConflict(conflictId: string, input: ResolveConflictInput, options?: WriteOptions): Promise<Conflict>;
  /** `POST /v1/gates/evaluate`. A Block is an answer (`allowed: false`), not an error. */
  evaluate(input: EvaluateInput, options?: WriteOptions): Promise<Decision>;
  /** `GET /v1/decisions/{id}`. @throws {GatehouseError} `not_found` */
  getDecision(decisionId: string): Promise<DecisionRecord>;
  /** `POST /v1/decisions/{id}/outcome`. @throws {GatehouseError} `not_found`, `already_recorded` */
  recordOutcome(decisionId: string, input: OutcomeInput, options?: WriteOptions): Promise<HistoryEvent>;
  /** `GET /v1/history/events`: one page, newest first by default. */
  readHistory(query?: HistoryQuery): Promise<HistoryPage>;
  /** `GET /v1/history/verify`: recomputes the tenant's hash chain. */
  verifyHistory(): Promise<VerifyResult>;
  /** `POST /v1/erasures` (scope `data:erase`): erase a session's caller content, or list it (`dry_run`). */
  eraseSession(input: EraseInput, options?: WriteOptions): Promise<ErasureReport>;
  /** `GET /v1/retention` (scope `admin`). */
  getRetention(): Promise<RetentionView>;
  /** `PUT /v1/retention` (scope `admin`). @throws {GatehouseError} `invalid_request` below the floor */
  putRetention(input: RetentionInput, options?: WriteOptions): Promise<RetentionView>;
  /** `POST /v1/legal-holds` (scope `admin`). */
  placeHold(input: PlaceHoldInput, options?: WriteOptions): Promise<LegalHold>;
  /** `GET /v1/legal-holds` (scope `admin`). */
  listHolds(): Promise<LegalHoldList>;
  /** `DELETE /v1/legal-holds/{id}` (scope `admin`). @throws {GatehouseError} `not_found` */
  releaseHold(holdId: string): Promise<LegalHold>;
  /** `POST /v1/erasures/subject` (scope `data:erase`): every session tagged with the subject, and the tags. */
  eraseSubject(input: EraseSubjectInput, options?: WriteOptions): Promise<SubjectErasureReport>;
  /** `POST /v1/subject-tags` (scope `state:write`). */
  tagSession(input: TagSessionInput, options?: WriteOptions): Promise<SessionTag>;
  /** `POST /v1/webhooks`; the secret is in this answer and never again. */
  createWebhook(input: CreateWebhookInput, options?: WriteOptions): Promise<WebhookWithSecret>;
  /** `GET /v1/webhooks`. */
  listWebhooks(): Promise<Webhook[]>;
  /** `GET /v1/webhooks/{id}`. @throws {GatehouseError} `not_found` */
  getWebhook(webhookId: string): Promise<Webhook>;
  /** `DELETE /v1/webhooks/{id}`. @throws {GatehouseError} `not_found` */
  deleteWebhook(webhookId: string): Promise<void>;
  /** `POST /v1/webhooks/{id}/rotate-secret`. @throws {GatehouseError} `not_found` */
  rotateWebhookSecret(
    webhookId: string,
    input?: { overlap_seconds?: number },
    options?: WriteOptions,
  ): Promise<WebhookWithSecret>;
  /** `POST /v1/webhooks/{id}/enable`. @throws {GatehouseError} `not_found` */
  enableWebhook(webhookId: string, options?: WriteOptions): Promise<Webhook>;
  /** `GET /v1/webhooks/{id}/deliveries`. @throws {GatehouseError} `not_found` */
  listDeliveries(webhookId: string, query?: DeliveryQuery): Promise<Delivery[]>;
  /** `POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver`. @throws {GatehouseError} `not_found` */
  redeliver(webhookId: string, deliveryId: string, options?: WriteOptions): Promise<Delivery>;
  /** `GET /v1/me`: the calling key's ID, name, tenant, scopes, labels and sources. */
  getMe(): Promise<{
    key_id: string;
    name: string | null;
    tenant_id: string;
    scopes: Scope[];
    sources: string[];
    labels: string[];
  }>;
  /** `GET /v1/approvals`: newest first (scope `approvals:decide`). */
  listApprovals(query?: ApprovalQuery): Promise<ApprovalPage>;
  /**
   * `GET /v1/approvals/{id}`; with `wait` (seconds, at most 60) the server answers once the
   * approval is decided or expired, or the wait is over. The call's deadline grows by the wait.
   * @throws {GatehouseError} `not_found`
   */
  getApproval(approvalId: string, query?: ApprovalWait): Promise<Approval>;
  /** `POST /v1/approvals/{id}/approve`. @throws {GatehouseError} `not_found`, `forbidden`, `already_recorded` */
  approve(approvalId: string, input?: DecideApprovalInput, options?: WriteOptions): Promise<Approval>;
  /** `POST /v1/approvals/{id}/deny`. @throws {GatehouseError} `not_found`, `forbidden`, `already_recorded` */
  deny(approvalId: string, input?: DecideApprovalInput, options?: WriteOptions): Promise<Approval>;
  /** `GET /v1/policy`: the policy in force (its `revision` is what {@link putPolicy} needs). */
  getPolicy(): Promise<ActivePolicy>;
  /**
   * `PUT /v1/policy` with `If-Match: "<ifMatch>"`: activates `policy` (YAML) if `ifMatch` is
   * still the active revision.
   * @throws {GatehouseError} `invalid_request` (the policy's problems), `precondition_failed`,
   *   `precondition_required`
   */
  putPolicy(policy: string, options: { ifMatch: string }): Promise<ActivePolicy>;
  /** `GET /v1/policy/revisions`, newest first. */
  listPolicyRevisions(query?: PolicyRevisionQuery): Promise<PolicyRevisionList>;
  /** `GET /v1/policy/revisions/{id}`. @throws {GatehouseError} `not_found` */
  getPolicyRevision(revision: string): Promise<PolicyRevision>;
  /** `POST /v1/policy/replay` (at most 100,000 decisions per call; continue with `after_seq`). */
  replayPolicy(input: ReplayInput, options?: WriteOptions): Promise<ReplayReport>;
}

// The client's methods are exactly the table's operations: a route without a method (or a method
// without a route) is a type error here.
type Missing = Exclude<OperationId, keyof GatehouseClient> | Exclude<keyof GatehouseClient, OperationId>;
const everyOperationHasAMethod: [Missing] extends [never] ? true : Missing = true;
void everyOperationHasAMethod;

type Routes = typeof API_ROUTES;
/** The answer type of an operation, from its response schema. */
type Answer<K extends OperationId> =
  Routes[K] extends ApiRoute<z.ZodType, z.ZodType, infer R> ? z.output<R> : never;

type Query = Record<string, unknown>;

/** What undici refuses in a header value (RFC 9110 field-value: no control characters). */
const INVALID_HEADER_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/** The body as JSON, or the caller's mistake: a BigInt, a circular reference, a throwing `toJSON`. */
function serialise(body: unknown): string {
  try {
    return JSON.stringify(body);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new GatehouseError('invalid_request', `The request body cannot be serialised as JSON: ${reason}`, {
      errors: [{ path: 'body', message: 'cannot be serialised as JSON' }],
      cause: error,
    });
  }
}

/** The seconds `getApproval` may wait, clamped to what the server allows. */
function approvalWaitSeconds(wait: unknown): number {
  const seconds = Number(wait ?? 0);
  return Number.isFinite(seconds) ? Math.min(Math.max(seconds, 0), MAX_APPROVAL_WAIT_SECONDS) : 0;
}

interface Call {
  params?: Record<string, string | number>;
  query?: Query;
  body?: unknown;
  options?: WriteOptions | undefined;
  /** This call's deadline, when it is not the client's `timeoutMs` (a long-poll). */
  timeoutMs?: number;
  headers?: Record<string, string>;
}

/**
 * Creates a `/v1` client. It never retries on its own: pass an `idempotencyKey` and retry a
 * write yourself when an `unavailable` error may hide a request the server did apply.
 * @throws {GatehouseError} `invalid_request` naming the option: a `baseUrl` that is not an absolute
 *   http(s) URL or has a query or fragment, an `apiKey` with whitespace or control characters, a
 *   `timeoutMs` that is not a whole number from 1 to 2^31-1
 * @example
 * const gatehouse = createGatehouseClient({ baseUrl: 'http://127.0.0.1:8787', apiKey: process.env.GATEHOUSE_API_KEY! });
 * const decision = await gatehouse.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } });
 * if (!decision.allowed) throw new Error(decision.reason);
 */
export function createGatehouseClient(options: GatehouseClientOptions): GatehouseClient {
  const { base, origin, authorization, timeoutMs } = resolveClientOptions(options);

  async function send(route: ApiRoute, call: Call): Promise<string> {
    const deadline = call.timeoutMs ?? timeoutMs;
    const path = route.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeURIComponent(String(call.params?.[name] ?? '')),
    );
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) search.set(name, String(value));
    }
    const qs = search.size > 0 ? `?${search}` : '';
    const headers: Record<string, string> = { authorization, accept: 'application/json' };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    if (call.options?.idempotencyKey !== undefined) headers['idempotency-key'] = call.options.idempotencyKey;
    Object.assign(headers, call.headers);
    // The caller's trace continues on the server (`traceparent`, `tracestate`); a no-op without an SDK.
    propagation.inject(context.active(), headers);
    // What the caller got wrong is checked before the `try` below, which blames the network.
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== 'string' || INVALID_HEADER_CHAR.test(value)) {
        throw new GatehouseError(
          'invalid_request',
          `The ${name} header must be text without control characters.`,
          {
            errors: [{ path: name, message: 'must be text without control characters' }],
          },
        );
      }
    }
    const body = call.body === undefined ? undefined : serialise(call.body);

    let status: number;
    let responseHeaders: Record<string, string | string[] | undefined>;
    let text: string;
    try {
      const response = await request(`${base}${path}${qs}`, {
        method: route.method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
        // undici's own timers tick once a second; the signal is the precise, overall deadline.
        signal: AbortSignal.timeout(deadline),
        headersTimeout: deadline,
        bodyTimeout: deadline,
      });
      status = response.statusCode;
      responseHeaders = response.headers;
      // Read every body, even an error's or a 204's, so the socket goes back to the pool.
      text = await response.body.text();
    } catch (error) {
      throw unavailableError(origin, error, deadline);
    }
    if (status < 200 || status >= 300) throw errorFromResponse(status, responseHeaders, text);
    return text;
  }

  /** Calls an operation and checks its answer against the route's response schema. */
  async function invoke<K extends OperationId>(operationId: K, call: Call = {}): Promise<Answer<K>> {
    const route: ApiRoute = API_ROUTES[operationId];
    const text = await send(route, call);
    const schema = route.response.schema;
    if (schema === undefined) return undefined as Answer<K>;
    const where = `${route.method} ${route.path}`;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new GatehouseError('internal', `The Gatehouse server sent a body that is not JSON (${where}).`, {
        cause: error,
      });
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new GatehouseError(
        'internal',
        `The Gatehouse server's answer to ${where} does not match the /v1 contract.`,
        { cause: parsed.error },
      );
    }
    return parsed.data as Answer<K>;
  }

  const session = (sessionId: string) => ({ session_id: sessionId });

  return {
    recordState: (input, opts) => invoke('recordState', { body: input, options: opts }),
    getItem: (sessionId, key) => invoke('getItem', { params: { key }, query: session(sessionId) }),
    getItemVersion: (sessionId, key, version) =>
      invoke('getItemVersion', { params: { key, version }, query: session(sessionId) }),
    listItemVersions: async (sessionId, key) =>
      (await invoke('listItemVersions', { params: { key }, query: session(sessionId) })).versions,
    listItems: async (sessionId) => (await invoke('listItems', { query: session(sessionId) })).items,
    listConflicts: async (query = {}) => (await invoke('listConflicts', { query: { ...query } })).conflicts,
    getConflict: (conflictId) => invoke('getConflict', { params: { id: conflictId } }),
    resolveConflict: (conflictId, input, opts) =>
      invoke('resolveConflict', { params: { id: conflictId }, body: input, options: opts }),
    evaluate: (input, opts) => invoke('evaluate', { body: input, options: opts }),
    getDecision: (decisionId) => invoke('getDecision', { params: { id: decisionId } }),
    recordOutcome: (decisionId, input, opts) =>
      invoke('recordOutcome', { params: { id: decisionId }, body: input, options: opts }),
    readHistory: (query = {}) => invoke('readHistory', { query: { ...query } }),
    verifyHistory: () => invoke('verifyHistory'),
    eraseSession: (input, opts) => invoke('eraseSession', { body: input, options: opts }),
    getRetention: () => invoke('getRetention'),
    putRetention: (input, opts) => invoke('putRetention', { body: input, options: opts }),
    placeHold: (input, opts) => invoke('placeHold', { body: input, options: opts }),
    listHolds: () => invoke('listHolds'),
    releaseHold: (holdId) => invoke('releaseHold', { params: { id: holdId } }),
    eraseSubject: (input, opts) => invoke('eraseSubject', { body: input, options: opts }),
    tagSession: (input, opts) => invoke('tagSession', { body: input, options: opts }),
    createWebhook: (input, opts) => invoke('createWebhook', { body: input, options: opts }),
    listWebhooks: async () => (await invoke('listWebhooks')).webhooks,
    getWebhook: (webhookId) => invoke('getWebhook', { params: { id: webhookId } }),
    deleteWebhook: async (webhookId) => {
      await invoke('deleteWebhook', { params: { id: webhookId } });
    },
    rotateWebhookSecret: (webhookId, input = {}, opts) =>
      invoke('rotateWebhookSecret', { params: { id: webhookId }, body: input, options: opts }),
    enableWebhook: (webhookId, opts) => invoke('enableWebhook', { params: { id: webhookId }, options: opts }),
    listDeliveries: async (webhookId, query = {}) =>
      (await invoke('listDeliveries', { params: { id: webhookId }, query: { ...query } })).deliveries,
    redeliver: (webhookId, deliveryId, opts) =>
      invoke('redeliver', { params: { id: webhookId, delivery_id: deliveryId }, options: opts }),
    getMe: () => invoke('getMe'),
    listApprovals: (query = {}) => invoke('listApprovals', { query: { ...query } }),
    getApproval: (approvalId, query = {}) =>
      invoke('getApproval', {
        params: { id: approvalId },
        query: { ...query },
        // The server may hold the answer for the whole wait (a wrong `wait` is its to refuse).
        timeoutMs: Math.min(MAX_TIMEOUT_MS, timeoutMs + Math.ceil(approvalWaitSeconds(query.wait) * 1000)),
      }),
    approve: (approvalId, input = {}, opts) =>
      invoke('approve', { params: { id: approvalId }, body: input, options: opts }),
    deny: (approvalId, input = {}, opts) =>
      invoke('deny', { params: { id: approvalId }, body: input, options: opts }),
    getPolicy: () => invoke('getPolicy'),
    putPolicy: (policy, { ifMatch }) =>
      invoke('putPolicy', { body: { policy }, headers: { 'if-match': `"${ifMatch}"` } }),
    listPolicyRevisions: (query = {}) => invoke('listPolicyRevisions', { query: { ...query } }),
    getPolicyRevision: (revision) => invoke('getPolicyRevision', { params: { id: revision } }),
    replayPolicy: (input, opts) => invoke('replayPolicy', { body: input, options: opts }),
  };
}
