/**
 * The session's state and conflicts as the gate (and its CEL rules) reads them, built from the
 * stored records: one place, so every caller of the gate gives it the same view.
 */
import type { Conflict, StateItem } from '../schemas.js';
import type { ConflictView, StateView } from './gateTypes.js';

/** The number a state value reads as, for CEL's `state[k].number`; null when it is not one. */
export function numberOf(value: string): number | null {
  const trimmed = value.trim();
  if (trimmed === '') return null;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : null;
}

/** A current state item as the gate sees it. */
export function stateViewOf(item: StateItem): StateView {
  return {
    value: item.value,
    number: numberOf(item.value),
    type: item.type,
    source: item.source,
    trust: item.trust,
    version: item.version,
    status: item.status === 'conflicted' ? 'conflicted' : 'current',
    updated_at: item.updated_at,
  };
}

/** The last state built from frozen items, by its first item: reused while the items are the same objects. */
const states = new WeakMap<StateItem, { items: readonly StateItem[]; state: Record<string, StateView> }>();

function sameItems(a: readonly StateItem[], b: readonly StateItem[]): boolean {
  if (a.length !== b.length) return false;
  for (let n = 0; n < a.length; n += 1) if (a[n] !== b[n]) return false;
  return true;
}

/**
 * A session's current items as the gate's `state`, by key. Given the frozen items of a store's
 * cache (SQLite hands out the same objects until the session changes), the result is frozen too
 * and shared by every evaluation of those items.
 * @example
 * policy.evaluate({ action, params, context, state: gateStateOf(items), conflicts: [], now });
 */
export function gateStateOf(items: readonly StateItem[]): Record<string, StateView> {
  const first = items[0];
  const cached = first === undefined ? undefined : states.get(first);
  if (cached && sameItems(cached.items, items)) return cached.state;
  const state: Record<string, StateView> = {};
  // An erased item is no state at all: a rule that requires it finds it missing.
  for (const item of items) if (item.status !== 'erased') state[item.key] = stateViewOf(item);
  // Only frozen items cannot change behind a cached state.
  if (first !== undefined && items.every((item) => Object.isFrozen(item))) {
    for (const view of Object.values(state)) Object.freeze(view);
    states.set(first, { items: items.slice(), state: Object.freeze(state) });
  }
  return state;
}

/** An unresolved conflict as the gate sees it. */
export function conflictViewOf(conflict: Conflict): ConflictView {
  return {
    conflict_id: conflict.conflict_id,
    key: conflict.key,
    current_value: conflict.current.value,
    proposed_value: conflict.proposed.value,
    proposed_source: conflict.proposed.source,
    created_at: conflict.created_at,
  };
}
