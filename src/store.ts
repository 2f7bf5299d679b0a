/**
 * The Store: everything the core needs from a database, and nothing more. The core holds the
 * rules (versioning, conflicts, chaining, matching); a Store keeps rows, runs transactions and
 * answers indexed queries. `test/store/contract.ts` is the suite every Store must pass.
 *
 * Every method is scoped by `tenantId`: nothing of one tenant is reachable through another.
 */

import type { Checkpoint } from './history/checkpoints.js';
import type { SealedFields } from './history/commitments.js';
import type { SealedEvent } from './history/hashChain.js';
import type { LegalHold } from './history/legalHoldSchemas.js';
import type {
  ApiKey,
  Approval,
  ApprovalStatus,
  Conflict,
  Delivery,
  EventType,
  HistoryEvent,
  Scope,
  StateItem,
  Webhook,
} from './schemas.js';
import type { ClaimShare } from './webhooks/fairShare.js';

/** A history event as stored, with the decision it belongs to (indexed). */
export interface StoredEvent extends HistoryEvent {
  decision_id: string | null;
}

/** An event of a session whose caller-supplied values are still kept: what an erasure would erase. */
export interface SessionValues {
  seq: number;
  type: EventType;
  /** JSON Pointers of the kept fields. */
  paths: string[];
}

/** Filters for {@link StoreReader.queryEvents}. */
export interface EventQuery {
  session_id?: string | undefined;
  type?: EventType | undefined;
  decision_id?: string | undefined;
  /** Return only events after this seq in `order` (exclusive). */
  after_seq?: number | undefined;
  order: 'asc' | 'desc';
  limit: number;
}

/** Filters for {@link StoreReader.listConflicts}. */
export interface ConflictQuery {
  session_id?: string | undefined;
  key?: string | undefined;
  status?: 'open' | 'resolved' | undefined;
}

/** One signing secret of a webhook; several are active during a rotation overlap. */
export interface WebhookSecret {
  secret: string;
  created_at: string;
  /** After this instant the secret no longer signs; null while it is the newest. */
  expires_at: string | null;
}

/** A webhook as stored: with its secrets. */
export interface StoredWebhook extends Webhook {
  secrets: WebhookSecret[];
}

/** A new outbox row, written in the same transaction as its event. */
export interface NewDelivery {
  delivery_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  next_attempt_at: string;
  created_at: string;
  /**
   * The W3C `traceparent` of the operation that queued the delivery (only when a trace was
   * being recorded), so the delivery and its receiver join that trace. A store keeps it in a
   * nullable column of the outbox row and returns it with the claim; a store that drops it only
   * makes deliveries start traces of their own.
   */
  traceparent?: string | undefined;
}

/**
 * A delivery claimed by a dispatcher, with what it needs to send it. A store may hand over more
 * (the whole outbox row, the whole history event); a dispatcher reads only these fields, and a
 * store that reads no more saves a drain the columns it would never use.
 */
export interface ClaimedDelivery {
  tenant_id: string;
  delivery: Pick<Delivery, 'delivery_id' | 'attempts'>;
  webhook: StoredWebhook;
  /** The event the body carries; its `data` only where `event_data_json` is not given. */
  event: Pick<HistoryEvent, 'event_id' | 'type' | 'occurred_at' | 'session_id'> & { data?: unknown };
  /**
   * `JSON.stringify` of the event's data, where the store has that text at hand (it keeps
   * events' data so): the body is built around it, neither parsed nor serialised again.
   */
  event_data_json?: string | undefined;
  /** The {@link NewDelivery.traceparent} it was queued with, if the store keeps it. */
  traceparent?: string | null | undefined;
}

/** The result of one attempt, recorded by the dispatcher. */
export interface DeliveryAttempt {
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  updated_at: string;
}

/** One attempt's outcome for {@link OutboxStore.recordDeliveryAttempts}. */
export interface RecordedDeliveryAttempt {
  tenantId: string;
  deliveryId: string;
  attempt: DeliveryAttempt;
  /**
   * The `leaseUntil` the delivery was claimed with: the outcome is recorded only while the
   * delivery is pending under that lease still. One whose lease ran out and was claimed again, or
   * that a redeliver reset meanwhile, keeps what happened to it since. Absent: recorded as is.
   */
  leaseUntil?: string;
}

/** A claimed delivery's lease, as {@link OutboxStore.claimDueDeliveries} gave it. */
export interface DeliveryLease {
  tenantId: string;
  deliveryId: string;
  /** The `leaseUntil` it was claimed with. */
  leaseUntil: string;
}

/** An API key as stored: the SHA-256 of the secret, never the secret. */
export interface StoredApiKey extends ApiKey {
  hash: string;
}

/** A current state item that retention clears: where it is, and the version it was listed at. */
export interface ExpiredItem {
  session_id: string;
  key: string;
  version: number;
}

/** The chain head of a tenant: the last seq and hash. */
export interface ChainHead {
  seq: number;
  hash: string;
}

/** Filters for {@link StoreReader.listApprovals}: newest first, before `before_id` (exclusive). */
export interface ApprovalListQuery {
  status?: ApprovalStatus | undefined;
  session_id?: string | undefined;
  before_id?: string | undefined;
  limit: number;
}

/** A status change of an approval, applied only while its status is one of `from`. */
export interface ApprovalTransition {
  from: readonly ApprovalStatus[];
  to: ApprovalStatus;
  updated_at: string;
  /** Set with approve and deny. */
  decided_by?: string | undefined;
  decided_at?: string | undefined;
  comment?: string | null | undefined;
}

/** A policy revision as stored: content-addressed by its revision (the policy's hash). */
export interface StoredPolicyRevision {
  revision: string;
  /** The YAML text, as first activated. */
  source: string;
  /** Who first activated it: an API key ID, `file`, `builtin` or `cli`. */
  created_by: string;
  created_at: string;
  /** The seq of its first `policy.activated` event (revisions list newest first by it). */
  seq: number;
}

/** A tenant's active policy revision. */
export interface ActivePolicyPointer {
  revision: string;
  /**
   * The instance policy (file or built-in) revision this tenant last followed: a restart with
   * the same file keeps a revision activated since; a changed file takes over.
   */
  base_revision: string | null;
  activated_by: string;
  activated_at: string;
  /** The seq of its `policy.activated` event. */
  seq: number;
}

/** Policy revisions and what replay reads: part of every reader (transactions included). */
export interface PolicyReader {
  getPolicyRevision(tenantId: string, revision: string): Promise<StoredPolicyRevision | null>;
  /** Revisions, newest first (by `seq`), before the seq `before_seq` when given. */
  listPolicyRevisions(
    tenantId: string,
    query: { limit: number; before_seq?: number | undefined },
  ): Promise<StoredPolicyRevision[]>;
  /** The tenant's active revision; null before any was recorded. */
  getActivePolicy(tenantId: string): Promise<ActivePolicyPointer | null>;
  /** Every version of every item of a session (status `superseded` for all), by key and version. */
  listSessionVersions(tenantId: string, sessionId: string): Promise<StateItem[]>;
  /** Every conflict of a session, open and resolved, oldest first. */
  listSessionConflicts(tenantId: string, sessionId: string): Promise<Conflict[]>;
}

/** Policy revision writes; only inside {@link Store.transaction}. */
export interface PolicyWriter {
  /** Stores a revision; a revision already stored for the tenant is left as it is. */
  insertPolicyRevision(tenantId: string, revision: StoredPolicyRevision): Promise<void>;
  /** Points the tenant at a revision. */
  setActivePolicy(tenantId: string, pointer: ActivePolicyPointer): Promise<void>;
}

/** Reads. Outside a transaction they see committed data only. */
export interface StoreReader extends PolicyReader {
  /** The current version of an item, with its status (`current` or `conflicted`). */
  getItem(tenantId: string, sessionId: string, key: string): Promise<StateItem | null>;
  /** One version of an item (`superseded` unless it is the current one). */
  getItemVersion(
    tenantId: string,
    sessionId: string,
    key: string,
    version: number,
  ): Promise<StateItem | null>;
  /** All versions of an item, oldest first. */
  listItemVersions(tenantId: string, sessionId: string, key: string): Promise<StateItem[]>;
  /** The current version of every item of a session, ordered by key. */
  listItems(tenantId: string, sessionId: string): Promise<StateItem[]>;
  getConflict(tenantId: string, conflictId: string): Promise<Conflict | null>;
  /** Conflicts, newest first (at most 500). */
  listConflicts(tenantId: string, query: ConflictQuery): Promise<Conflict[]>;
  /** Indexed event query: cost does not grow with the size of the log. */
  queryEvents(tenantId: string, query: EventQuery): Promise<StoredEvent[]>;
  getWebhook(tenantId: string, webhookId: string): Promise<StoredWebhook | null>;
  /** Webhooks of a tenant, oldest first. */
  listWebhooks(tenantId: string): Promise<StoredWebhook[]>;
  getDelivery(tenantId: string, deliveryId: string): Promise<Delivery | null>;
  /** Deliveries of one webhook, newest first, after `before_id` (exclusive) when given. */
  listDeliveries(
    tenantId: string,
    webhookId: string,
    query: { status?: Delivery['status'] | undefined; limit: number; before_id?: string | undefined },
  ): Promise<Delivery[]>;
  getApproval(tenantId: string, approvalId: string): Promise<Approval | null>;
  /** Approvals, newest first. */
  listApprovals(tenantId: string, query: ApprovalListQuery): Promise<Approval[]>;
}

/** Writes; only inside {@link Store.transaction}. */
export interface StoreTx extends StoreReader, PolicyWriter {
  /**
   * The current version of an item, locked until the transaction ends so concurrent writers to
   * the same key serialise (SELECT … FOR UPDATE on PostgreSQL).
   */
  lockItem(tenantId: string, sessionId: string, key: string): Promise<StateItem | null>;
  /** Inserts a new version and makes it current with `item.status`. */
  insertItemVersion(tenantId: string, item: StateItem): Promise<void>;
  /** Sets the status of the current version (`current` | `conflicted`). */
  setItemStatus(
    tenantId: string,
    sessionId: string,
    key: string,
    status: 'current' | 'conflicted',
  ): Promise<void>;
  insertConflict(tenantId: string, conflict: Conflict): Promise<void>;
  updateConflict(
    tenantId: string,
    conflictId: string,
    patch: Pick<Conflict, 'status' | 'resolution' | 'resolved_at'>,
  ): Promise<void>;
  /** The tenant's chain head, locked until the transaction ends; `null` before the first event. */
  lockChainHead(tenantId: string): Promise<ChainHead | null>;
  /**
   * Appends an event (its `data` is the hashed envelope) and moves the chain head to it; its
   * caller-supplied fields and their salts, when it has any, go beside it (`event_values`).
   */
  appendEvent(tenantId: string, event: StoredEvent, fields?: SealedFields | null): Promise<void>;
  /** Events of a session whose values are kept (not erased), in seq order. */
  listSessionValues(tenantId: string, sessionId: string): Promise<SessionValues[]>;
  /** Tags a session with a subject, replacing its tag. */
  tagSession(tenantId: string, sessionId: string, subject: string, at: string): Promise<void>;
  /** The sessions tagged with a subject, in ID order. */
  listSubjectSessions(tenantId: string, subject: string): Promise<string[]>;
  /** A session's subject tag; null when it has none. */
  sessionSubject(tenantId: string, sessionId: string): Promise<string | null>;
  /** Deletes a subject's tags. */
  deleteSubject(tenantId: string, subject: string): Promise<void>;
  /**
   * Which of these sessions (at most 100) have an `erasure.completed` event at or after `since`
   * (ISO 8601).
   */
  erasedSessionsSince(tenantId: string, sessionIds: readonly string[], since: string): Promise<string[]>;
  /** Pending deliveries of a session's events, by delivery ID. */
  listSessionPendingDeliveries(tenantId: string, sessionId: string): Promise<string[]>;
  /**
   * Erases a session's caller content: the values and salts of its events (their rows keep only
   * `erased_by`), the values and metadata of its state versions (its items' status becomes
   * `erased`), the values of its conflicts (open ones are resolved `erased`) and the params,
   * reason, comment and digest of its approvals. Pending deliveries need nothing: a body is built
   * from the event and its values when it is sent.
   */
  eraseSession(tenantId: string, sessionId: string, options: { erasedBy: number; at: string }): Promise<void>;
  /** Stores a signed checkpoint (history/checkpoints.ts). */
  insertCheckpoint(checkpoint: Checkpoint): Promise<void>;
  /** The tenant's stored checkpoint at `seq`, or null. */
  checkpointAt(tenantId: string, seq: number): Promise<Checkpoint | null>;
  /** The hash and time of a tenant's event, or null when it is not stored. */
  eventAt(tenantId: string, seq: number): Promise<{ hash: string; occurred_at: string } | null>;
  /** The seq of a tenant's first stored event (after the pruned prefix), or null with none. */
  firstEventSeq(tenantId: string): Promise<number | null>;
  /**
   * Deletes a tenant's events through `seq`, their values and their deliveries. The events table
   * refuses it unless a checkpoint of the tenant at or beyond `seq` is stored. The core calls it
   * once per batch (pruneOperations.ts), so `seq` bounds a few hundred events.
   */
  pruneEvents(tenantId: string, seq: number): Promise<void>;
  /**
   * The `through_seq` of the tenant's latest prune (its `retention.pruned` event), or null: the
   * events through it are pruned, whether or not their deletion has finished.
   */
  prunedThrough(tenantId: string): Promise<number | null>;
  /** Events older than `before` whose values are kept, oldest first, at most `limit`. */
  listExpiredValues(tenantId: string, before: string, limit: number): Promise<SessionValues[]>;
  /** Erases the values of these events (their rows keep `erasedBy`, the erasure event's seq). */
  expireValues(tenantId: string, seqs: readonly number[], erasedBy: number): Promise<void>;
  /**
   * Current state items, not erased, whose current version was written before `before`, but of
   * held sessions: at most `limit`, in `(session_id, key)` order after `after`.
   */
  listExpiredItems(
    tenantId: string,
    before: string,
    after: { session_id: string; key: string },
    limit: number,
  ): Promise<ExpiredItem[]>;
  /**
   * Clears these items as {@link eraseSession} clears a session's: every version's value and
   * metadata, the item reading `erased`. An item written since it was listed is left alone.
   */
  expireItems(tenantId: string, items: readonly ExpiredItem[]): Promise<void>;
  /**
   * Conflicts created before `before` whose values are kept, but of held sessions: at most
   * `limit`, oldest first.
   */
  listExpiredConflicts(tenantId: string, before: string, limit: number): Promise<Conflict[]>;
  /**
   * Erases these conflicts' values as {@link eraseSession} erases a session's (each marked with
   * `erasedBy`, the erasure event's seq); an open one is resolved `erased` at `at`.
   */
  expireConflicts(
    tenantId: string,
    conflictIds: readonly string[],
    options: { erasedBy: number; at: string },
  ): Promise<void>;
  /**
   * Approvals created before `before` whose params are kept, but of held sessions: at most
   * `limit`, oldest first.
   */
  listExpiredApprovals(tenantId: string, before: string, limit: number): Promise<Approval[]>;
  /**
   * Erases these approvals' params, reason, comment and digest as {@link eraseSession} does (each
   * marked with `erasedBy`); their status is the caller's to settle first.
   */
  expireApprovals(tenantId: string, approvalIds: readonly string[], erasedBy: number): Promise<void>;
  /** The tenant's retention set with `PUT /v1/retention` (JSON of its settings), or null. */
  getRetention(
    tenantId: string,
  ): Promise<{ settings: string; updated_at: string; updated_by: string } | null>;
  /** Replaces the tenant's retention. */
  putRetention(
    tenantId: string,
    row: { settings: string; updated_at: string; updated_by: string },
  ): Promise<void>;
  insertHold(tenantId: string, hold: LegalHold): Promise<void>;
  /** Deletes a hold; the hold it was, or null. */
  deleteHold(tenantId: string, holdId: string): Promise<LegalHold | null>;
  /** The tenant's holds in force, by ID. */
  listHolds(tenantId: string): Promise<LegalHold[]>;
  /** The seq of the first event of any held session, or null. */
  firstHeldSeq(tenantId: string): Promise<number | null>;
  /**
   * The last seq through which every kept event is older than `before` (0 when the first kept one
   * is not), or null when there is no event: what may be pruned by age, however the events' times
   * are ordered.
   */
  lastSeqBefore(tenantId: string, before: string): Promise<number | null>;
  insertDeliveries(tenantId: string, deliveries: NewDelivery[]): Promise<void>;
  insertWebhook(tenantId: string, webhook: StoredWebhook): Promise<void>;
  updateWebhook(
    tenantId: string,
    webhookId: string,
    patch: Partial<Pick<StoredWebhook, 'status' | 'secrets' | 'updated_at'>>,
  ): Promise<void>;
  /** Deletes a webhook and its pending deliveries; true when it existed. */
  deleteWebhook(tenantId: string, webhookId: string): Promise<boolean>;
  /**
   * The approval of this binding digest that decides an evaluation: the open (pending or
   * approved) one, else the denial that ends last, else the newest, whatever its status.
   */
  latestApprovalByDigest(tenantId: string, digest: string): Promise<Approval | null>;
  /** Pending or approved approvals whose `expires_at` is at or before `now`, oldest first. */
  listDueApprovals(tenantId: string, now: string, limit: number): Promise<Approval[]>;
  insertApproval(tenantId: string, approval: Approval): Promise<void>;
  /**
   * Adds `requester` to the approval's `requesters` unless it is there already; true when it was
   * added, false when it was there or there is no such approval.
   */
  addApprovalRequester(tenantId: string, approvalId: string, requester: string): Promise<boolean>;
  /** Applies a status change if the approval's status is still one of `from`; true when it did. */
  transitionApproval(tenantId: string, approvalId: string, change: ApprovalTransition): Promise<boolean>;
  /**
   * Takes one use of an approved, unexpired approval in one conditional statement (`uses_left > 0`,
   * `expires_at > now`), so two transactions can never both take the last use. Its status becomes
   * `used` with the last use. Null when there was nothing to take.
   */
  consumeApproval(
    tenantId: string,
    approvalId: string,
    now: string,
  ): Promise<{ uses_left: number; status: ApprovalStatus } | null>;
  /** Makes a delivery due again now (redeliver). */
  resetDelivery(
    tenantId: string,
    deliveryId: string,
    nextAttemptAt: string,
    updatedAt: string,
  ): Promise<void>;
}

/** API keys; looked up by hash across tenants, because the key says which tenant it is. */
export interface KeyStore {
  insertApiKey(key: StoredApiKey): Promise<void>;
  /**
   * Inserts `key` only while no key exists at all, atomically across instances (the bootstrap
   * admin key of a first start). True when it was inserted.
   */
  insertFirstApiKey(key: StoredApiKey): Promise<boolean>;
  findApiKeyByHash(hash: string): Promise<StoredApiKey | null>;
  /** Keys of one tenant, or of all tenants when `tenantId` is undefined. */
  listApiKeys(tenantId?: string): Promise<StoredApiKey[]>;
  /** Revokes a key; true when it existed and was active. */
  revokeApiKey(keyId: string, at: string): Promise<boolean>;
  countApiKeys(): Promise<number>;
}

/** What a webhook dispatcher needs; deliveries are claimed with a lease so one worker sends each. */
export interface OutboxStore {
  /**
   * Claims up to `limit` deliveries that are pending and due at `now` (or whose lease expired),
   * leasing them until `leaseUntil`. Deliveries of disabled webhooks are not claimed. Which of
   * the due ones is fairShare's choice (src/webhooks/fairShare.ts): the tenant holding the fewest first (counting
   * `share`, what the sender holds already), each tenant below `share.perTenant`.
   */
  claimDueDeliveries(options: {
    now: string;
    leaseUntil: string;
    limit: number;
    share?: ClaimShare;
  }): Promise<ClaimedDelivery[]>;
  /** Records an attempt's outcome and releases the lease. */
  recordDeliveryAttempt(tenantId: string, deliveryId: string, attempt: DeliveryAttempt): Promise<void>;
  /**
   * Records several attempts' outcomes as {@link recordDeliveryAttempt} would, with one commit
   * (a sender records the answers of one moment together).
   */
  recordDeliveryAttempts(attempts: readonly RecordedDeliveryAttempt[]): Promise<void>;
  /**
   * Gives back claimed deliveries that were never attempted, so they are due again now. A lease
   * is released only while it is still the one given (`lease_until` unchanged): a delivery whose
   * lease ran out and was claimed again elsewhere keeps its new lease.
   */
  releaseDeliveries(leases: readonly DeliveryLease[]): Promise<void>;
  /** Marks a webhook disabled (after a 410). */
  disableWebhook(tenantId: string, webhookId: string, at: string): Promise<void>;
  /**
   * The earliest time a claim can take a delivery (a pending one of an active webhook, at its
   * `next_attempt_at`, or its lease's end while leased), to sleep until then.
   */
  nextDueAt(): Promise<string | null>;
}

/** The tables every Store keeps, in the order a dump writes and a load reads them. */
export const STORE_TABLES = [
  'api_keys',
  'webhooks',
  'state_versions',
  'state_items',
  'conflicts',
  'events',
  'event_values',
  'checkpoints',
  'chain_heads',
  'deliveries',
  'approvals',
  'policy_revisions',
  'policy_active',
  'session_subjects',
  'legal_holds',
  'retention_settings',
] as const;

/** One table of a Store. */
export type StoreTable = (typeof STORE_TABLES)[number];

/** Each table's primary key: dumps page through tables in this order. */
export const STORE_TABLE_KEYS: Readonly<Record<StoreTable, readonly string[]>> = {
  api_keys: ['id'],
  webhooks: ['id'],
  state_versions: ['tenant_id', 'session_id', 'key', 'version'],
  state_items: ['tenant_id', 'session_id', 'key'],
  conflicts: ['conflict_id'],
  events: ['tenant_id', 'seq'],
  event_values: ['tenant_id', 'seq'],
  checkpoints: ['tenant_id', 'seq'],
  chain_heads: ['tenant_id'],
  deliveries: ['delivery_id'],
  approvals: ['approval_id'],
  policy_revisions: ['tenant_id', 'revision'],
  policy_active: ['tenant_id'],
  session_subjects: ['tenant_id', 'session_id'],
  legal_holds: ['hold_id'],
  retention_settings: ['tenant_id'],
};

/** One row of a dump: the same columns (text and numbers) in every Store, so dumps move between them. */
export interface DumpRecord {
  table: StoreTable;
  row: Record<string, string | number | null>;
}

/** Options for {@link Store.transaction}. */
export interface TransactionOptions {
  /**
   * The one tenant whose items and chain the transaction may change. A store that serves many
   * instances (PostgreSQL) locks that chain first, so transactions grouped into one database
   * transaction never wait on each other in opposite orders; without it, the transaction runs
   * alone. A transaction that appends to another tenant's chain is refused.
   */
  tenantId?: string;
  /**
   * `fn` only reads and writes through its `tx` (no effect outside it but scheduling), so a
   * store may run it again after undoing it: a group-committing store then needs no savepoint of
   * its own for it, and undoes a failed neighbour by running the others again.
   * @default false
   */
  rerunnable?: boolean;
  /**
   * Items of `tenantId` the transaction will lock with {@link StoreTx.lockItem}: a store may lock
   * and read them with its first statements, together with the chain head (PostgreSQL: in the
   * batch's first round trip). A hint; the transaction may lock other items too.
   */
  items?: ReadonlyArray<{ sessionId: string; key: string }>;
}

/** A Gatehouse database. */
export interface Store extends StoreReader, KeyStore, OutboxStore {
  /** A short name for logs and `/readyz` (`sqlite`, `postgres`). */
  readonly kind: string;
  /**
   * Runs `fn` in one transaction: all of its writes land or none. Transactions that touch the
   * same item or the same tenant's chain serialise. A store may commit several callers' `fn` in
   * one database transaction (group commit), each in its own savepoint: one caller's failure
   * undoes only its own writes, and the promise settles only after the COMMIT that holds them.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Removes from the database's files what an erasure left there (SQLite: checkpoints the WAL and
   * truncates it; free pages are zeroed already). Optional: a store without it keeps nothing of
   * its own beyond its tables.
   */
  scrub?(): Promise<void>;
  /** Lightweight liveness query; throws when the database is unreachable. */
  ping(): Promise<void>;
  /** Closes the database; safe to call twice. */
  close(): Promise<void>;
  /** Events of a tenant in seq order, in pages, for chain verification and export. */
  scanEvents(tenantId: string, options?: { pageSize?: number }): AsyncIterable<SealedEvent[]>;
  /** Tenants that have events. */
  listTenants(): Promise<string[]>;
  /** Every row of every table ({@link STORE_TABLES} order; events in seq order), for export. */
  dumpRows(options?: { pageSize?: number }): AsyncIterable<DumpRecord>;
  /**
   * Loads rows made by {@link Store.dumpRows} (of any Store kind) into this one, in one
   * transaction. Refuses a store that already holds events or keys. Returns the row count.
   */
  loadRows(rows: AsyncIterable<DumpRecord>): Promise<number>;
}

/** The scopes type, re-exported for stores. */
export type { Scope };
