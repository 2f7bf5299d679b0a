/**
 * Pruning a prefix of a tenant's chain behind a signed checkpoint, and verifying a chain that
 * starts at one. A prune decides in one transaction: it stores the checkpoint (the events table
 * lets an event go only when one at or beyond its seq is stored) and appends a
 * `retention.pruned` event naming the range and the checkpoint. It then deletes the prefix's
 * events, values and deliveries in batches, one transaction each, yielding between them so
 * decisions are not held behind a large prefix. A deletion cut short (the process stopped) is
 * finished by the next prune or retention run; until then `verify` checks the events still
 * present against the checkpoint. See docs/data-lifecycle.md.
 */
import type { KeyObject } from 'node:crypto';
import { setImmediate as yieldToOthers } from 'node:timers/promises';
import { callerIdentity, IN_PROCESS_CALLER } from '../approvals/approverCheck.js';
import { GatehouseError } from '../errors.js';
import type { CallContext, Gatehouse } from '../gatehouseTypes.js';
import {
  type Checkpoint,
  type CheckpointSigner,
  checkpointProblem,
  signCheckpoint,
} from '../history/checkpoints.js';
import { verifyChain } from '../history/hashChain.js';
import type { LegalHold } from '../history/legalHoldSchemas.js';
import { PRUNE_FLOOR_DAYS, PruneInputSchema, type PruneReport } from '../history/pruneSchemas.js';
import type { VerifyResult } from '../schemas.js';
import { parseInput } from '../validation.js';
import { enforceHolds } from './legalHolds.js';
import type { OperationContext } from './operationContext.js';

const DAY_MS = 86_400_000;
/** Events one deletion transaction of a prune removes (with their values and deliveries). */
export const PRUNE_BATCH = 500;

/** The keys checkpoints are signed and verified with. */
export interface CheckpointKeys {
  /** Signs new checkpoints; its public half verifies stored ones unless `publicKey` is set. */
  signer?: CheckpointSigner | undefined;
  /** Verifies stored checkpoints. */
  publicKey?: KeyObject | undefined;
}

/** The operations of {@link pruneOperations}: the Gatehouse's, and one retention runs. */
export type PruneOperations = Pick<
  Gatehouse,
  'createCheckpoint' | 'pruneHistory' | 'verifyHistory' | 'verifyFromCheckpoint'
> & {
  /**
   * Deletes what the tenant's latest prune covers and is still stored (a deletion cut short),
   * in batches; the events deleted, 0 when there were none.
   */
  finishPrune(tenantId: string): Promise<number>;
};

/** Checkpoints, pruning, and verification from a checkpoint. */
export function pruneOperations(shared: OperationContext, keys: CheckpointKeys): PruneOperations {
  const { store, tenantOf } = shared;
  const requester = (ctx?: CallContext) => callerIdentity(ctx) ?? ctx?.actor ?? IN_PROCESS_CALLER;
  const publicKey = keys.publicKey ?? keys.signer?.publicKey;
  /** The verification of each tenant's chain in progress. */
  const verifying = new Map<string, Promise<VerifyResult>>();
  const needSigner = (): CheckpointSigner => {
    if (keys.signer === undefined) {
      throw new GatehouseError(
        'invalid_request',
        'No checkpoint key is configured (--checkpoint-key FILE or GATEHOUSE_CHECKPOINT_KEY): a checkpoint cannot be signed.',
      );
    }
    return keys.signer;
  };

  const finishPrune = async (tenantId: string): Promise<number> => {
    let deleted = 0;
    for (;;) {
      // Not under the chain-head lock: appends go on while old events are deleted. Each batch
      // reads where the deletion stands, so two runs at once (or a run after a crash) just share it.
      const batch = await shared.transaction(async (tx) => {
        const through = await tx.prunedThrough(tenantId);
        const first = await tx.firstEventSeq(tenantId);
        if (through === null || first === null || first > through) return null;
        const upTo = Math.min(through, first + PRUNE_BATCH - 1);
        await tx.pruneEvents(tenantId, upTo);
        return { events: upTo - first + 1, done: upTo === through };
      });
      if (batch === null) return deleted;
      deleted += batch.events;
      if (batch.done) return deleted;
      await yieldToOthers();
    }
  };

  /** Verifies the chain from `checkpoint` once its signature verifies with `key`. */
  const verifyFrom = async (tenantId: string, checkpoint: Checkpoint | null, key: KeyObject | undefined) => {
    if (checkpoint === null) return verifyChain(tenantId, store.scanEvents(tenantId));
    const problem =
      checkpoint.tenant_id !== tenantId
        ? `the checkpoint is of tenant '${checkpoint.tenant_id}'`
        : key === undefined
          ? `checkpoint at seq ${checkpoint.seq} cannot be verified: no checkpoint public key is configured`
          : checkpointProblem(checkpoint, key);
    if (problem !== null) {
      const result: VerifyResult = {
        ok: false,
        checked: 0,
        head: null,
        first_bad_seq: checkpoint.seq,
        problem,
        verified_fields: 0,
        erased_fields: 0,
        erased: [],
      };
      return result;
    }
    return verifyChain(tenantId, store.scanEvents(tenantId), { anchor: checkpoint });
  };

  return {
    async createCheckpoint(ctx) {
      const signer = needSigner();
      const tenantId = tenantOf(ctx);
      return shared.tenantTransaction(tenantId, async (tx) => {
        const head = await tx.lockChainHead(tenantId);
        if (head === null)
          throw new GatehouseError('invalid_request', 'The history is empty: nothing to checkpoint.');
        const checkpoint = signCheckpoint(
          {
            tenant_id: tenantId,
            seq: head.seq,
            hash: head.hash,
            event_count: head.seq,
            created_at: shared.now(),
          },
          signer,
        );
        await tx.insertCheckpoint(checkpoint);
        return checkpoint;
      });
    },

    async pruneHistory(rawInput, ctx) {
      const input = parseInput(PruneInputSchema, rawInput, 'prune');
      const signer = needSigner();
      const tenantId = tenantOf(ctx);
      const through = input.through_seq;
      const allowBelowFloor = input.allow_below_floor === true;
      // An earlier prune's deletion cut short goes first: the checks below then see only what
      // is really kept (the first held event, the first event).
      await finishPrune(tenantId);
      const report = await shared.tenantTransaction(tenantId, async (tx): Promise<PruneReport> => {
        const head = await tx.lockChainHead(tenantId);
        const pruned = await tx.prunedThrough(tenantId);
        if (pruned !== null && through <= pruned) {
          throw new GatehouseError(
            'invalid_request',
            `Events through seq ${pruned} are already pruned: prune through a later seq.`,
          );
        }
        // Another run may still be deleting an earlier prune's events: they are not this range.
        const stored = await tx.firstEventSeq(tenantId);
        const first = stored === null || pruned === null ? stored : Math.max(stored, pruned + 1);
        const last = await tx.eventAt(tenantId, through);
        if (head === null || first === null || last === null || through < first) {
          throw new GatehouseError(
            'invalid_request',
            `There is no stored event at seq ${through} to prune through.`,
          );
        }
        // Every event of the range must be older than the floor, not only the last: one dated
        // back (a clock that stepped back) would otherwise take the younger ones before it along.
        const floor = new Date(shared.clock().getTime() - PRUNE_FLOOR_DAYS * DAY_MS).toISOString();
        const old = (await tx.lastSeqBefore(tenantId, floor)) ?? 0;
        const belowFloor = old < through;
        if (belowFloor && !allowBelowFloor) {
          const young =
            old + 1 === through ? `Event ${through} is` : `Event ${old + 1}, before ${through}, is`;
          throw new GatehouseError(
            'invalid_request',
            `${young} younger than the retention floor of ${PRUNE_FLOOR_DAYS} days: history is kept at least that long unless allow_below_floor is set.`,
          );
        }
        const holds = await tx.listHolds(tenantId);
        // A session hold covers the prefix once one of its events is in it; the refusal and the
        // override event name those holds only, not every session hold of the tenant.
        const covering: LegalHold[] = [];
        for (const hold of holds) {
          if (hold.session_id === null) {
            covering.push(hold);
            continue;
          }
          const [firstOfSession] = await tx.queryEvents(tenantId, {
            session_id: hold.session_id,
            order: 'asc',
            limit: 1,
          });
          if (firstOfSession !== undefined && firstOfSession.seq <= through) covering.push(hold);
        }
        await enforceHolds(shared, tx, {
          tenantId,
          covering,
          override: input.override_hold === true,
          operation: `prune through seq ${through}`,
          ctx,
        });
        const checkpoint = signCheckpoint(
          {
            tenant_id: tenantId,
            seq: through,
            hash: last.hash,
            event_count: through,
            created_at: shared.now(),
          },
          signer,
        );
        await tx.insertCheckpoint(checkpoint);
        const range = { from_seq: first, through_seq: through, events: through - first + 1 };
        const [event] = await shared.append(
          tx,
          tenantId,
          [
            {
              type: 'retention.pruned',
              session_id: '',
              data: {
                ...range,
                checkpoint_seq: checkpoint.seq,
                checkpoint_hash: checkpoint.hash,
                key_id: checkpoint.key_id,
                below_floor: belowFloor,
                reference: input.reference ?? null,
                requested_by: requester(ctx),
              },
            },
          ],
          ctx,
        );
        return {
          checkpoint,
          ...range,
          below_floor: belowFloor,
          event: { event_id: event!.event_id, seq: event!.seq },
        };
      });
      await finishPrune(tenantId);
      return report;
    },

    finishPrune,

    verifyHistory(ctx) {
      const tenantId = tenantOf(ctx);
      // Callers that ask while a verification of the tenant runs share it: it reads the whole
      // chain, and N callers asking at once must not cost N passes.
      let running = verifying.get(tenantId);
      if (running === undefined) {
        const pass = async () => {
          // Only a pruned chain starts at a checkpoint, the one its latest prune (an event in the
          // chain) names: a checkpoint alone, such as `checkpoint create` stores at the head, is
          // no proof that a prefix was pruned. A whole chain verifies from the genesis.
          const { through, checkpoint } = await store.transaction(async (tx) => {
            const first = await tx.firstEventSeq(tenantId);
            const last = await tx.prunedThrough(tenantId);
            const anchor =
              first !== null && first > 1 && last !== null ? await tx.checkpointAt(tenantId, last) : null;
            return { through: last, checkpoint: anchor };
          });
          return { through, result: await verifyFrom(tenantId, checkpoint, publicKey) };
        };
        running = (async () => {
          const first = await pass();
          if (first.result.ok) return first.result;
          // The scan yields between pages: a prune that deleted a prefix meanwhile leaves a gap
          // that is no tampering. Its checkpoint is new then; verify once more from it.
          const latest = await store.transaction((tx) => tx.prunedThrough(tenantId));
          if (latest === first.through) return first.result;
          return (await pass()).result;
        })().finally(() => verifying.delete(tenantId));
        verifying.set(tenantId, running);
      }
      return running;
    },

    async verifyFromCheckpoint(input, ctx) {
      return verifyFrom(tenantOf(ctx), input.checkpoint, input.public_key);
    },
  };
}
