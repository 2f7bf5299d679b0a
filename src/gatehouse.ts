/**
 * `createGatehouse` — the one entry point. Every face (HTTP, MCP, LangChain, CLI) calls these
 * methods; none of them holds a rule of its own.
 */
import { GatehouseError } from './errors.js';
import type { CompiledPolicy, ConflictView, StateView } from './gate/index.js';
import { defaultPolicy } from './gate/index.js';
import { decodeCursor, encodeCursor } from './history/cursor.js';
import { GENESIS_HASH, hashEvent, verifyChain } from './history/hashChain.js';
import {
  type Clock,
  createIdGenerator,
  type IdGenerator,
  type RandomBytes,
  systemClock,
  systemRandomBytes,
} from './runtime.js';
import {
  type Conflict,
  type CreateWebhookInput,
  CreateWebhookInputSchema,
  type Decision,
  type Delivery,
  type EvaluateInput,
  EvaluateInputSchema,
  type EventType,
  type HistoryEvent,
  type HistoryPage,
  type HistoryQuery,
  HistoryQuerySchema,
  isPlausibleId,
  type OutcomeInput,
  OutcomeInputSchema,
  type RecordStateInput,
  RecordStateInputSchema,
  type RecordStateResult,
  type ResolveConflictInput,
  ResolveConflictInputSchema,
  RotateSecretInputSchema,
  SessionIdSchema,
  type StateItem,
  type VerifyResult,
  type Webhook,
  type WebhookWithSecret,
} from './schemas.js';
import { canonicalKey, keyCategory } from './state/canonicalKey.js';
import { classify, maskValue } from './state/classify.js';
import { decideWrite } from './state/conflictRules.js';
import { maskSecrets } from './state/maskSecrets.js';
import type { Store, StoredEvent, StoredWebhook, StoreReader, StoreTx } from './store.js';
import { parseInput } from './validation.js';
import { generateWebhookSecret, matchesSubscription } from './webhooks/index.js';

/** Who is asking, and what they may claim. Faces build it from an API key or their configuration. */
export interface CallContext {
  /** @default the instance's `tenantId` */
  tenantId?: string;
  /**
   * Sources this caller may write; a write claiming any other source is `forbidden`.
   * @default every source of the policy (in-process callers are the owner)
   */
  allowedSources?: readonly string[];
}

/** Checks a webhook URL at registration; the service injects the resolving SSRF check. */
export type WebhookUrlCheck = (url: string) => Promise<void>;

/** Options for {@link createGatehouse}. */
export interface GatehouseOptions {
  /** Where state, history and webhooks live. */
  store: Store;
  /** @default the built-in policy ({@link defaultPolicy}) */
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
   * Called for each webhook URL at registration. The default accepts only `https:` URLs
   * syntactically; `gatehouse serve` injects the resolving SSRF guard.
   */
  checkWebhookUrl?: WebhookUrlCheck;
  /** Called after a transaction that wrote webhook deliveries, to wake a dispatcher. */
  onDeliveriesQueued?: () => void;
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

  /** A page of history, newest first by default. */
  readHistory(query?: HistoryQuery, ctx?: CallContext): Promise<HistoryPage>;
  /** Recomputes the tenant's hash chain. */
  verifyHistory(ctx?: CallContext): Promise<VerifyResult>;

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
}

interface EventDraft {
  type: EventType;
  session_id: string;
  data: Record<string, unknown>;
  decision_id?: string;
}

function notFound(what: string): GatehouseError {
  return new GatehouseError('not_found', `${what} was not found.`);
}

/**
 * Throws `not_found` for an ID no object can have (control characters, NUL, very long) before it
 * reaches a database that would fail on it rather than find nothing (PostgreSQL refuses U+0000).
 */
function assertPlausibleId(id: string, what: string): void {
  if (!isPlausibleId(id)) throw notFound(`${what} '${id}'`);
}

function publicWebhook(w: StoredWebhook): Webhook {
  const { secrets: _secrets, ...rest } = w;
  return rest;
}

function numberOf(value: string): number | null {
  const trimmed = value.trim();
  if (trimmed === '') return null;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : null;
}

/**
 * Creates the Gatehouse core over a Store.
 * @example
 * const gh = createGatehouse({ store: openSqliteStore({ filename: 'gh.db' }) });
 * await gh.recordState({ session_id: 's1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' });
 * const d = await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } });
 */
export function createGatehouse(options: GatehouseOptions): Gatehouse {
  const store = options.store;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? createIdGenerator(clock);
  const randomBytes = options.randomBytes ?? systemRandomBytes;
  const defaultTenant = options.tenantId ?? 'default';
  const checkWebhookUrl = options.checkWebhookUrl ?? defaultWebhookUrlCheck;
  let policy = options.policy ?? defaultPolicy();

  const tenantOf = (ctx?: CallContext) => ctx?.tenantId ?? defaultTenant;
  const now = () => clock().toISOString();

  /** Appends events in one transaction, chaining them and queuing matching deliveries. */
  async function append(tx: StoreTx, tenantId: string, drafts: EventDraft[]): Promise<StoredEvent[]> {
    if (drafts.length === 0) return [];
    const head = await tx.lockChainHead(tenantId);
    let seq = head?.seq ?? 0;
    let prevHash = head?.hash ?? GENESIS_HASH;
    const webhooks = (await tx.listWebhooks(tenantId)).filter((w) => w.status === 'active');
    const events: StoredEvent[] = [];
    let queued = 0;
    for (const draft of drafts) {
      seq += 1;
      const base = {
        event_id: ids('evt'),
        seq,
        type: draft.type,
        session_id: draft.session_id,
        occurred_at: now(),
        data: draft.data,
        prev_hash: prevHash,
      };
      const hash = hashEvent({ tenant_id: tenantId, ...base });
      const event: StoredEvent = { ...base, hash, decision_id: draft.decision_id ?? null };
      await tx.appendEvent(tenantId, event);
      const matching = webhooks.filter((w) => matchesSubscription(w, event));
      if (matching.length > 0) {
        await tx.insertDeliveries(
          tenantId,
          matching.map((w) => ({
            delivery_id: ids('dlv'),
            webhook_id: w.id,
            event_id: event.event_id,
            event_type: event.type,
            next_attempt_at: event.occurred_at,
            created_at: event.occurred_at,
          })),
        );
        queued += matching.length;
      }
      prevHash = hash;
      events.push(event);
    }
    if (queued > 0 && options.onDeliveriesQueued) queueMicrotask(options.onDeliveriesQueued);
    return events;
  }

  /** The event data of one side of a value, secrets masked. */
  function valueData(item: { key: string; value: string; sensitivity?: string }) {
    const sensitivity = item.sensitivity ?? classify(item.key, item.value).sensitivity;
    return sensitivity === 'secret' ? maskValue(item.value, 'secret') : item.value;
  }

  function checkSource(source: string, ctx: CallContext | undefined, forWhat: string): number {
    const trust = policy.sources[source];
    if (trust === undefined) {
      throw new GatehouseError(
        'invalid_request',
        `Unknown source '${source}'; allowed: ${Object.keys(policy.sources).join(', ')}.`,
        { errors: [{ path: 'source', message: `must be one of ${Object.keys(policy.sources).join(', ')}` }] },
      );
    }
    const allowed = ctx?.allowedSources;
    if (allowed && !allowed.includes(source)) {
      throw new GatehouseError(
        'forbidden',
        `This caller may not ${forWhat} with source '${source}'; it may use: ${allowed.join(', ') || 'none'}.`,
      );
    }
    return trust;
  }

  /** The highest trust the caller may claim. */
  function maxTrust(ctx: CallContext | undefined): number {
    const sources = ctx?.allowedSources ?? Object.keys(policy.sources);
    return Math.max(-Infinity, ...sources.map((s) => policy.sources[s] ?? -Infinity));
  }

  /**
   * The values of a session's secret items: masked wherever they appear in free text (notes,
   * outcome details, metadata), not only where a detector recognises them.
   */
  async function sessionSecrets(
    reader: StoreReader,
    tenantId: string,
    sessionId: string,
  ): Promise<Set<string>> {
    const items = await reader.listItems(tenantId, sessionId);
    return new Set(items.filter((i) => i.sensitivity === 'secret').map((i) => i.value));
  }

  async function requireItem(tenantId: string, sessionId: string, key: string): Promise<StateItem> {
    const item = await store.getItem(tenantId, sessionId, key);
    if (!item) throw notFound(`State item '${key}' in session '${sessionId}'`);
    return item;
  }

  function parseSession(sessionId: string): string {
    return parseInput(SessionIdSchema, sessionId, 'session_id');
  }

  async function requireWebhook(tenantId: string, webhookId: string): Promise<StoredWebhook> {
    assertPlausibleId(webhookId, 'Webhook');
    const webhook = await store.getWebhook(tenantId, webhookId);
    if (!webhook) throw notFound(`Webhook '${webhookId}'`);
    return webhook;
  }

  const gatehouse: Gatehouse = {
    get policy() {
      return policy;
    },
    setPolicy(next) {
      policy = next;
    },
    store,

    async recordState(rawInput, ctx) {
      const input = parseInput(RecordStateInputSchema, rawInput, 'state item');
      const key = canonicalKey(input.key);
      if (!policy.types.includes(input.type)) {
        throw new GatehouseError(
          'invalid_request',
          `Unknown type '${input.type}'; allowed: ${policy.types.join(', ')}.`,
          { errors: [{ path: 'type', message: `must be one of ${policy.types.join(', ')}` }] },
        );
      }
      const trust = checkSource(input.source, ctx, 'write state');
      const { sensitivity } = classify(key, input.value);
      const tenantId = tenantOf(ctx);
      const metadata = input.metadata ?? {};

      return store.transaction(async (tx) => {
        const current = await tx.lockItem(tenantId, input.session_id, key);
        const currentVersion = current?.version ?? 0;
        if (input.expected_version !== undefined && input.expected_version !== currentVersion) {
          throw new GatehouseError(
            'version_conflict',
            `Item '${key}' is at version ${currentVersion}, not the expected ${input.expected_version}.`,
          );
        }
        const at = now();
        const outcome = decideWrite(current, { value: input.value, type: input.type, trust });
        if (outcome === 'unchanged') {
          return { outcome, changed: false, item: current!, conflict: null, event_id: null };
        }
        if (outcome === 'conflict') {
          const cur = current!;
          const open = await tx.listConflicts(tenantId, {
            session_id: input.session_id,
            key,
            status: 'open',
          });
          const same = open.find(
            (c) =>
              c.proposed.value === input.value &&
              c.proposed.source === input.source &&
              c.proposed.type === input.type,
          );
          if (same) return { outcome, changed: false, item: cur, conflict: same, event_id: null };
          const conflict: Conflict = {
            conflict_id: ids('cfl'),
            session_id: input.session_id,
            key,
            status: 'open',
            current: {
              value: cur.value,
              type: cur.type,
              source: cur.source,
              trust: cur.trust,
              version: cur.version,
            },
            proposed: { value: input.value, type: input.type, source: input.source, trust, metadata },
            resolution: null,
            created_at: at,
            resolved_at: null,
          };
          await tx.insertConflict(tenantId, conflict);
          await tx.setItemStatus(tenantId, input.session_id, key, 'conflicted');
          const [event] = await append(tx, tenantId, [
            {
              type: 'state_conflict',
              session_id: input.session_id,
              data: {
                conflict_id: conflict.conflict_id,
                key,
                current: { ...conflict.current, value: valueData(cur) },
                proposed: {
                  value: valueData({ key, value: input.value, sensitivity }),
                  type: input.type,
                  source: input.source,
                  trust,
                },
              },
            },
          ]);
          return {
            outcome,
            changed: false,
            item: { ...cur, status: 'conflicted' },
            conflict,
            event_id: event!.event_id,
          };
        }
        // created or superseded: a new version; a higher-trust write settles open conflicts.
        const settled =
          current?.status === 'conflicted'
            ? await tx.listConflicts(tenantId, { session_id: input.session_id, key, status: 'open' })
            : [];
        const item: StateItem = {
          session_id: input.session_id,
          key,
          value: input.value,
          type: input.type,
          source: input.source,
          trust,
          sensitivity,
          category: keyCategory(key),
          version: currentVersion + 1,
          status: 'current',
          metadata,
          updated_at: at,
        };
        await tx.insertItemVersion(tenantId, item);
        const known =
          Object.keys(metadata).length === 0
            ? new Set<string>()
            : await sessionSecrets(tx, tenantId, input.session_id);
        for (const c of settled) {
          await tx.updateConflict(tenantId, c.conflict_id, {
            status: 'resolved',
            resolution: 'superseded',
            resolved_at: at,
          });
        }
        const events = await append(tx, tenantId, [
          {
            type: 'state_change',
            session_id: input.session_id,
            data: {
              key,
              version: item.version,
              previous_version: current?.version ?? null,
              value: valueData(item),
              type: item.type,
              source: item.source,
              trust,
              sensitivity,
              category: item.category,
              metadata: maskSecrets(metadata, `${key}.metadata`, known),
            },
          },
          ...settled.map((c) => ({
            type: 'conflict_resolved' as const,
            session_id: input.session_id,
            data: { conflict_id: c.conflict_id, key, resolution: 'superseded', version: item.version },
          })),
        ]);
        return { outcome, changed: true, item, conflict: null, event_id: events[0]!.event_id };
      });
    },

    async getItem(sessionId, key, ctx) {
      return requireItem(tenantOf(ctx), parseSession(sessionId), canonicalKey(key));
    },

    async getItemVersion(sessionId, key, version, ctx) {
      const k = canonicalKey(key);
      if (!Number.isInteger(version) || version < 1) {
        throw new GatehouseError('invalid_request', 'version must be a positive integer.', {
          errors: [{ path: 'version', message: 'must be a positive integer' }],
        });
      }
      const item = await store.getItemVersion(tenantOf(ctx), parseSession(sessionId), k, version);
      if (!item) throw notFound(`Version ${version} of '${k}' in session '${sessionId}'`);
      return item;
    },

    async listItemVersions(sessionId, key, ctx) {
      const k = canonicalKey(key);
      const versions = await store.listItemVersions(tenantOf(ctx), parseSession(sessionId), k);
      if (versions.length === 0) throw notFound(`State item '${k}' in session '${sessionId}'`);
      return versions;
    },

    async listItems(sessionId, ctx) {
      return store.listItems(tenantOf(ctx), parseSession(sessionId));
    },

    async listConflicts(query = {}, ctx) {
      return store.listConflicts(tenantOf(ctx), {
        session_id: query.session_id === undefined ? undefined : parseSession(query.session_id),
        key: query.key === undefined ? undefined : canonicalKey(query.key),
        status: query.status,
      });
    },

    async getConflict(conflictId, ctx) {
      assertPlausibleId(conflictId, 'Conflict');
      const conflict = await store.getConflict(tenantOf(ctx), conflictId);
      if (!conflict) throw notFound(`Conflict '${conflictId}'`);
      return conflict;
    },

    async resolveConflict(conflictId, rawInput, ctx) {
      const input = parseInput(ResolveConflictInputSchema, rawInput, 'resolution');
      assertPlausibleId(conflictId, 'Conflict');
      const tenantId = tenantOf(ctx);
      return store.transaction(async (tx) => {
        const found = await tx.getConflict(tenantId, conflictId);
        if (!found) throw notFound(`Conflict '${conflictId}'`);
        const current = await tx.lockItem(tenantId, found.session_id, found.key);
        // Read again under the item lock: a concurrent resolver may have settled it meanwhile.
        const conflict = (await tx.getConflict(tenantId, conflictId)) ?? found;
        if (conflict.status !== 'open' || !current) {
          throw new GatehouseError('version_conflict', `Conflict '${conflictId}' is already resolved.`);
        }
        if (maxTrust(ctx) < current.trust) {
          throw new GatehouseError(
            'forbidden',
            `Resolving this conflict needs trust ${current.trust} (source '${current.source}'); this caller may claim at most ${maxTrust(ctx)}.`,
          );
        }
        const at = now();
        const open = await tx.listConflicts(tenantId, {
          session_id: conflict.session_id,
          key: conflict.key,
          status: 'open',
        });
        const resolved: Conflict = {
          ...conflict,
          status: 'resolved',
          resolution: input.resolution,
          resolved_at: at,
        };
        await tx.updateConflict(tenantId, conflictId, resolved);
        const drafts: EventDraft[] = [];
        let version: number = current.version;
        const known = await sessionSecrets(tx, tenantId, conflict.session_id);
        if (classify(conflict.key, conflict.proposed.value).sensitivity === 'secret') {
          known.add(conflict.proposed.value);
        }
        if (input.resolution === 'accept_proposed') {
          const p = conflict.proposed;
          const item: StateItem = {
            ...current,
            value: p.value,
            type: p.type,
            source: p.source,
            trust: p.trust,
            sensitivity: classify(conflict.key, p.value).sensitivity,
            version: current.version + 1,
            status: 'current',
            metadata: p.metadata,
            updated_at: at,
          };
          version = item.version;
          await tx.insertItemVersion(tenantId, item);
          drafts.push({
            type: 'state_change',
            session_id: conflict.session_id,
            data: {
              key: conflict.key,
              version: item.version,
              previous_version: current.version,
              value: valueData(item),
              type: item.type,
              source: item.source,
              trust: item.trust,
              sensitivity: item.sensitivity,
              category: item.category,
              metadata: maskSecrets(item.metadata, `${conflict.key}.metadata`, known),
              conflict_id: conflictId,
            },
          });
        }
        drafts.push({
          type: 'conflict_resolved',
          session_id: conflict.session_id,
          data: {
            conflict_id: conflictId,
            key: conflict.key,
            resolution: input.resolution,
            version,
            ...(input.note === undefined ? {} : { note: maskSecrets(input.note, 'note', known) }),
          },
        });
        const others = open.filter((c) => c.conflict_id !== conflictId);
        if (input.resolution === 'accept_proposed') {
          // The others disagreed with a value that is no longer current.
          for (const c of others) {
            await tx.updateConflict(tenantId, c.conflict_id, {
              status: 'resolved',
              resolution: 'superseded',
              resolved_at: at,
            });
            drafts.push({
              type: 'conflict_resolved',
              session_id: c.session_id,
              data: { conflict_id: c.conflict_id, key: c.key, resolution: 'superseded', version },
            });
          }
        } else if (others.length === 0) {
          await tx.setItemStatus(tenantId, conflict.session_id, conflict.key, 'current');
        }
        await append(tx, tenantId, drafts);
        return resolved;
      });
    },

    async evaluate(rawInput, ctx) {
      const input = parseInput(EvaluateInputSchema, rawInput, 'gate evaluation');
      const tenantId = tenantOf(ctx);
      const activePolicy = policy;
      const [items, conflicts] = await Promise.all([
        store.listItems(tenantId, input.session_id),
        store.listConflicts(tenantId, { session_id: input.session_id, status: 'open' }),
      ]);
      const state: Record<string, StateView> = {};
      const secrets = new Set<string>();
      for (const item of items) {
        state[item.key] = {
          value: item.value,
          number: numberOf(item.value),
          type: item.type,
          source: item.source,
          trust: item.trust,
          version: item.version,
          status: item.status === 'conflicted' ? 'conflicted' : 'current',
          updated_at: item.updated_at,
        };
        if (item.sensitivity === 'secret') secrets.add(item.value);
      }
      const conflictViews: ConflictView[] = conflicts.map((c) => ({
        conflict_id: c.conflict_id,
        key: c.key,
        current_value: c.current.value,
        proposed_value: c.proposed.value,
        proposed_source: c.proposed.source,
        created_at: c.created_at,
      }));
      const params = input.params ?? {};
      const context = input.context ?? {};
      const evaluatedAt = clock();
      const result = activePolicy.evaluate({
        action: input.action,
        params,
        context,
        state,
        conflicts: conflictViews,
        now: evaluatedAt,
      });
      const stateVersions: Record<string, number> = {};
      for (const key of result.keysRead) {
        const view = state[key];
        if (view) stateVersions[key] = view.version;
      }
      const decision: Decision = {
        decision_id: ids('dec'),
        verdict: result.verdict,
        allowed: result.verdict !== 'Block',
        reason: result.reason,
        reasons: result.reasons,
        shadow: result.shadow,
        session_id: input.session_id,
        action: input.action,
        policy: { revision: activePolicy.revision },
        state_versions: stateVersions,
        evaluated_at: evaluatedAt.toISOString(),
      };
      const masked = maskSecrets(decision, 'decision', secrets) as Decision;
      await store.transaction((tx) =>
        append(tx, tenantId, [
          {
            type: 'gate_evaluation',
            session_id: input.session_id,
            decision_id: decision.decision_id,
            data: {
              ...masked,
              params: maskSecrets(params, 'params', secrets),
              context: maskSecrets(context, 'context', secrets),
            },
          },
        ]),
      );
      return masked;
    },

    async getDecision(decisionId, ctx) {
      assertPlausibleId(decisionId, 'Decision');
      const [event] = await store.queryEvents(tenantOf(ctx), {
        decision_id: decisionId,
        type: 'gate_evaluation',
        order: 'asc',
        limit: 1,
      });
      if (!event) throw notFound(`Decision '${decisionId}'`);
      return {
        ...(event.data as unknown as Decision & Pick<DecisionRecord, 'params' | 'context'>),
        event_id: event.event_id,
      };
    },

    async recordOutcome(decisionId, rawInput, ctx) {
      const input = parseInput(OutcomeInputSchema, rawInput, 'outcome');
      assertPlausibleId(decisionId, 'Decision');
      const tenantId = tenantOf(ctx);
      return store.transaction(async (tx) => {
        // The chain head lock serialises outcome writers, so two concurrent reports cannot both pass the check.
        await tx.lockChainHead(tenantId);
        const events = await tx.queryEvents(tenantId, { decision_id: decisionId, order: 'asc', limit: 2 });
        const decision = events.find((e) => e.type === 'gate_evaluation');
        if (!decision) throw notFound(`Decision '${decisionId}'`);
        if (events.some((e) => e.type === 'action_outcome')) {
          throw new GatehouseError(
            'already_recorded',
            `An outcome for decision '${decisionId}' is already recorded.`,
          );
        }
        const [event] = await append(tx, tenantId, [
          {
            type: 'action_outcome',
            session_id: decision.session_id,
            decision_id: decisionId,
            data: {
              decision_id: decisionId,
              action: decision.data['action'],
              verdict: decision.data['verdict'],
              outcome: input.outcome,
              ...(input.detail === undefined
                ? {}
                : {
                    detail: maskSecrets(
                      input.detail,
                      'detail',
                      await sessionSecrets(tx, tenantId, decision.session_id),
                    ),
                  }),
            },
          },
        ]);
        const { decision_id: _d, ...rest } = event!;
        return rest;
      });
    },

    async readHistory(rawQuery = {}, ctx) {
      const query = parseInput(HistoryQuerySchema, rawQuery, 'history query');
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, query.order).seq;
      const rows = await store.queryEvents(tenantOf(ctx), {
        session_id: query.session_id,
        type: query.type,
        decision_id: query.decision_id,
        after_seq: after,
        order: query.order,
        limit: query.limit + 1,
      });
      const page = rows.slice(0, query.limit).map(({ decision_id: _d, ...e }) => e);
      const last = page[page.length - 1];
      return {
        events: page,
        next_cursor:
          rows.length > query.limit && last ? encodeCursor({ seq: last.seq, order: query.order }) : null,
      };
    },

    async verifyHistory(ctx) {
      const tenantId = tenantOf(ctx);
      return verifyChain(tenantId, store.scanEvents(tenantId));
    },

    async createWebhook(rawInput, ctx) {
      const input = parseInput(CreateWebhookInputSchema, rawInput, 'webhook');
      await checkWebhookUrl(input.url);
      const at = now();
      const secret = generateWebhookSecret(randomBytes);
      const webhook: StoredWebhook = {
        id: ids('whk'),
        url: input.url,
        events: [...new Set(input.events)],
        filter: input.filter ?? null,
        description: input.description ?? null,
        status: 'active',
        secrets: [{ secret, created_at: at, expires_at: null }],
        created_at: at,
        updated_at: at,
      };
      await store.transaction((tx) => tx.insertWebhook(tenantOf(ctx), webhook));
      return { ...publicWebhook(webhook), secret };
    },

    async listWebhooks(ctx) {
      return (await store.listWebhooks(tenantOf(ctx))).map(publicWebhook);
    },

    async getWebhook(webhookId, ctx) {
      return publicWebhook(await requireWebhook(tenantOf(ctx), webhookId));
    },

    async deleteWebhook(webhookId, ctx) {
      assertPlausibleId(webhookId, 'Webhook');
      const deleted = await store.transaction((tx) => tx.deleteWebhook(tenantOf(ctx), webhookId));
      if (!deleted) throw notFound(`Webhook '${webhookId}'`);
    },

    async rotateWebhookSecret(webhookId, rawInput = {}, ctx) {
      const input = parseInput(RotateSecretInputSchema, rawInput, 'rotation');
      assertPlausibleId(webhookId, 'Webhook');
      const tenantId = tenantOf(ctx);
      const at = clock();
      const secret = generateWebhookSecret(randomBytes);
      const updated = await store.transaction(async (tx) => {
        const webhook = await tx.getWebhook(tenantId, webhookId);
        if (!webhook) throw notFound(`Webhook '${webhookId}'`);
        const until = new Date(at.getTime() + input.overlap_seconds * 1000).toISOString();
        const secrets = [
          ...webhook.secrets
            .filter((s) => s.expires_at === null || s.expires_at > at.toISOString())
            .map((s) => ({
              ...s,
              expires_at: s.expires_at === null || s.expires_at > until ? until : s.expires_at,
            }))
            .filter((s) => input.overlap_seconds > 0 && s.expires_at !== null),
          { secret, created_at: at.toISOString(), expires_at: null },
        ];
        await tx.updateWebhook(tenantId, webhookId, { secrets, updated_at: at.toISOString() });
        return { ...webhook, secrets, updated_at: at.toISOString() };
      });
      return { ...publicWebhook(updated), secret };
    },

    async enableWebhook(webhookId, ctx) {
      assertPlausibleId(webhookId, 'Webhook');
      const tenantId = tenantOf(ctx);
      return store.transaction(async (tx) => {
        const webhook = await tx.getWebhook(tenantId, webhookId);
        if (!webhook) throw notFound(`Webhook '${webhookId}'`);
        const at = now();
        await tx.updateWebhook(tenantId, webhookId, { status: 'active', updated_at: at });
        return publicWebhook({ ...webhook, status: 'active', updated_at: at });
      });
    },

    async listDeliveries(webhookId, query = {}, ctx) {
      const tenantId = tenantOf(ctx);
      await requireWebhook(tenantId, webhookId);
      const limit = query.limit ?? 50;
      if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
        throw new GatehouseError('invalid_request', 'limit must be an integer from 1 to 500.', {
          errors: [{ path: 'limit', message: 'must be an integer from 1 to 500' }],
        });
      }
      if (query.before_id !== undefined && !isPlausibleId(query.before_id)) {
        throw new GatehouseError('invalid_request', 'before_id must be a delivery ID.', {
          errors: [{ path: 'before_id', message: 'must be a delivery ID (printable ASCII)' }],
        });
      }
      return store.listDeliveries(tenantId, webhookId, {
        status: query.status,
        limit,
        before_id: query.before_id,
      });
    },

    async redeliver(webhookId, deliveryId, ctx) {
      if (!isPlausibleId(webhookId)) throw notFound(`Delivery '${deliveryId}'`);
      assertPlausibleId(deliveryId, 'Delivery');
      const tenantId = tenantOf(ctx);
      const delivery = await store.transaction(async (tx) => {
        const found = await tx.getDelivery(tenantId, deliveryId);
        if (!found || found.webhook_id !== webhookId) throw notFound(`Delivery '${deliveryId}'`);
        const at = now();
        await tx.resetDelivery(tenantId, deliveryId, at, at);
        return (await tx.getDelivery(tenantId, deliveryId))!;
      });
      options.onDeliveriesQueued?.();
      return delivery;
    },
  };
  return gatehouse;
}

/** Accepts only absolute `https:` URLs without credentials (no DNS: the service adds that). */
async function defaultWebhookUrlCheck(url: string): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GatehouseError('invalid_request', `url is not a valid absolute URL: '${url}'.`, {
      errors: [{ path: 'url', message: 'must be an absolute https URL' }],
    });
  }
  if (parsed.protocol !== 'https:') {
    throw new GatehouseError('invalid_request', 'url must use https.', {
      errors: [{ path: 'url', message: 'must use https' }],
    });
  }
  if (parsed.username || parsed.password) {
    throw new GatehouseError('invalid_request', 'url must not contain credentials.', {
      errors: [{ path: 'url', message: 'must not contain credentials' }],
    });
  }
}
