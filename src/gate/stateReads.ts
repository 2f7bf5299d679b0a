/**
 * Which state items one evaluation read, so that a decision's `state_versions` (and the digest
 * an approval is bound to) cover everything the verdict rested on: a key computed from the
 * params (`state[params.limit_key]`), a lookup of a key that does not exist (`'k' in state`,
 * `has(…)`), and an enumeration of the whole state (`exists`, `all`, `map`, `filter`, `size()`).
 *
 * The rules' programs read `state` through a proxy made for that one evaluation: the CEL library
 * looks a map key up with `Object.hasOwn` (the `getOwnPropertyDescriptor` trap) and then reads it
 * (`get`), and enumerates a map with `Object.keys` or `for…in` (`ownKeys`). The state objects
 * themselves are frozen and shared between evaluations (`stateView.ts`, `celActivation.ts`), so
 * the record lives in the proxy's handler, never in them.
 */
import { isCanonicalKey } from '../state/canonicalKey.js';
import type { StateView } from './gateTypes.js';

/**
 * The `state_versions` entry recording that the decision read the whole key set; its value is the
 * number of items there were. `*` is never a state key (see `canonicalKey`).
 */
export const KEY_SET_READ = '*';

/** What one evaluation read of `state`. Made per evaluation: it must never be shared. */
export class StateReads implements ProxyHandler<Record<string, unknown>> {
  /** Property names looked up, present or not (some are no state key at all: `constructor`). */
  readonly keys = new Set<string>();
  /** True once the key set was enumerated. */
  keySet = false;

  /** A view of `state` that records its reads here. */
  watch<T>(state: Record<string, T>): Record<string, T> {
    return new Proxy(state, this as ProxyHandler<Record<string, T>>);
  }

  get(target: Record<string, unknown>, prop: string | symbol, receiver: unknown): unknown {
    if (typeof prop === 'string') this.keys.add(prop);
    return Reflect.get(target, prop, receiver);
  }

  has(target: Record<string, unknown>, prop: string | symbol): boolean {
    if (typeof prop === 'string') this.keys.add(prop);
    return Reflect.has(target, prop);
  }

  getOwnPropertyDescriptor(
    target: Record<string, unknown>,
    prop: string | symbol,
  ): PropertyDescriptor | undefined {
    if (typeof prop === 'string') this.keys.add(prop);
    return Reflect.getOwnPropertyDescriptor(target, prop);
  }

  ownKeys(target: Record<string, unknown>): ArrayLike<string | symbol> {
    this.keySet = true;
    return Reflect.ownKeys(target);
  }
}

/** The keys a decision read and their versions; see {@link stateRead}. */
export interface StateRead {
  /** Sorted, unique; present and absent keys. */
  keysRead: string[];
  /** Version of each key read, 0 for an absent one; {@link KEY_SET_READ} when enumerated. */
  stateVersions: Record<string, number>;
}

/**
 * What a decision read of `state`: the `named` keys (required keys, always; others only when they
 * exist), and the evaluation's `reads` when it watched them. A key read while absent is recorded
 * with version 0, so its appearing later changes the record; a looked-up name that is no
 * canonical key is left out (it can never appear). An enumeration records every key and
 * {@link KEY_SET_READ}.
 */
export function stateRead(
  state: Readonly<Record<string, StateView>>,
  named: { required: Iterable<string>; literals: Iterable<string> },
  reads: StateReads | undefined,
): StateRead {
  const keys = new Set(named.required);
  for (const literal of named.literals) if (Object.hasOwn(state, literal)) keys.add(literal);
  if (reads !== undefined) {
    for (const key of reads.keys) if (Object.hasOwn(state, key) || isCanonicalKey(key)) keys.add(key);
    if (reads.keySet) for (const key of Object.keys(state)) keys.add(key);
  }
  const keysRead = [...keys].sort();
  const stateVersions: Record<string, number> = {};
  if (reads?.keySet) stateVersions[KEY_SET_READ] = Object.keys(state).length;
  for (const key of keysRead) stateVersions[key] = Object.hasOwn(state, key) ? state[key]!.version : 0;
  return { keysRead, stateVersions };
}
