/**
 * The shared machinery of the operations: injected dependencies, the policy in force, and the
 * helpers every operation uses (appending chained events with their outbox rows, trust checks).
 */
import { GatehouseError } from '../errors.js';
import type { CompiledPolicy } from '../gate/index.js';
import { defaultPolicy } from '../gate/index.js';
import type { CallContext, GatehouseOptions, WebhookUrlCheck } from '../gatehouse.js';
import { GENESIS_HASH, hashEvent } from '../history/hashChain.js';
import {
  type Clock,
  createIdGenerator,
  type IdGenerator,
  type RandomBytes,
  systemClock,
  systemRandomBytes,
} from '../runtime.js';
import { type EventType, isPlausibleId, SessionIdSchema, type StateItem, type Webhook } from '../schemas.js';
import { classify, maskValue } from '../state/classify.js';
import { maxClaimableTrust } from '../state/sourceTrust.js';
import type { Store, StoredEvent, StoredWebhook, StoreReader, StoreTx } from '../store.js';
import { parseInput } from '../validation.js';
import { matchesSubscription } from '../webhooks/index.js';

/** An event to append; the chain and the outbox are the core's job. */
export interface EventDraft {
  type: EventType;
  session_id: string;
  data: Record<string, unknown>;
  decision_id?: string;
}

/** The `not_found` error for `what` ("Webhook 'whk_…'"). */
export function notFound(what: string): GatehouseError {
  return new GatehouseError('not_found', `${what} was not found.`);
}

/**
 * Throws `not_found` for an ID no object can have (control characters, NUL, very long) before it
 * reaches a database that would fail on it rather than find nothing (PostgreSQL refuses U+0000).
 */
export function assertPlausibleId(id: string, what: string): void {
  if (!isPlausibleId(id)) throw notFound(`${what} '${id}'`);
}

/** A webhook as shown to callers: without its secrets. */
export function publicWebhook(w: StoredWebhook): Webhook {
  const { secrets: _secrets, ...rest } = w;
  return rest;
}

/** The number a state value reads as, for CEL's `state[k].number`; null when it is not one. */
export function numberOf(value: string): number | null {
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
/** Accepts only absolute `https:` URLs without credentials (no DNS: the service adds that). */
export async function defaultWebhookUrlCheck(url: string): Promise<void> {
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

/** What every operation shares: the store, time, IDs, the policy in force and the helpers. */
export interface Core {
  readonly store: Store;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly randomBytes: RandomBytes;
  readonly policy: CompiledPolicy;
  setPolicy(policy: CompiledPolicy): void;
  readonly checkWebhookUrl: WebhookUrlCheck;
  readonly onDeliveriesQueued: (() => void) | undefined;
  tenantOf(ctx?: CallContext): string;
  now(): string;
  append(tx: StoreTx, tenantId: string, drafts: EventDraft[]): Promise<StoredEvent[]>;
  valueData(item: { key: string; value: string; sensitivity?: string }): string;
  checkSource(source: string, ctx: CallContext | undefined, forWhat: string): number;
  maxTrust(ctx: CallContext | undefined): number;
  sessionSecrets(reader: StoreReader, tenantId: string, sessionId: string): Promise<Set<string>>;
  requireItem(tenantId: string, sessionId: string, key: string): Promise<StateItem>;
  parseSession(sessionId: string): string;
  requireWebhook(tenantId: string, webhookId: string): Promise<StoredWebhook>;
}

/** Builds the shared core of one Gatehouse instance. */
export function createCore(options: GatehouseOptions): Core {
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
    return maxClaimableTrust(policy.sources, ctx?.allowedSources);
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

  return {
    store,
    clock,
    ids,
    randomBytes,
    get policy() {
      return policy;
    },
    setPolicy(next) {
      policy = next;
    },
    checkWebhookUrl,
    onDeliveriesQueued: options.onDeliveriesQueued,
    tenantOf,
    now,
    append,
    valueData,
    checkSource,
    maxTrust,
    sessionSecrets,
    requireItem,
    parseSession,
    requireWebhook,
  };
}
