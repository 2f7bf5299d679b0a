/**
 * An evaluation reads the session's items before its transaction, so that concurrent evaluations
 * share one commit. An erasure (on any instance) may commit between that read and the append: an
 * answer recorded after the erasure must not quote the values it erased, nor stand on them. The
 * transaction checks the items the answer depends on, under the locks every writer takes; when
 * one of them was erased since, the evaluation runs again on what is committed. A plain write in
 * between is no reason: the decision stands on the versions it names (`state_versions`), which
 * replay pins.
 */
import type { StateView } from '../gate/gateTypes.js';
import { KEY_SET_READ } from '../gate/stateReads.js';
import type { Conflict } from '../schemas.js';
import type { StoreTx } from '../store.js';

/** Thrown in an evaluation's transaction when an item it read was erased since: nothing is written. */
export class StaleRead extends Error {
  constructor() {
    super('The session changed while it was evaluated.');
    this.name = 'StaleRead';
  }
}

/** One item an answer depends on, at the version it was read. */
export interface ItemRead {
  key: string;
  version: number;
  value: string;
}

/**
 * The items an answer depends on: each key it read that held an item (all live items, when it
 * enumerated the keys). A key read as absent is left out: a write to it quotes nothing erased.
 */
export function itemsRead(
  state: Readonly<Record<string, StateView>>,
  stateVersions: Readonly<Record<string, number>>,
): ItemRead[] {
  const read: ItemRead[] = [];
  // The state the gate saw holds exactly the live items; most answers read a few of its keys.
  for (const key of Object.keys(Object.hasOwn(stateVersions, KEY_SET_READ) ? state : stateVersions)) {
    if (!Object.hasOwn(state, key)) continue;
    const { version, value } = state[key]!;
    read.push({ key, version, value });
  }
  return read;
}

/**
 * Locks and reads each item again in `tx` (which holds the tenant's chain head, as every writer of
 * the tenant does first); when a later version was written meanwhile, reads the version it read
 * (a version's value never changes but by an erasure). Each open conflict the evaluation saw (a
 * rule may quote its values without reading its item) is read again too: its values are erased
 * with its session or by retention, and a resolution in between is no reason.
 * @throws {StaleRead} when one was erased since it was read.
 */
export async function assertUnchanged(
  tx: StoreTx,
  tenantId: string,
  sessionId: string,
  read: readonly ItemRead[],
  conflicts: readonly Conflict[],
): Promise<void> {
  for (const seen of conflicts) {
    const now = await tx.getConflict(tenantId, seen.conflict_id);
    if (
      now === null ||
      now.resolution === 'erased' ||
      now.current.value !== seen.current.value ||
      now.proposed.value !== seen.proposed.value
    ) {
      throw new StaleRead();
    }
  }
  for (const { key, version, value } of read) {
    const now = await tx.lockItem(tenantId, sessionId, key);
    if (now === null || (now.version === version && now.status === 'erased')) throw new StaleRead();
    if (now.version === version) continue;
    const then = await tx.getItemVersion(tenantId, sessionId, key, version);
    if (then === null || then.value !== value) throw new StaleRead();
  }
}
