/**
 * How a webhook sender's free slots are shared between tenants, and between one tenant's
 * webhooks. Taken in due order alone, one tenant's backlog to an endpoint that never answers
 * would hold every slot for a timeout each, delivery after delivery, and every other tenant's
 * events would wait behind it. So a free slot goes to the tenant holding the fewest (then, within
 * it, to the webhook holding the fewest), the earliest due first among equals, and no tenant
 * holds more than its cap. Both stores claim through this one choice.
 */

/** A due delivery a claim may take: its tenant, webhook and due time. */
export interface DueCandidate {
  tenant_id: string;
  webhook_id: string;
  next_attempt_at: string;
}

/** What a sender holds now, and how much one tenant may hold. */
export interface ClaimShare {
  /** Deliveries the sender holds (claimed, outcome not recorded yet), per tenant ID. */
  heldByTenant: ReadonlyMap<string, number>;
  /** The same, per webhook: keyed by {@link webhookShareKey}. */
  heldByWebhook: ReadonlyMap<string, number>;
  /** Most deliveries one tenant may hold at once. */
  perTenant: number;
}

/**
 * How many due deliveries a claim of `limit` first reads in due order. Fewer due than this: they
 * are all there is, and fairShare chooses among them. As many: some tenant may wait behind
 * another's backlog, and the claim also reads the first ones of the next {@link WALK_TENANTS}
 * tenants with pending deliveries ({@link TenantWalk}).
 */
export function claimPageSize(limit: number): number {
  return limit * 4;
}

/** How many tenants one claim's walk looks at, at most: a claim's cost stays bounded. */
export const WALK_TENANTS = 16;

/**
 * Where the next claim's walk over the tenants with pending deliveries starts: after the last
 * tenant the previous walk looked at, from the first again once a walk reached the end. So each
 * tenant behind a backlog is looked at within (tenants with pending deliveries ÷ 16) claims.
 */
export class TenantWalk {
  #after = '';

  /** Tenant IDs after this one (`''`: from the first). */
  get after(): string {
    return this.#after;
  }

  /**
   * Notes a walk: the tenants it looked at, in the store's order. Fewer than {@link WALK_TENANTS}
   * means it reached the end, and the next starts from the first.
   */
  walked(tenants: readonly string[]): void {
    this.#after = tenants.length < WALK_TENANTS ? '' : tenants[tenants.length - 1]!;
  }
}

/** The key of a webhook in {@link ClaimShare.heldByWebhook}. */
export function webhookShareKey(tenantId: string, webhookId: string): string {
  return `${tenantId}\n${webhookId}`;
}

/** One webhook's due candidates, earliest first, and how many of its deliveries the sender holds. */
interface Queue<C> {
  held: number;
  items: C[];
  next: number;
}

/** A tenant's webhooks, and how many of its deliveries the sender holds. */
interface TenantQueues<C> {
  held: number;
  hooks: Array<Queue<C>>;
}

const headDue = <C extends DueCandidate>(q: Queue<C>): string => q.items[q.next]!.next_attempt_at;

/** The queue that serves next: the fewest held, then the earliest due. Undefined when all are empty. */
function pick<Q extends { held: number }>(
  queues: readonly Q[],
  due: (q: Q) => string | undefined,
): Q | undefined {
  let best: Q | undefined;
  let bestDue: string | undefined;
  for (const q of queues) {
    const d = due(q);
    if (d === undefined) continue;
    if (best === undefined || q.held < best.held || (q.held === best.held && d < bestDue!)) {
      best = q;
      bestDue = d;
    }
  }
  return best;
}

/**
 * Chooses up to `limit` of `candidates`, a slot at a time: to the tenant holding the fewest
 * (counting what this choice gave it), below `share.perTenant`; within it to the webhook holding
 * the fewest; the earliest due breaks ties. Returned due-first.
 * @example
 * fairShare(due, 4, { heldByTenant: new Map([['acme', 3]]), heldByWebhook: new Map(), perTenant: 3 });
 * // none of acme's: it holds its cap
 */
export function fairShare<C extends DueCandidate>(
  candidates: readonly C[],
  limit: number,
  share?: ClaimShare,
): C[] {
  const perTenant = share?.perTenant ?? Number.POSITIVE_INFINITY;
  const tenants = new Map<string, TenantQueues<C>>();
  const hooks = new Map<string, Queue<C>>();
  const byDue = (a: DueCandidate, b: DueCandidate) =>
    a.next_attempt_at < b.next_attempt_at ? -1 : a.next_attempt_at > b.next_attempt_at ? 1 : 0;
  for (const c of [...candidates].sort(byDue)) {
    const key = webhookShareKey(c.tenant_id, c.webhook_id);
    let hook = hooks.get(key);
    if (!hook) {
      hook = { held: share?.heldByWebhook.get(key) ?? 0, items: [], next: 0 };
      hooks.set(key, hook);
      let tenant = tenants.get(c.tenant_id);
      if (!tenant) {
        tenant = { held: share?.heldByTenant.get(c.tenant_id) ?? 0, hooks: [] };
        tenants.set(c.tenant_id, tenant);
      }
      tenant.hooks.push(hook);
    }
    hook.items.push(c);
  }
  const open = [...tenants.values()];
  const hookDue = (q: Queue<C>) => (q.next < q.items.length ? headDue(q) : undefined);
  const chosen: C[] = [];
  while (chosen.length < limit) {
    const tenant = pick(open, (t) => {
      if (t.held >= perTenant) return undefined;
      const hook = pick(t.hooks, hookDue);
      return hook && headDue(hook);
    });
    if (!tenant) break;
    const hook = pick(tenant.hooks, hookDue)!;
    chosen.push(hook.items[hook.next]!);
    hook.next += 1;
    hook.held += 1;
    tenant.held += 1;
  }
  return chosen.sort(byDue);
}
