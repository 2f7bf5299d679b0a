/**
 * Every `/v1` operation, declared once. The key is the operationId and the client's method name;
 * the server's pipeline, the OpenAPI document and `gatehouse/client` are derived from this table.
 * To add a route: add an entry here (schemas from src/schemas.ts, the contract), and a method
 * with the same name to the client's interface; the tests fail until both exist.
 */
import { z } from 'zod';
import {
  ActivePolicySchema,
  ApprovalPageSchema,
  ApprovalQuerySchema,
  ApprovalSchema,
  ApprovalWaitSchema,
  ConflictSchema,
  CreateWebhookInputSchema,
  DecideApprovalInputSchema,
  DecisionRecordSchema,
  DecisionSchema,
  DeliverySchema,
  EraseInputSchema,
  EraseSubjectInputSchema,
  ErasureReportSchema,
  EvaluateInputSchema,
  entityTagOf,
  HistoryEventSchema,
  HistoryPageSchema,
  HistoryQuerySchema,
  LegalHoldListSchema,
  LegalHoldSchema,
  OutcomeInputSchema,
  PlaceHoldInputSchema,
  PolicyRevisionListSchema,
  PolicyRevisionQuerySchema,
  PolicyRevisionSchema,
  PrincipalRecordSchema,
  PutPolicyInputSchema,
  parseInput,
  principalOfKey,
  queryNumber,
  RecordStateInputSchema,
  RecordStateResultSchema,
  ReplayInputSchema,
  ReplayReportSchema,
  ResolveConflictInputSchema,
  RetentionInputSchema,
  RetentionViewSchema,
  RotateSecretInputSchema,
  revisionFromEntityTag,
  ScopeSchema,
  SessionTagSchema,
  StateItemSchema,
  SubjectErasureReportSchema,
  TagSessionInputSchema,
  VerifyResultSchema,
  WebhookSchema,
  WebhookWithSecretSchema,
} from '../../src/index.js';
import { defineRoute } from './route.js';

// ---- parameters ---------------------------------------------------------------------------------

const KeyParam = z.object({ key: z.string().describe('The item key, e.g. `budget.limit`.') });
const KeyVersionParams = KeyParam.extend({
  version: queryNumber('version', { min: 1 }).describe('A version number, from 1.'),
});
const IdParam = z.object({ id: z.string().describe('The object ID.') });
const DeliveryParams = IdParam.extend({ delivery_id: z.string().describe('The delivery ID.') });

const RevisionParam = z.object({ id: z.string().describe('A policy revision (64 hex digits).') });

/** Decisions one `POST /v1/policy/replay` replays at most; `next_after_seq` continues. */
export const HTTP_REPLAY_LIMIT = 100_000;

/** The replay body with the HTTP page size applied (the core itself has no limit). */
function withReplayLimit(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const limit = (body as { limit?: unknown }).limit;
  if (limit === undefined) return { ...body, limit: HTTP_REPLAY_LIMIT };
  return typeof limit === 'number' && limit > HTTP_REPLAY_LIMIT
    ? { ...body, limit: HTTP_REPLAY_LIMIT }
    : body;
}

const SessionQuery = z.strictObject({ session_id: z.string().describe('The session.') });
const ConflictsQuery = z.strictObject({
  session_id: z.string().optional().describe('Only this session.'),
  key: z.string().optional().describe('Only this key.'),
  status: z.enum(['open', 'resolved']).optional().describe('Only open or only resolved conflicts.'),
});
const DeliveriesQuery = z.strictObject({
  status: z.enum(['pending', 'delivered', 'failed']).optional().describe('Only deliveries in this state.'),
  limit: queryNumber('limit', { min: 1, max: 500 }).default(50).describe('Page size, 1 to 500.'),
  before_id: z.string().max(64).optional().describe('Deliveries older than this delivery ID.'),
});

// ---- list envelopes -----------------------------------------------------------------------------

const ItemList = z.object({ items: z.array(StateItemSchema) });
const VersionList = z.object({ versions: z.array(StateItemSchema) });
const ConflictList = z.object({ conflicts: z.array(ConflictSchema) });
const WebhookList = z.object({ webhooks: z.array(WebhookSchema) });
const DeliveryList = z.object({ deliveries: z.array(DeliverySchema) });

/** `GET /v1/me`: the calling key, so a client (the console) shows only what the key may use. */
const MeSchema = z.object({
  key_id: z.string(),
  name: z.string().nullable(),
  tenant_id: z.string(),
  scopes: z.array(ScopeSchema),
  sources: z.array(z.string()),
  /** Matched against a policy's `approval.approvers`. */
  labels: z.array(z.string()),
  /** Who the caller is as events record it: the key, or a token's issuer, subject and client. */
  principal: PrincipalRecordSchema,
});

/** The `/v1` operations, by operationId. */
export const API_ROUTES = {
  // ---- state ------------------------------------------------------------------------------------
  recordState: defineRoute({
    method: 'POST',
    path: '/v1/state/items',
    tag: 'State',
    summary: 'Record a state item',
    description:
      'Canonical key, classification, versioning and the conflict rule: a lower-trust write that differs opens a conflict instead of replacing the value.',
    scope: 'state:write',
    body: { schema: RecordStateInputSchema, name: 'RecordStateInput' },
    response: {
      schema: RecordStateResultSchema,
      name: 'RecordStateResult',
      statuses: { 201: 'A new version was written.', 200: 'Nothing was written (unchanged, or a conflict).' },
    },
    statusOf: (result) => (result.changed ? 201 : 200),
    errors: ['version_conflict'],
    handle: ({ gatehouse, body, context }) => gatehouse.recordState(body as never, context),
  }),
  listItems: defineRoute({
    method: 'GET',
    path: '/v1/state/items',
    tag: 'State',
    summary: 'List the current items of a session',
    scope: 'state:read',
    query: SessionQuery,
    response: { schema: ItemList, name: 'ItemList', statuses: { 200: 'The current items.' } },
    errors: [],
    handle: async ({ gatehouse, query, context }) => ({
      items: await gatehouse.listItems(query.session_id, context),
    }),
  }),
  getItem: defineRoute({
    method: 'GET',
    path: '/v1/state/items/{key}',
    tag: 'State',
    summary: 'Read the current item',
    scope: 'state:read',
    params: KeyParam,
    query: SessionQuery,
    response: { schema: StateItemSchema, name: 'StateItem', statuses: { 200: 'The current version.' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, query, context }) =>
      gatehouse.getItem(query.session_id, params.key, context),
  }),
  listItemVersions: defineRoute({
    method: 'GET',
    path: '/v1/state/items/{key}/versions',
    tag: 'State',
    summary: 'List every version of an item, oldest first',
    scope: 'state:read',
    params: KeyParam,
    query: SessionQuery,
    response: { schema: VersionList, name: 'VersionList', statuses: { 200: 'All versions.' } },
    errors: ['not_found'],
    handle: async ({ gatehouse, params, query, context }) => ({
      versions: await gatehouse.listItemVersions(query.session_id, params.key, context),
    }),
  }),
  getItemVersion: defineRoute({
    method: 'GET',
    path: '/v1/state/items/{key}/versions/{version}',
    tag: 'State',
    summary: 'Read one version of an item',
    scope: 'state:read',
    params: KeyVersionParams,
    query: SessionQuery,
    response: { schema: StateItemSchema, name: 'StateItem', statuses: { 200: 'That version.' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, query, context }) =>
      gatehouse.getItemVersion(query.session_id, params.key, params.version, context),
  }),
  listConflicts: defineRoute({
    method: 'GET',
    path: '/v1/state/conflicts',
    tag: 'State',
    summary: 'List conflicts, newest first',
    scope: 'state:read',
    query: ConflictsQuery,
    response: { schema: ConflictList, name: 'ConflictList', statuses: { 200: 'The conflicts.' } },
    errors: [],
    handle: async ({ gatehouse, query, context }) => ({
      conflicts: await gatehouse.listConflicts(
        {
          ...(query.session_id === undefined ? {} : { session_id: query.session_id }),
          ...(query.key === undefined ? {} : { key: query.key }),
          ...(query.status === undefined ? {} : { status: query.status }),
        },
        context,
      ),
    }),
  }),
  getConflict: defineRoute({
    method: 'GET',
    path: '/v1/state/conflicts/{id}',
    tag: 'State',
    summary: 'Read a conflict',
    scope: 'state:read',
    params: IdParam,
    response: { schema: ConflictSchema, name: 'Conflict', statuses: { 200: 'The conflict.' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, context }) => gatehouse.getConflict(params.id, context),
  }),
  resolveConflict: defineRoute({
    method: 'POST',
    path: '/v1/state/conflicts/{id}/resolve',
    tag: 'State',
    summary: 'Resolve an open conflict',
    scope: 'state:write',
    params: IdParam,
    body: { schema: ResolveConflictInputSchema, name: 'ResolveConflictInput' },
    response: { schema: ConflictSchema, name: 'Conflict', statuses: { 200: 'The resolved conflict.' } },
    errors: ['not_found', 'version_conflict'],
    handle: ({ gatehouse, params, body, context }) =>
      gatehouse.resolveConflict(params.id, body as never, context),
  }),

  // ---- gate and decisions -----------------------------------------------------------------------
  evaluate: defineRoute({
    method: 'POST',
    path: '/v1/gates/evaluate',
    tag: 'Gate',
    summary: 'Evaluate an action',
    description: 'A Block is an answer, not a failure: 200 with `allowed: false` and the reasons.',
    scope: 'gate:evaluate',
    body: { schema: EvaluateInputSchema, name: 'EvaluateInput' },
    response: { schema: DecisionSchema, name: 'Decision', statuses: { 200: 'The decision (recorded).' } },
    errors: [],
    handle: async ({ gatehouse, body, context, observeDecision }) => {
      const decision = await gatehouse.evaluate(body as never, context);
      observeDecision(decision.verdict);
      return decision;
    },
  }),
  getDecision: defineRoute({
    method: 'GET',
    path: '/v1/decisions/{id}',
    tag: 'Gate',
    summary: 'Read a decision with the inputs it was made on',
    scope: 'history:read',
    params: IdParam,
    response: {
      schema: DecisionRecordSchema,
      name: 'DecisionRecord',
      statuses: { 200: 'The decision, its params and context (secrets masked).' },
    },
    errors: ['not_found'],
    handle: ({ gatehouse, params, context }) => gatehouse.getDecision(params.id, context),
  }),
  recordOutcome: defineRoute({
    method: 'POST',
    path: '/v1/decisions/{id}/outcome',
    tag: 'Gate',
    summary: 'Record what happened after a decision (once)',
    scope: 'gate:evaluate',
    params: IdParam,
    body: { schema: OutcomeInputSchema, name: 'OutcomeInput' },
    response: {
      schema: HistoryEventSchema,
      name: 'HistoryEvent',
      statuses: { 201: 'The `action_outcome` event.' },
    },
    errors: ['not_found', 'already_recorded'],
    handle: ({ gatehouse, params, body, context }) =>
      gatehouse.recordOutcome(params.id, body as never, context),
  }),

  // ---- history ----------------------------------------------------------------------------------
  readHistory: defineRoute({
    method: 'GET',
    path: '/v1/history/events',
    tag: 'History',
    summary: 'Read one page of history events',
    scope: 'history:read',
    query: HistoryQuerySchema,
    response: { schema: HistoryPageSchema, name: 'HistoryPage', statuses: { 200: 'A page of events.' } },
    errors: [],
    handle: ({ gatehouse, query, context }) => gatehouse.readHistory(query, context),
  }),
  verifyHistory: defineRoute({
    method: 'GET',
    path: '/v1/history/verify',
    tag: 'History',
    summary: "Recompute the tenant's hash chain",
    scope: 'history:read',
    response: { schema: VerifyResultSchema, name: 'VerifyResult', statuses: { 200: 'The result.' } },
    errors: [],
    handle: ({ gatehouse, context }) => gatehouse.verifyHistory(context),
  }),
  getRetention: defineRoute({
    method: 'GET',
    path: '/v1/retention',
    tag: 'History',
    summary: "The tenant's retention in force (set here, else the policy's retention:)",
    scope: 'admin',
    response: { schema: RetentionViewSchema, name: 'RetentionView', statuses: { 200: 'The retention.' } },
    errors: [],
    handle: ({ gatehouse, context }) => gatehouse.getRetention(context),
  }),
  putRetention: defineRoute({
    method: 'PUT',
    path: '/v1/retention',
    tag: 'History',
    summary: "Set the tenant's retention (values_after, history_after: 90d; the floor is 183d)",
    scope: 'admin',
    body: { schema: RetentionInputSchema, name: 'RetentionInput' },
    response: {
      schema: RetentionViewSchema,
      name: 'RetentionView',
      statuses: { 200: 'The retention in force.' },
    },
    errors: [],
    handle: ({ gatehouse, body, context }) => gatehouse.putRetention(body as never, context),
  }),
  placeHold: defineRoute({
    method: 'POST',
    path: '/v1/legal-holds',
    tag: 'History',
    summary: 'Place a legal hold on a session or (without session_id) the tenant',
    description:
      'While it is in force, what it covers is neither erased nor pruned unless the request sets `override_hold` (which needs scope admin too), recorded as `legal_hold.overridden`.',
    scope: 'admin',
    body: { schema: PlaceHoldInputSchema, name: 'PlaceHoldInput' },
    response: { schema: LegalHoldSchema, name: 'LegalHold', statuses: { 200: 'The hold, in force.' } },
    errors: [],
    handle: ({ gatehouse, body, context }) => gatehouse.placeHold(body as never, context),
  }),
  listHolds: defineRoute({
    method: 'GET',
    path: '/v1/legal-holds',
    tag: 'History',
    summary: 'List the legal holds in force',
    scope: 'admin',
    response: { schema: LegalHoldListSchema, name: 'LegalHoldList', statuses: { 200: 'The holds.' } },
    errors: [],
    handle: ({ gatehouse, context }) => gatehouse.listHolds(context),
  }),
  releaseHold: defineRoute({
    method: 'DELETE',
    path: '/v1/legal-holds/{id}',
    tag: 'History',
    summary: 'Release a legal hold',
    scope: 'admin',
    params: IdParam,
    response: { schema: LegalHoldSchema, name: 'LegalHold', statuses: { 200: 'The released hold.' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, context }) => gatehouse.releaseHold(params.id, context),
  }),
  eraseSession: defineRoute({
    method: 'POST',
    path: '/v1/erasures',
    tag: 'History',
    summary: "Erase what callers wrote into a session (or list it: dry_run); the chain's envelopes stay",
    scope: 'data:erase',
    body: { schema: EraseInputSchema, name: 'EraseInput' },
    response: {
      schema: ErasureReportSchema,
      name: 'ErasureReport',
      statuses: {
        200: 'What was erased, with the erasure.completed event (or, on a dry run, what would be).',
      },
    },
    errors: [],
    erases: (report) => (report.dry_run ? [] : [report.session_id]),
    handle: ({ gatehouse, body, context }) => gatehouse.eraseSession(body as never, context),
  }),
  eraseSubject: defineRoute({
    method: 'POST',
    path: '/v1/erasures/subject',
    tag: 'History',
    summary: 'Erase every session tagged with a subject, and the tags (or list it: dry_run)',
    scope: 'data:erase',
    body: { schema: EraseSubjectInputSchema, name: 'EraseSubjectInput' },
    response: {
      schema: SubjectErasureReportSchema,
      name: 'SubjectErasureReport',
      statuses: { 200: 'One erasure report per tagged session.' },
    },
    errors: [],
    erases: (report) => (report.dry_run ? [] : report.sessions.map((s) => s.session_id)),
    handle: ({ gatehouse, body, context }) => gatehouse.eraseSubject(body as never, context),
  }),
  tagSession: defineRoute({
    method: 'POST',
    path: '/v1/subject-tags',
    tag: 'State',
    summary:
      'Tag a session with a pseudonymous subject, so one erasure request covers all its sessions (moving a tagged session to another subject needs data:erase)',
    scope: 'state:write',
    body: { schema: TagSessionInputSchema, name: 'TagSessionInput' },
    response: { schema: SessionTagSchema, name: 'SessionTag', statuses: { 200: 'The tag.' } },
    errors: [],
    handle: ({ gatehouse, body, context }) => gatehouse.tagSession(body as never, context),
  }),

  // ---- webhooks ---------------------------------------------------------------------------------
  createWebhook: defineRoute({
    method: 'POST',
    path: '/v1/webhooks',
    tag: 'Webhooks',
    summary: 'Register a webhook (the secret is shown once)',
    scope: 'webhooks:manage',
    body: { schema: CreateWebhookInputSchema, name: 'CreateWebhookInput' },
    response: {
      schema: WebhookWithSecretSchema,
      name: 'WebhookWithSecret',
      statuses: { 201: 'The webhook with its signing secret.' },
    },
    errors: [],
    handle: ({ gatehouse, body, context }) => gatehouse.createWebhook(body as never, context),
  }),
  listWebhooks: defineRoute({
    method: 'GET',
    path: '/v1/webhooks',
    tag: 'Webhooks',
    summary: 'List webhooks',
    scope: 'webhooks:manage',
    response: { schema: WebhookList, name: 'WebhookList', statuses: { 200: 'The webhooks.' } },
    errors: [],
    handle: async ({ gatehouse, context }) => ({ webhooks: await gatehouse.listWebhooks(context) }),
  }),
  getWebhook: defineRoute({
    method: 'GET',
    path: '/v1/webhooks/{id}',
    tag: 'Webhooks',
    summary: 'Read a webhook',
    scope: 'webhooks:manage',
    params: IdParam,
    response: { schema: WebhookSchema, name: 'Webhook', statuses: { 200: 'The webhook (no secret).' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, context }) => gatehouse.getWebhook(params.id, context),
  }),
  deleteWebhook: defineRoute({
    method: 'DELETE',
    path: '/v1/webhooks/{id}',
    tag: 'Webhooks',
    summary: 'Delete a webhook',
    scope: 'webhooks:manage',
    params: IdParam,
    response: { statuses: { 204: 'Deleted.' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, context }) => gatehouse.deleteWebhook(params.id, context),
  }),
  rotateWebhookSecret: defineRoute({
    method: 'POST',
    path: '/v1/webhooks/{id}/rotate-secret',
    tag: 'Webhooks',
    summary: 'Rotate the signing secret',
    description: 'The old secret keeps signing alongside the new one for `overlap_seconds`.',
    scope: 'webhooks:manage',
    params: IdParam,
    body: { schema: RotateSecretInputSchema, name: 'RotateSecretInput', optional: true },
    response: {
      schema: WebhookWithSecretSchema,
      name: 'WebhookWithSecret',
      statuses: { 200: 'The webhook with its new secret.' },
    },
    errors: ['not_found'],
    handle: ({ gatehouse, params, body, context }) =>
      gatehouse.rotateWebhookSecret(params.id, body as never, context),
  }),
  enableWebhook: defineRoute({
    method: 'POST',
    path: '/v1/webhooks/{id}/enable',
    tag: 'Webhooks',
    summary: 'Re-enable a disabled webhook',
    scope: 'webhooks:manage',
    params: IdParam,
    response: { schema: WebhookSchema, name: 'Webhook', statuses: { 200: 'The webhook, active.' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, context }) => gatehouse.enableWebhook(params.id, context),
  }),
  listDeliveries: defineRoute({
    method: 'GET',
    path: '/v1/webhooks/{id}/deliveries',
    tag: 'Webhooks',
    summary: "List a webhook's deliveries, newest first",
    scope: 'webhooks:manage',
    params: IdParam,
    query: DeliveriesQuery,
    response: { schema: DeliveryList, name: 'DeliveryList', statuses: { 200: 'The deliveries.' } },
    errors: ['not_found'],
    handle: async ({ gatehouse, params, query, context }) => ({
      deliveries: await gatehouse.listDeliveries(
        params.id,
        {
          limit: query.limit,
          ...(query.status === undefined ? {} : { status: query.status }),
          ...(query.before_id === undefined ? {} : { before_id: query.before_id }),
        },
        context,
      ),
    }),
  }),
  redeliver: defineRoute({
    method: 'POST',
    path: '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver',
    tag: 'Webhooks',
    summary: 'Queue a delivery again, now',
    scope: 'webhooks:manage',
    params: DeliveryParams,
    response: { schema: DeliverySchema, name: 'Delivery', statuses: { 202: 'The delivery, queued.' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, context }) => gatehouse.redeliver(params.id, params.delivery_id, context),
  }),

  // ---- keys -------------------------------------------------------------------------------------
  getMe: defineRoute({
    method: 'GET',
    path: '/v1/me',
    tag: 'Keys',
    summary: 'Describe the calling API key',
    description: 'Its ID, name, tenant, scopes, labels and the sources it may write; any valid key may ask.',
    scope: null,
    response: { schema: MeSchema, name: 'Me', statuses: { 200: 'The calling key (never its secret).' } },
    errors: [],
    handle: async ({ principal }) => ({
      key_id: principal.keyId,
      name: principal.name ?? null,
      tenant_id: principal.tenantId,
      scopes: [...principal.scopes],
      sources: [...principal.sources],
      labels: [...(principal.labels ?? [])],
      principal: principal.record ?? principalOfKey(principal.keyId),
    }),
  }),
  // ---- approvals --------------------------------------------------------------------------------
  listApprovals: defineRoute({
    method: 'GET',
    path: '/v1/approvals',
    tag: 'Approvals',
    summary: 'List approvals, newest first',
    description:
      'Approvals past their `expires_at` are marked `expired` (with an `approval.expired` event) first.',
    scope: 'approvals:decide',
    query: ApprovalQuerySchema,
    response: { schema: ApprovalPageSchema, name: 'ApprovalPage', statuses: { 200: 'A page of approvals.' } },
    errors: [],
    handle: ({ gatehouse, query, context }) => gatehouse.listApprovals(query, context),
  }),
  getApproval: defineRoute({
    method: 'GET',
    path: '/v1/approvals/{id}',
    tag: 'Approvals',
    summary: 'Read an approval; `?wait=30` waits until it is decided or expired',
    description:
      'With `wait` (seconds, at most 60) a pending approval is answered when it is approved, denied or expires, or when the wait is over (then still `pending`). Needs `gate:evaluate` (the agent waiting) or `approvals:decide`. A key without `approvals:decide`, `history:read` or `admin` reads only the approvals its own evaluations asked for; any other is 404, as if it did not exist.',
    scope: ['gate:evaluate', 'approvals:decide'],
    params: IdParam,
    query: ApprovalWaitSchema,
    response: { schema: ApprovalSchema, name: 'Approval', statuses: { 200: 'The approval.' } },
    errors: ['not_found'],
    // A wait ends when the client goes away, so an abandoned long-poll stops reading the store.
    handle: ({ gatehouse, params, query, context, signal }) =>
      gatehouse.getApproval(params.id, query, query.wait ? { ...context, signal } : context),
  }),
  approve: defineRoute({
    method: 'POST',
    path: '/v1/approvals/{id}/approve',
    tag: 'Approvals',
    summary: 'Approve a pending approval',
    description:
      'The next evaluation with the same binding digest (same session, action, params, state versions and policy) is allowed, within `expires_at` and `uses`. The key that asked cannot approve its own request unless the policy allows it.',
    scope: 'approvals:decide',
    params: IdParam,
    body: { schema: DecideApprovalInputSchema, name: 'DecideApprovalInput', optional: true },
    response: { schema: ApprovalSchema, name: 'Approval', statuses: { 200: 'The approval, approved.' } },
    errors: ['not_found', 'already_recorded'],
    handle: ({ gatehouse, params, body, context }) => gatehouse.approve(params.id, body as never, context),
  }),
  deny: defineRoute({
    method: 'POST',
    path: '/v1/approvals/{id}/deny',
    tag: 'Approvals',
    summary: 'Deny a pending approval',
    description: 'The same action stays blocked (`approval_denied`) until the approval would have expired.',
    scope: 'approvals:decide',
    params: IdParam,
    body: { schema: DecideApprovalInputSchema, name: 'DecideApprovalInput', optional: true },
    response: { schema: ApprovalSchema, name: 'Approval', statuses: { 200: 'The approval, denied.' } },
    errors: ['not_found', 'already_recorded'],
    handle: ({ gatehouse, params, body, context }) => gatehouse.deny(params.id, body as never, context),
  }),
  // ---- policy lifecycle -------------------------------------------------------------------------
  getPolicy: defineRoute({
    method: 'GET',
    path: '/v1/policy',
    tag: 'Policy',
    summary: 'Read the policy in force',
    description: 'Its revision is also the `ETag`: send it back as `If-Match` to replace the policy.',
    scope: 'history:read',
    response: { schema: ActivePolicySchema, name: 'ActivePolicy', statuses: { 200: 'The active policy.' } },
    responseHeaders: (policy) => ({ etag: entityTagOf(policy.revision) }),
    errors: [],
    handle: ({ gatehouse, context }) => gatehouse.getActivePolicy(context),
  }),
  putPolicy: defineRoute({
    method: 'PUT',
    path: '/v1/policy',
    tag: 'Policy',
    summary: 'Validate and activate a policy',
    description:
      'Stored as a revision and recorded as a `policy.activated` event. `If-Match` must name the active revision (the `ETag` of `GET /v1/policy`): 428 without it, 412 when another revision became active meanwhile. A policy with problems is 422 listing each one with `line:col`; nothing changes then.',
    scope: 'policy:write',
    headers: [
      {
        name: 'if-match',
        description: 'The active revision this policy replaces, as its `ETag` (required).',
      },
    ],
    body: { schema: PutPolicyInputSchema, name: 'PutPolicyInput' },
    response: {
      schema: ActivePolicySchema,
      name: 'ActivePolicy',
      statuses: { 200: 'The policy, now active.' },
    },
    responseHeaders: (policy) => ({ etag: entityTagOf(policy.revision) }),
    errors: ['precondition_failed', 'precondition_required'],
    // The body is the whole contract here (the core takes the revision besides it): a field it
    // does not have is refused, not dropped while the policy goes live.
    handle: ({ gatehouse, body, context, header }) =>
      gatehouse.activatePolicy(
        {
          policy: parseInput(PutPolicyInputSchema, body, 'policy').policy,
          expected_revision: revisionFromEntityTag(header('if-match')),
        },
        context,
      ),
  }),
  listPolicyRevisions: defineRoute({
    method: 'GET',
    path: '/v1/policy/revisions',
    tag: 'Policy',
    summary: 'List policy revisions, newest first',
    scope: 'history:read',
    query: PolicyRevisionQuerySchema,
    response: {
      schema: PolicyRevisionListSchema,
      name: 'PolicyRevisionList',
      statuses: { 200: 'A page of revisions (without their source).' },
    },
    errors: [],
    handle: ({ gatehouse, query, context }) => gatehouse.listPolicyRevisions(query, context),
  }),
  getPolicyRevision: defineRoute({
    method: 'GET',
    path: '/v1/policy/revisions/{id}',
    tag: 'Policy',
    summary: 'Read a policy revision with its source',
    scope: 'history:read',
    params: RevisionParam,
    response: { schema: PolicyRevisionSchema, name: 'PolicyRevision', statuses: { 200: 'The revision.' } },
    errors: ['not_found'],
    handle: ({ gatehouse, params, context }) => gatehouse.getPolicyRevision(params.id, context),
  }),
  replayPolicy: defineRoute({
    method: 'POST',
    path: '/v1/policy/replay',
    tag: 'Policy',
    summary: 'Replay recorded decisions against a candidate policy',
    description:
      'Each decision is re-evaluated on the state as it was at its position in the history and at its own `now`. Writes no state; records one `policy.replayed` event. At most 100,000 decisions per call: when `next_after_seq` is set, call again with it as `after_seq` and add the counts up.',
    scope: 'policy:write',
    body: { schema: ReplayInputSchema, name: 'ReplayInput' },
    response: { schema: ReplayReportSchema, name: 'ReplayReport', statuses: { 200: 'The report.' } },
    errors: ['not_found'],
    // The request's signal stops a replay whose client went away (read only here: building it costs).
    handle: ({ gatehouse, body, context, signal }) =>
      gatehouse.replayPolicy(withReplayLimit(body) as never, { ...context, signal }),
  }),
};

/** The operationIds of `/v1` (and the client's method names). */
export type OperationId = keyof typeof API_ROUTES;
