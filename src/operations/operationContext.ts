/**
 * The context every operation of one Gatehouse instance runs in: injected dependencies, the
 * policy in force, and the lookups and checks several operations share (tenant, source trust,
 * items and webhooks that must exist).
 */

import { principalOf } from '../auth/principalRecord.js';
import { GatehouseError } from '../errors.js';
import type { CompiledPolicy } from '../gate/index.js';
import { defaultPolicy } from '../gate/index.js';
import type { CallContext, GatehouseOptions, WebhookUrlCheck } from '../gatehouseTypes.js';
import { createSaltSource } from '../history/commitments.js';
import { type ActivePolicies, createActivePolicies } from '../lifecycle/activePolicies.js';
import {
  type Clock,
  createIdGenerator,
  type IdGenerator,
  isoTime,
  type RandomBytes,
  systemClock,
  systemRandomBytes,
} from '../runtime.js';
import { SessionIdSchema, type StateItem } from '../schemas.js';
import { maxClaimableTrust } from '../state/sourceTrust.js';
import type { Store, StoredEvent, StoredWebhook, StoreTx, TransactionOptions } from '../store.js';
import { notOneOf, parseInput } from '../validation.js';
import { appendEvents, type EventDraft } from './appendEvents.js';
import { assertPlausibleId, notFound } from './notFound.js';
import { tracedTransaction } from './tracedTransaction.js';
import { defaultWebhookUrlCheck } from './webhookViews.js';

/**
 * What every operation of one Gatehouse instance shares: the store, time, IDs, the policy in
 * force, and the lookups and checks several operations make.
 */
export interface OperationContext {
  readonly store: Store;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly randomBytes: RandomBytes;
  /** The instance's policy (file or built-in): the base every tenant starts from. */
  readonly policy: CompiledPolicy;
  setPolicy(policy: CompiledPolicy): void;
  /** The policy in force per tenant (revisions activated in the store, else the base). */
  readonly policies: ActivePolicies;
  /** The tenant's policy in force, refreshed from the store when due. */
  policyFor(tenantId: string): Promise<CompiledPolicy>;
  readonly checkWebhookUrl: WebhookUrlCheck;
  readonly onDeliveriesQueued: (() => void) | undefined;
  /** {@link Store.transaction} in a `gatehouse.store.transaction` span: every operation writes through it. */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** The caller's tenant, or the instance's. */
  tenantOf(ctx?: CallContext): string;
  /** The clock's time, ISO 8601. */
  now(): string;
  /**
   * A store transaction that changes `tenantId`'s items or chain only: the store may lock that
   * chain first and commit it together with concurrent ones (group commit).
   */
  tenantTransaction<T>(
    tenantId: string,
    fn: (tx: StoreTx) => Promise<T>,
    options?: Pick<TransactionOptions, 'rerunnable' | 'items'>,
  ): Promise<T>;
  /** {@link tenantTransaction} that will lock `item`: the store may lock and read it up front. */
  itemTransaction<T>(
    tenantId: string,
    item: { sessionId: string; key: string },
    fn: (tx: StoreTx) => Promise<T>,
  ): Promise<T>;
  /**
   * {@link appendEvents} with this instance's IDs, clock and delivery hook; each event records the
   * principal of `ctx` (who caused it), none for a call with no caller (an expiry sweep).
   */
  append(
    tx: StoreTx,
    tenantId: string,
    drafts: readonly EventDraft[],
    ctx?: CallContext,
  ): Promise<StoredEvent[]>;
  /**
   * The trust rank of `source`.
   * @throws {GatehouseError} `invalid_request` (unknown source), `forbidden` (not the caller's to claim)
   */
  checkSource(source: string, ctx: CallContext | undefined, forWhat: string): number;
  /** The highest trust the caller may claim. */
  maxTrust(ctx: CallContext | undefined): number;
  /** @throws {GatehouseError} `not_found` */
  requireItem(tenantId: string, sessionId: string, key: string): Promise<StateItem>;
  /** @throws {GatehouseError} `invalid_request` */
  parseSession(sessionId: string): string;
  /** @throws {GatehouseError} `not_found` */
  requireWebhook(tenantId: string, webhookId: string): Promise<StoredWebhook>;
}

/** Builds the shared context of one Gatehouse instance's operations. */
export function createOperationContext(options: GatehouseOptions): OperationContext {
  const store = options.store;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? createIdGenerator(clock);
  const randomBytes = options.randomBytes ?? systemRandomBytes;
  const defaultTenant = options.tenantId ?? 'default';
  const checkWebhookUrl = options.checkWebhookUrl ?? defaultWebhookUrlCheck;
  let policy = options.policy ?? defaultPolicy();

  const transaction = tracedTransaction(store);
  const tenantOf = (ctx?: CallContext) => ctx?.tenantId ?? defaultTenant;
  const now = () => isoTime(clock());

  const salts = createSaltSource(randomBytes);
  const append = (tx: StoreTx, tenantId: string, drafts: readonly EventDraft[], ctx?: CallContext) =>
    appendEvents(tx, tenantId, drafts, {
      ids,
      now,
      salts,
      onDeliveriesQueued: options.onDeliveriesQueued,
      principal: principalOf(ctx),
    });

  const policies = createActivePolicies({
    store,
    base: () => policy,
    origin: options.policyOrigin,
    ...(options.policyRefreshMs === undefined ? {} : { refreshMs: options.policyRefreshMs }),
    append: async (tx, tenantId, data, principal) =>
      (await append(tx, tenantId, [{ type: 'policy.activated', session_id: '', data }], { principal }))[0]!,
  });
  const tenantTransaction = <T>(
    tenantId: string,
    fn: (tx: StoreTx) => Promise<T>,
    options?: Pick<TransactionOptions, 'rerunnable' | 'items'>,
  ) => transaction(fn, { ...options, tenantId });
  const itemTransaction = <T>(
    tenantId: string,
    item: { sessionId: string; key: string },
    fn: (tx: StoreTx) => Promise<T>,
  ) => transaction(fn, { tenantId, items: [item] });

  function checkSource(source: string, ctx: CallContext | undefined, forWhat: string): number {
    // The tenant's policy as its operation last resolved it (recordState resolves it first).
    const sources = policies.current(tenantOf(ctx)).sources;
    // Own keys only: `constructor` is no source.
    if (!Object.hasOwn(sources, source)) throw notOneOf('source', source, Object.keys(sources));
    const trust = sources[source]!;
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
    return maxClaimableTrust(policies.current(tenantOf(ctx)).sources, ctx?.allowedSources);
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
      policies.baseChanged();
    },
    policies,
    policyFor: (tenantId) => policies.resolve(tenantId),
    checkWebhookUrl,
    onDeliveriesQueued: options.onDeliveriesQueued,
    transaction,
    tenantOf,
    now,
    tenantTransaction,
    itemTransaction,
    append,
    checkSource,
    maxTrust,
    requireItem,
    parseSession,
    requireWebhook,
  };
}
