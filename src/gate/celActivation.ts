/**
 * The variables of one CEL evaluation: the action, its parameters and context, and the session's
 * state and conflicts in the shapes CEL reads (ints as bigint, timestamps as Date).
 */
import type { ConflictView, GateInput, StateView } from './gateTypes.js';

// BigInt() throws on NaN and Infinity; a malformed number must not make evaluation throw.
const toCelInt = (value: number): bigint => (Number.isFinite(value) ? BigInt(Math.trunc(value)) : 0n);

/**
 * A state item as CEL sees it: `trust` and `version` are CEL ints, `updated_at` a timestamp.
 * Fields are read lazily (getters), so a session with many items costs one small object per
 * item per evaluation, and a timestamp is parsed only when a rule reads it.
 */
export class CelStateItem {
  readonly #item: StateView;
  #updatedAt: Date | undefined;

  constructor(item: StateView) {
    this.#item = item;
  }
  get value(): string {
    return this.#item.value;
  }
  get number(): number | null {
    return this.#item.number;
  }
  get type(): string {
    return this.#item.type;
  }
  get source(): string {
    return this.#item.source;
  }
  get trust(): bigint {
    return toCelInt(this.#item.trust);
  }
  get version(): bigint {
    return toCelInt(this.#item.version);
  }
  get status(): string {
    return this.#item.status;
  }
  get updated_at(): Date {
    this.#updatedAt ??= new Date(this.#item.updated_at);
    return this.#updatedAt;
  }
}

/** A conflict as CEL sees it: `created_at` is a timestamp (parsed when first read). */
export class CelConflict {
  readonly #conflict: ConflictView;
  #createdAt: Date | undefined;

  constructor(conflict: ConflictView) {
    this.#conflict = conflict;
  }
  get conflict_id(): string {
    return this.#conflict.conflict_id;
  }
  get key(): string {
    return this.#conflict.key;
  }
  get current_value(): string {
    return this.#conflict.current_value;
  }
  get proposed_value(): string {
    return this.#conflict.proposed_value;
  }
  get proposed_source(): string {
    return this.#conflict.proposed_source;
  }
  get created_at(): Date {
    this.#createdAt ??= new Date(this.#conflict.created_at);
    return this.#createdAt;
  }
}

/** The variables every rule and message placeholder can read. */
export interface CelActivation {
  action: string;
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  state: Record<string, CelStateItem>;
  conflicts: CelConflict[];
  now: Date;
}

/** CEL `state` records of frozen gate states (shared by every evaluation of the same items). */
const celStates = new WeakMap<Record<string, StateView>, Record<string, CelStateItem>>();

/**
 * Builds the CEL variables of one evaluation. Rules run on its `meteredActivation`, within
 * `CEL_COST_LIMIT`.
 */
export function createActivation(input: GateInput): CelActivation {
  return {
    action: input.action,
    params: input.params,
    context: input.context,
    state: celStateOf(input.state),
    conflicts: input.conflicts.map((conflict) => new CelConflict(conflict)),
    now: input.now,
  };
}

function celStateOf(gateState: GateInput['state']): Record<string, CelStateItem> {
  const shared = Object.isFrozen(gateState);
  let state = shared ? celStates.get(gateState) : undefined;
  if (state) return state;
  // A null-prototype record: a key can never resolve to an inherited property.
  state = Object.create(null) as Record<string, CelStateItem>;
  for (const key of Object.keys(gateState)) {
    const item = gateState[key];
    if (item !== undefined) state[key] = new CelStateItem(item);
  }
  if (shared) celStates.set(gateState, Object.freeze(state));
  return state;
}
