/**
 * Which policy is in force for each tenant, and activating a new one.
 *
 * A tenant's active revision lives in the store (`policy_active`), so every instance on one
 * database follows it: an instance re-reads the pointer at most every `refreshMs` (on the first
 * request after that, no timer). The instance's own policy (a file, or the built-in one) is the
 * base: with `origin` set (`gatehouse serve`/`mcp`), the first use of a tenant after start or
 * after `setPolicy` records the base as the tenant's active revision **unless the tenant already
 * followed this very base revision** — so a restart with an unchanged file keeps a revision
 * activated since (`PUT /v1/policy`), and a changed file takes over.
 */
import type { PrincipalRecord } from '../auth/principalRecord.js';
import { GatehouseError } from '../errors.js';
import { compilePolicy } from '../gate/compilePolicy.js';
import type { CompiledPolicy } from '../gate/gateTypes.js';
import type { ActivePolicyPointer, Store, StoredEvent, StoreTx } from '../store.js';

/** What {@link createActivePolicies} needs. */
export interface ActivePoliciesOptions {
  store: Store;
  /** The instance's policy (file or built-in), as it is now. */
  base: () => CompiledPolicy;
  /**
   * Who the base is recorded as (`file`, `builtin`); unset: the base is never recorded and
   * applies to every tenant that has not activated a revision.
   */
  origin: string | undefined;
  /** @default 1000 */
  refreshMs?: number;
  /** Monotonic milliseconds (for the refresh interval). */
  nowMs?: () => number;
  /**
   * Appends the `policy.activated` event in the caller's transaction, recording `principal` (who
   * activated it) as `data.principal`; none when the instance recorded its own base policy.
   */
  append(
    tx: StoreTx,
    tenantId: string,
    data: Record<string, unknown>,
    principal?: PrincipalRecord,
  ): Promise<StoredEvent>;
}

/** The outcome of an activation. */
export interface Activation {
  policy: CompiledPolicy;
  pointer: ActivePolicyPointer;
  /** False when the revision was already active (nothing was written). */
  changed: boolean;
}

/** The per-tenant policies of one Gatehouse instance. */
export interface ActivePolicies {
  /** The tenant's policy, refreshed from the store when the cached one is older than `refreshMs`. */
  resolve(tenantId: string): Promise<CompiledPolicy>;
  /** The tenant's policy as last resolved (the base before that); no I/O. */
  current(tenantId: string): CompiledPolicy;
  /** The tenant's pointer as last read (after {@link resolve}). */
  pointer(tenantId: string): ActivePolicyPointer | null;
  /**
   * Activates `policy` for the tenant, atomically: only while `expected` is the active revision.
   * `by` is recorded as `activated_by`, `principal` (the caller, if any) on the event.
   * @throws {GatehouseError} `precondition_failed`
   */
  activate(
    tenantId: string,
    policy: CompiledPolicy,
    options: { by: string; expected: string; principal?: PrincipalRecord | undefined },
  ): Promise<Activation>;
  /**
   * A compiled revision of the tenant (cached per tenant), or the base.
   * @throws {GatehouseError} `not_found` for a revision the tenant never stored, also when
   *   another tenant did
   */
  compiled(tenantId: string, revision: string): Promise<CompiledPolicy>;
  /** Forgets what was synced with the base: call after the base changed. */
  baseChanged(): void;
}

interface TenantEntry {
  policy: CompiledPolicy;
  pointer: ActivePolicyPointer | null;
  checkedAt: number;
}

/**
 * Compiled revisions kept per tenant besides its active one (replays of older revisions), least
 * recently used dropped first. Per tenant, so that a lookup never finds another tenant's revision
 * and one tenant's replays never evict another's compiled policies.
 */
const COMPILED_PER_TENANT = 8;

/** Creates the per-tenant policy tracker of one instance. */
export function createActivePolicies(options: ActivePoliciesOptions): ActivePolicies {
  const { store, base, origin } = options;
  const refreshMs = options.refreshMs ?? 1000;
  const nowMs = options.nowMs ?? (() => performance.now());
  const tenants = new Map<string, TenantEntry>();
  const inFlight = new Map<string, Promise<CompiledPolicy>>();
  // Tenant → revision → compiled policy, each map in least-recently-used order.
  const compiledByTenant = new Map<string, Map<string, CompiledPolicy>>();
  // Tenants whose pointer was compared with the current base since it last changed.
  let syncedWithBase = new Set<string>();

  function remember(tenantId: string, policy: CompiledPolicy): void {
    let revisions = compiledByTenant.get(tenantId);
    if (revisions === undefined) {
      revisions = new Map();
      compiledByTenant.set(tenantId, revisions);
    }
    revisions.delete(policy.revision);
    revisions.set(policy.revision, policy);
    if (revisions.size > COMPILED_PER_TENANT) revisions.delete(revisions.keys().next().value!);
  }

  function cachedRevision(tenantId: string, revision: string): CompiledPolicy | undefined {
    // The active policy first: it stays compiled however many other revisions are replayed.
    const active = tenants.get(tenantId)?.policy;
    if (active?.revision === revision) return active;
    const revisions = compiledByTenant.get(tenantId);
    const policy = revisions?.get(revision);
    if (policy !== undefined) {
      revisions!.delete(revision);
      revisions!.set(revision, policy);
    }
    return policy;
  }

  async function compiled(tenantId: string, revision: string): Promise<CompiledPolicy> {
    // The base applies to every tenant that has not activated another revision: no tenant's secret.
    const b = base();
    if (revision === b.revision) return b;
    const cached = cachedRevision(tenantId, revision);
    if (cached) return cached;
    // Only the tenant's own stored revision: another tenant's is not found, like one that never was.
    const row = await store.getPolicyRevision(tenantId, revision);
    if (!row) throw new GatehouseError('not_found', `Policy revision '${revision}' was not found.`);
    // Stored revisions were valid when activated, but a later version of Gatehouse may check more
    // (a literal that fails every evaluation, a __proto__ name): say so, and what to do.
    let policy: CompiledPolicy;
    try {
      policy = compilePolicy(row.source, { source: `revision ${revision.slice(0, 12)}` });
    } catch (error) {
      throw new GatehouseError(
        'unavailable',
        `Policy revision ${revision.slice(0, 12)} no longer loads, so this tenant's actions cannot be evaluated; activate a corrected policy (PUT /v1/policy, or gatehouse policy history to find its source). ${(error as Error).message}`,
      );
    }
    remember(tenantId, policy);
    return policy;
  }

  /** Records `policy` as active in `tx` (the tenant's chain head is locked by the caller). */
  async function write(
    tx: StoreTx,
    tenantId: string,
    policy: CompiledPolicy,
    fields: {
      by: string;
      baseRevision: string | null;
      previous: ActivePolicyPointer | null;
      principal?: PrincipalRecord | undefined;
    },
  ): Promise<ActivePolicyPointer> {
    const event = await options.append(
      tx,
      tenantId,
      {
        revision: policy.revision,
        previous_revision: fields.previous?.revision ?? null,
        activated_by: fields.by,
      },
      fields.principal,
    );
    await tx.insertPolicyRevision(tenantId, {
      revision: policy.revision,
      source: policy.source,
      created_by: fields.by,
      created_at: event.occurred_at,
      seq: event.seq,
    });
    const pointer: ActivePolicyPointer = {
      revision: policy.revision,
      base_revision: fields.baseRevision,
      activated_by: fields.by,
      activated_at: event.occurred_at,
      seq: event.seq,
    };
    await tx.setActivePolicy(tenantId, pointer);
    return pointer;
  }

  /** Records the base as the tenant's active revision unless the tenant already follows it. */
  async function syncBase(tenantId: string): Promise<ActivePolicyPointer | null> {
    const b = base();
    return store.transaction(async (tx) => {
      // The chain head lock serialises activations of a tenant across instances.
      await tx.lockChainHead(tenantId);
      const pointer = await tx.getActivePolicy(tenantId);
      if (pointer && pointer.base_revision === b.revision) return pointer;
      if (pointer && pointer.revision === b.revision) {
        const updated = { ...pointer, base_revision: b.revision };
        await tx.setActivePolicy(tenantId, updated);
        return updated;
      }
      return write(tx, tenantId, b, { by: origin!, baseRevision: b.revision, previous: pointer });
    });
  }

  async function refresh(tenantId: string): Promise<CompiledPolicy> {
    let pointer: ActivePolicyPointer | null;
    if (origin !== undefined && !syncedWithBase.has(tenantId)) {
      const synced = syncedWithBase;
      pointer = await syncBase(tenantId);
      synced.add(tenantId);
    } else {
      pointer = await store.getActivePolicy(tenantId);
    }
    const policy = pointer ? await compiled(tenantId, pointer.revision) : base();
    tenants.set(tenantId, { policy, pointer, checkedAt: nowMs() });
    return policy;
  }

  return {
    resolve(tenantId) {
      const entry = tenants.get(tenantId);
      const fresh = entry !== undefined && nowMs() - entry.checkedAt < refreshMs;
      if (fresh && (origin === undefined || syncedWithBase.has(tenantId))) {
        return Promise.resolve(entry.policy);
      }
      let running = inFlight.get(tenantId);
      if (!running) {
        running = refresh(tenantId).finally(() => inFlight.delete(tenantId));
        inFlight.set(tenantId, running);
      }
      return running;
    },
    current(tenantId) {
      return tenants.get(tenantId)?.policy ?? base();
    },
    pointer(tenantId) {
      return tenants.get(tenantId)?.pointer ?? null;
    },
    async activate(tenantId, policy, { by, expected, principal }) {
      const b = base();
      const result = await store.transaction(async (tx) => {
        await tx.lockChainHead(tenantId);
        const pointer = await tx.getActivePolicy(tenantId);
        const active = pointer?.revision ?? b.revision;
        if (active !== expected) {
          throw new GatehouseError(
            'precondition_failed',
            `The active policy revision is ${active}, not ${expected}: read it again (GET /v1/policy) and retry.`,
          );
        }
        if (pointer && pointer.revision === policy.revision) return { pointer, changed: false };
        const baseRevision = pointer ? pointer.base_revision : origin === undefined ? null : b.revision;
        const written = await write(tx, tenantId, policy, { by, baseRevision, previous: pointer, principal });
        return { pointer: written, changed: true };
      });
      remember(tenantId, policy);
      if (origin !== undefined) syncedWithBase.add(tenantId);
      tenants.set(tenantId, { policy, pointer: result.pointer, checkedAt: nowMs() });
      return { policy, ...result };
    },
    compiled,
    baseChanged() {
      syncedWithBase = new Set();
      tenants.clear();
    },
  };
}
