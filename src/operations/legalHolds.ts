/**
 * Legal holds: placing, releasing and listing them, and the check erasure and pruning make. A
 * hold covers a session, or (no session) the whole tenant; what it covers is neither erased nor
 * pruned unless the request overrides it explicitly, and the override is an event in the chain.
 */
import { callerIdentity, IN_PROCESS_CALLER } from '../approvals/approverCheck.js';
import { hasScope, missingScope } from '../auth/apiKeys.js';
import { GatehouseError } from '../errors.js';
import type { CallContext, Gatehouse } from '../gatehouseTypes.js';
import { type LegalHold, PlaceHoldInputSchema } from '../history/legalHoldSchemas.js';
import type { StoreTx } from '../store.js';
import { parseInput } from '../validation.js';
import type { OperationContext } from './operationContext.js';

/** Who asked: a key ID, the CLI, or in-process. */
export const requesterOf = (ctx?: CallContext) => callerIdentity(ctx) ?? ctx?.actor ?? IN_PROCESS_CALLER;

/**
 * Refuses an erasure or prune that `covering` holds cover, or, with `override`, records a
 * `legal_hold.overridden` event naming them, in `tx`.
 * @throws {GatehouseError} `invalid_request` when a hold covers it and `override` is not set;
 *   `forbidden` when `override` is set by a caller without `admin`
 */
export async function enforceHolds(
  shared: OperationContext,
  tx: StoreTx,
  job: {
    tenantId: string;
    covering: LegalHold[];
    override: boolean;
    operation: string;
    ctx?: CallContext | undefined;
  },
): Promise<void> {
  const { covering } = job;
  if (covering.length === 0) return;
  const names = covering.map((h) => `${h.hold_id} (${h.reference})`).join(', ');
  if (!job.override) {
    throw new GatehouseError(
      'invalid_request',
      `Legal hold ${names} covers this ${job.operation}: refused (override_hold overrides it, and is recorded).`,
    );
  }
  // Overriding a hold undoes it for this operation: no less than releasing it, which needs admin.
  // A caller without scopes is in-process (the CLI), which holds every scope.
  const scopes = job.ctx?.scopes;
  if (scopes !== undefined && !hasScope({ scopes }, 'admin')) {
    throw new GatehouseError(
      'forbidden',
      `Legal hold ${names} covers this ${job.operation}, and override_hold needs the 'admin' scope (as placing and releasing a hold does).`,
      missingScope('admin', job.ctx?.principal),
    );
  }
  await shared.append(
    tx,
    job.tenantId,
    [
      {
        type: 'legal_hold.overridden',
        session_id: '',
        data: {
          holds: covering.map((h) => h.hold_id),
          references: covering.map((h) => h.reference),
          operation: job.operation,
          by: requesterOf(job.ctx),
        },
      },
    ],
    job.ctx,
  );
}

/** The holds that cover a session: its own and the tenant's. */
export function holdsOnSession(holds: readonly LegalHold[], sessionId: string): LegalHold[] {
  return holds.filter((h) => h.session_id === null || h.session_id === sessionId);
}

/** Placing, releasing and listing legal holds. */
export function legalHoldOperations(
  shared: OperationContext,
): Pick<Gatehouse, 'placeHold' | 'releaseHold' | 'listHolds'> {
  const { tenantOf } = shared;
  return {
    async placeHold(rawInput, ctx) {
      const input = parseInput(PlaceHoldInputSchema, rawInput, 'legal hold');
      const tenantId = tenantOf(ctx);
      const hold: LegalHold = {
        hold_id: shared.ids('hld'),
        session_id: input.session_id ?? null,
        reference: input.reference,
        placed_by: requesterOf(ctx),
        placed_at: shared.now(),
      };
      await shared.tenantTransaction(tenantId, async (tx) => {
        await tx.lockChainHead(tenantId);
        await tx.insertHold(tenantId, hold);
        await shared.append(
          tx,
          tenantId,
          [
            {
              type: 'legal_hold.placed',
              session_id: hold.session_id ?? '',
              data: { ...hold, by: hold.placed_by },
            },
          ],
          ctx,
        );
      });
      return hold;
    },

    async releaseHold(holdId, ctx) {
      const tenantId = tenantOf(ctx);
      return shared.tenantTransaction(tenantId, async (tx) => {
        await tx.lockChainHead(tenantId);
        const hold = await tx.deleteHold(tenantId, holdId);
        if (hold === null) throw new GatehouseError('not_found', `No legal hold ${holdId}.`);
        await shared.append(
          tx,
          tenantId,
          [
            {
              type: 'legal_hold.released',
              session_id: hold.session_id ?? '',
              data: { ...hold, by: requesterOf(ctx) },
            },
          ],
          ctx,
        );
        return hold;
      });
    },

    async listHolds(ctx) {
      const tenantId = tenantOf(ctx);
      return { holds: await shared.store.transaction((tx) => tx.listHolds(tenantId)) };
    },
  };
}
