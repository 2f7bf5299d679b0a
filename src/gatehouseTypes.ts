/**
 * The types of the Gatehouse core's API: the {@link Gatehouse} interface, its options and the
 * caller context. They live apart from `gatehouse.ts` because the operations modules that
 * implement the interface need them too, and importing them from `gatehouse.ts` (which imports
 * the operations) would make an import circle.
 */

import type { KeyObject } from 'node:crypto';
import type { PrincipalRecord } from './auth/principalRecord.js';
import type { CompiledPolicy } from './gate/index.js';
import type { Checkpoint, CheckpointSigner } from './history/checkpoints.js';
import type { LegalHold, LegalHoldList, PlaceHoldInput } from './history/legalHoldSchemas.js';
import type { PruneInput, PruneReport, RetentionInput, RetentionView } from './history/pruneSchemas.js';
import type {
  ActivatePolicyInput,
  ActivePolicy,
  PolicyRevision,
  PolicyRevisionList,
  PolicyRevisionQuery,
  ReplayInput,
  ReplayReport,
} from './lifecycle/lifecycleSchemas.js';
import type { Clock, IdGenerator, RandomBytes } from './runtime.js';
import type {
  Approval,
  ApprovalPage,
  ApprovalQuery,
  ApprovalWait,
  Conflict,
  CreateWebhookInput,
  DecideApprovalInput,
  Decision,
  Delivery,
  EraseInput,
  EraseSubjectInput,
  ErasureReport,
  EvaluateInput,
  HistoryEvent,
  HistoryPage,
  HistoryQuery,
  OutcomeInput,
  RecordStateInput,
  RecordStateResult,
  ResolveConflictInput,
  Scope,
  SessionTag,
  StateItem,
  SubjectErasureReport,
  TagSessionInput,
  VerifyResult,
  Webhook,
  WebhookWarning,
  WebhookWithSecret,
} from './schemas.js';
import type { Store } from './store.js';

/** Who is asking, and what they may claim. Faces build it from an API key or their configuration. */
export interface CallContext {
  /** @default the instance's `tenantId` */
  tenantId?: string;
  /**
   * Sources this caller may write; a write claiming any other source is `forbidden`.
   * @default every source of the policy (in-process callers are the owner)
   */
  allowedSources?: readonly string[];
  /**
   * The API key making the call (faces set it from the bearer key): recorded as who asked for an
   * approval and who decided it, and compared to refuse self-approval.
   * @default none: an in-process call
   */
  keyId?: string;
  /**
   * Who is calling, as events record it (`data.principal`): faces set it from the key or token.
   * @default `{ kind: 'key', key_id: keyId }` when `keyId` is set, else none
   */
  principal?: PrincipalRecord;
  /**
   * The key's scopes, matched against a policy's `approval.approvers`, and checked where an
   * operation asks more than its route's scope (overriding a legal hold needs `admin`).
   * @default every scope (an in-process call)
   */
  scopes?: readonly Scope[];
  /**
   * The key's labels (`finance`), matched against a policy's `approval.approvers`.
   * @default []
   */
  labels?: readonly string[];
  /**
   * Who is acting when no API key is (`cli`), recorded with what they change (a policy
   * activation records `keyId`, else this). @default 'in-process'
   */
  actor?: string;
  /**
   * Aborts a long operation when its caller goes away (the faces set it from the request): a
   * long wait (`getApproval` with `wait`) then ends at once and answers the approval as last read;
   * `replayPolicy` stops and rejects with the signal's reason, recording nothing.
   * @default none: the operation runs to its end
   */
  signal?: AbortSignal;
}

/**
 * Checks a webhook URL at registration; the service injects the resolving SSRF check. Throws to
 * refuse; `warnings` are returned with the created webhook.
 */
export type WebhookUrlCheck = (
  url: string,
  // biome-ignore lint/suspicious/noConfusingVoidType: a check that only throws is `async (url) => { … }`
) => Promise<void | { warnings?: readonly WebhookWarning[] }>;

/** What one retention run did for a tenant. */
export interface RetentionReport {
  tenant_id: string;
  /** Values erased for `values_after`: events, fields, and the seq of each erasure event. */
  erased: { events: number; fields: number; erasures: number[] };
  /**
   * Current state items whose last write is older than `values_after`, cleared as an erasure
   * clears a session's: how many, and the seq of each `erasure.completed` event naming them.
   */
  erased_items: { items: number; erasures: number[] };
  /**
   * Conflicts and approvals created before the `values_after` cut-off whose values (a conflict's
   * current and proposed value, an approval's params and reason) were erased: how many, and the
   * seq of each `erasure.completed` event naming them.
   */
  erased_records: { conflicts: number; approvals: number; erasures: number[] };
  /** The prune for `history_after`, or null. */
  pruned: PruneReport | null;
  /** Events of an earlier prune whose deletion had been cut short (the process stopped), deleted now. */
  finished_prune: number;
  /** Why the prune was refused or left for a later run, or null. */
  problem: string | null;
}

/** Options of {@link Gatehouse.runRetention}. */
export interface RunRetentionOptions {
  /**
   * Why no prune may run now (`gatehouse serve`: the directory its checkpoint file would go to
   * cannot be written). Erasures run; a prune that is due is left for a later run and named in
   * `problem`. @default none: a due prune runs
   */
  pruneHeld?: string;
}

/** Options for {@link createGatehouse}. */
export interface GatehouseOptions {
  /** Where state, history and webhooks live. */
  store: Store;
  /** @default the built-in policy (`defaultPolicy()`) */
  policy?: CompiledPolicy;
  /** @default the system clock */
  clock?: Clock;
  /** @default prefixed ULIDs */
  ids?: IdGenerator;
  /** @default node:crypto */
  randomBytes?: RandomBytes;
  /** @default 'default' */
  tenantId?: string;
  /**
   * Signs checkpoints (pruning needs one): `loadCheckpointSigner(pem)`. Its public half verifies
   * stored checkpoints unless `checkpointPublicKey` is set.
   * @default undefined (no pruning)
   */
  checkpointSigner?: CheckpointSigner;
  /** Verifies stored checkpoints. @default the signer's public key */
  checkpointPublicKey?: KeyObject;
  /**
   * Called for each webhook URL at registration. The default accepts only `https:` URLs
   * syntactically; `gatehouse serve` injects the resolving SSRF guard.
   */
  checkWebhookUrl?: WebhookUrlCheck;
  /** Called after a transaction that wrote webhook deliveries, to wake a dispatcher. */
  onDeliveriesQueued?: () => void;
  /**
   * Who `policy` is recorded as (`file`, `builtin`) when it becomes a tenant's active revision:
   * set, the first use of each tenant after start (or after `setPolicy`) records it, unless the
   * tenant already followed this same revision (so a restart keeps a policy activated since).
   * `gatehouse serve` and `gatehouse mcp` set it. Unset, `policy` applies unrecorded to every
   * tenant that has not activated one with {@link Gatehouse.activatePolicy}.
   * @default undefined
   */
  policyOrigin?: string;
  /**
   * How old a tenant's cached active revision may get before the store is asked again: the
   * delay before an activation made by another instance applies here.
   * @default 1000
   */
  policyRefreshMs?: number;
}

/** A stored gate decision with the inputs it was made on (secrets masked). */
export interface DecisionRecord extends Decision {
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  event_id: string;
}

/** The Gatehouse core. */
export interface Gatehouse {
  /** The policy in force. */
  readonly policy: CompiledPolicy;
  /** Replaces the policy in force; evaluations already running finish on the old one. */
  setPolicy(policy: CompiledPolicy): void;
  /** The store this instance runs on. */
  readonly store: Store;

  /**
   * Records a state item: canonical key, classification, versioning and the conflict rule.
   * @throws {GatehouseError} `invalid_request` (bad input, unknown type or source), `forbidden`
   *   (source beyond the caller's trust), `version_conflict` (`expected_version` mismatch)
   */
  recordState(input: RecordStateInput, ctx?: CallContext): Promise<RecordStateResult>;
  /** The current item. @throws {GatehouseError} `not_found` */
  getItem(sessionId: string, key: string, ctx?: CallContext): Promise<StateItem>;
  /** One version. @throws {GatehouseError} `not_found` */
  getItemVersion(sessionId: string, key: string, version: number, ctx?: CallContext): Promise<StateItem>;
  /** All versions, oldest first. @throws {GatehouseError} `not_found` */
  listItemVersions(sessionId: string, key: string, ctx?: CallContext): Promise<StateItem[]>;
  /** The current items of a session (empty for an unknown session). */
  listItems(sessionId: string, ctx?: CallContext): Promise<StateItem[]>;
  /** Conflicts, newest first. */
  listConflicts(
    query?: { session_id?: string; key?: string; status?: 'open' | 'resolved' },
    ctx?: CallContext,
  ): Promise<Conflict[]>;
  /** @throws {GatehouseError} `not_found` */
  getConflict(conflictId: string, ctx?: CallContext): Promise<Conflict>;
  /**
   * Resolves an open conflict. Only a caller allowed to write at the current value's trust may.
   * @throws {GatehouseError} `not_found`, `forbidden`, `version_conflict` (already resolved)
   */
  resolveConflict(conflictId: string, input: ResolveConflictInput, ctx?: CallContext): Promise<Conflict>;

  /** Evaluates an action against the policy and the session's state; records the decision. */
  evaluate(input: EvaluateInput, ctx?: CallContext): Promise<Decision>;
  /** @throws {GatehouseError} `not_found` */
  getDecision(decisionId: string, ctx?: CallContext): Promise<DecisionRecord>;
  /**
   * Records what happened after a decision, once.
   * @throws {GatehouseError} `not_found`, `already_recorded`
   */
  recordOutcome(decisionId: string, input: OutcomeInput, ctx?: CallContext): Promise<HistoryEvent>;

  /**
   * Reads an approval. An approval past its `expires_at` is marked `expired` now (and an
   * `approval.expired` event written): expiry is lazy. With `wait` (seconds, at most 60) a
   * pending approval is read again until it is decided, expires or the wait is over.
   * A caller whose scopes include none of `approvals:decide`, `history:read` and `admin` (an
   * agent's `gate:evaluate` key) reads only approvals it asked for (`requesters`).
   * @throws {GatehouseError} `not_found`, also for an approval the caller may not read
   */
  getApproval(approvalId: string, query?: ApprovalWait, ctx?: CallContext): Promise<Approval>;
  /** Approvals, newest first; expires the due ones first. */
  listApprovals(query?: ApprovalQuery, ctx?: CallContext): Promise<ApprovalPage>;
  /**
   * Approves a pending approval: the next evaluation with the same binding digest is allowed.
   * @throws {GatehouseError} `not_found`; `forbidden` (the caller asked for it itself, or lacks
   *   the label or scope the policy names); `already_recorded` (decided, used or expired)
   */
  approve(approvalId: string, input?: DecideApprovalInput, ctx?: CallContext): Promise<Approval>;
  /**
   * Denies a pending approval: the same action stays blocked until the approval's `expires_at`.
   * @throws {GatehouseError} as {@link Gatehouse.approve}
   */
  deny(approvalId: string, input?: DecideApprovalInput, ctx?: CallContext): Promise<Approval>;

  /** A page of history, newest first by default. */
  readHistory(query?: HistoryQuery, ctx?: CallContext): Promise<HistoryPage>;
  /**
   * Recomputes the tenant's hash chain and checks every kept value against its commitment. A
   * pruned chain starts at its stored checkpoint, whose signature must verify with the configured
   * checkpoint key (`checkpointPublicKey`, or the signer's).
   */
  verifyHistory(ctx?: CallContext): Promise<VerifyResult>;
  /**
   * {@link verifyHistory} from a checkpoint kept outside the database, verified with `public_key`:
   * a suffix rewritten together with the stored checkpoint fails it.
   */
  verifyFromCheckpoint(
    input: { checkpoint: Checkpoint; public_key: KeyObject },
    ctx?: CallContext,
  ): Promise<VerifyResult>;
  /**
   * Signs a checkpoint at the chain's head and stores it (keep a copy elsewhere).
   * @throws {GatehouseError} `invalid_request` without a checkpoint key or with no history.
   */
  createCheckpoint(ctx?: CallContext): Promise<Checkpoint>;
  /**
   * Deletes the chain's prefix through `through_seq` (events, values, deliveries) behind a new
   * signed checkpoint there, and records a `retention.pruned` event.
   * @throws {GatehouseError} `invalid_request` without a checkpoint key, for a seq not stored, or
   * inside the retention floor (183 days) unless `allow_below_floor`.
   */
  pruneHistory(input: PruneInput, ctx?: CallContext): Promise<PruneReport>;
  /**
   * Applies the tenant's policy `retention:`: erases the values of events older than
   * `values_after` (batches of 500, each an `erasure.completed` with reason `retention`) and
   * prunes events older than `history_after` behind a signed checkpoint. A prune that is refused
   * (no checkpoint key) or held (`options.pruneHeld`) is reported in `problem`, not thrown.
   */
  runRetention(ctx?: CallContext, options?: RunRetentionOptions): Promise<RetentionReport>;
  /** The tenant's retention in force: set with {@link putRetention}, else the policy's `retention:`. */
  getRetention(ctx?: CallContext): Promise<RetentionView>;
  /**
   * Sets the tenant's retention (it takes the place of the policy's), recorded as
   * `retention.configured`.
   * @throws {GatehouseError} `invalid_request` for a `history_after` below the 183-day floor
   * without `allow_below_floor`.
   */
  putRetention(input: RetentionInput, ctx?: CallContext): Promise<RetentionView>;
  /** Places a legal hold on a session or (without one) the tenant, recorded as `legal_hold.placed`. */
  placeHold(input: PlaceHoldInput, ctx?: CallContext): Promise<LegalHold>;
  /**
   * Releases a hold, recorded as `legal_hold.released`.
   * @throws {GatehouseError} `not_found` for an unknown hold.
   */
  releaseHold(holdId: string, ctx?: CallContext): Promise<LegalHold>;
  /** The tenant's holds in force. */
  listHolds(ctx?: CallContext): Promise<LegalHoldList>;
  /**
   * Erases what callers wrote into a session — history values and their salts, state values,
   * conflict values, approval params — in one transaction that denies its pending approvals and
   * ends with an `erasure.completed` event; `dry_run` only lists it. See docs/data-lifecycle.md.
   * @throws {GatehouseError} `invalid_request` for a bad input.
   */
  eraseSession(input: EraseInput, ctx?: CallContext): Promise<ErasureReport>;
  /**
   * {@link eraseSession} for every session tagged with `subject`, in one transaction, and deletes
   * the tags (the subject is personal data too).
   */
  eraseSubject(input: EraseSubjectInput, ctx?: CallContext): Promise<SubjectErasureReport>;
  /**
   * Which of these sessions were erased (an `erasure.completed` event of the session) at or after
   * `since`: what a kept copy of an answer (the HTTP `Idempotency-Key` store) asks before it is
   * replayed. Unknown sessions are simply not erased. After a retention erasure (whose event
   * names no session) at or after `since`, all of them: any value in such an answer may be gone.
   * @throws {GatehouseError} `invalid_request` when `since` is not an ISO 8601 time.
   */
  erasedSessionsSince(
    input: { session_ids: readonly string[]; since: string },
    ctx?: CallContext,
  ): Promise<string[]>;
  /** Tags a session with a pseudonymous subject (replacing its tag), for {@link eraseSubject}. */
  tagSession(input: TagSessionInput, ctx?: CallContext): Promise<SessionTag>;

  /** Subscribes a URL; the secret is in the answer and never again. */
  createWebhook(input: CreateWebhookInput, ctx?: CallContext): Promise<WebhookWithSecret>;
  listWebhooks(ctx?: CallContext): Promise<Webhook[]>;
  /** @throws {GatehouseError} `not_found` */
  getWebhook(webhookId: string, ctx?: CallContext): Promise<Webhook>;
  /** @throws {GatehouseError} `not_found` */
  deleteWebhook(webhookId: string, ctx?: CallContext): Promise<void>;
  /**
   * New secret; the old one keeps signing for `overlap_seconds` (default 24 h).
   * @throws {GatehouseError} `not_found`
   */
  rotateWebhookSecret(
    webhookId: string,
    input?: { overlap_seconds?: number },
    ctx?: CallContext,
  ): Promise<WebhookWithSecret>;
  /** Re-enables a disabled webhook. @throws {GatehouseError} `not_found` */
  enableWebhook(webhookId: string, ctx?: CallContext): Promise<Webhook>;
  listDeliveries(
    webhookId: string,
    query?: { status?: Delivery['status']; limit?: number; before_id?: string },
    ctx?: CallContext,
  ): Promise<Delivery[]>;
  /** Queues a delivery again, now. @throws {GatehouseError} `not_found` */
  redeliver(webhookId: string, deliveryId: string, ctx?: CallContext): Promise<Delivery>;

  /** The tenant's policy in force: revision, source, rules, and who activated it when. */
  getActivePolicy(ctx?: CallContext): Promise<ActivePolicy>;
  /**
   * Validates and activates a policy for the tenant, stores it as a revision and records a
   * `policy.activated` event; only while `expected_revision` is still the active revision.
   * Activating the active revision again changes nothing.
   * @throws {GatehouseError} `invalid_request` (every problem of the policy), `precondition_required`
   *   (no `expected_revision`), `precondition_failed` (another revision is active)
   */
  activatePolicy(input: ActivatePolicyInput, ctx?: CallContext): Promise<ActivePolicy>;
  /** Stored revisions, newest first. */
  listPolicyRevisions(query?: PolicyRevisionQuery, ctx?: CallContext): Promise<PolicyRevisionList>;
  /** One stored revision with its source. @throws {GatehouseError} `not_found` */
  getPolicyRevision(revision: string, ctx?: CallContext): Promise<PolicyRevision>;
  /**
   * Re-evaluates recorded decisions against a candidate policy (YAML text or a stored revision),
   * each on the state as it was at its position in the history and at its own `now`. Writes no
   * state; records one `policy.replayed` event with the summary. Runs in slices that let the
   * event loop serve other work, at most 20 s per call (then `stopped_by: 'time_budget'` and
   * `next_after_seq` say where to continue).
   * @throws {GatehouseError} `invalid_request` (bad filters, a candidate that does not compile), `not_found` (revision)
   * @throws the reason of `ctx.signal` once it aborts (nothing is recorded)
   */
  replayPolicy(input: ReplayInput, ctx?: CallContext): Promise<ReplayReport>;
}
