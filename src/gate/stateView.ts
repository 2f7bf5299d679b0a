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

/**
 * Views of items already seen: a store that caches a session's items (SQLite) hands out the same
 * frozen objects on every evaluation, and their views need not be built again each time.
 */
const views = new WeakMap<StateItem, StateView>();

/**
 * A session's current items as the gate's `state`, by key.
 * @example
 * policy.evaluate({ action, params, context, state: gateStateOf(items), conflicts: [], now });
 */
export function gateStateOf(items: readonly StateItem[]): Record<string, StateView> {
  const state: Record<string, StateView> = {};
  for (const item of items) {
    let view = views.get(item);
    if (!view) {
      view = stateViewOf(item);
      // Only a frozen item cannot change behind its cached view.
      if (Object.isFrozen(item)) views.set(item, Object.freeze(view));
    }
    state[item.key] = view;
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
