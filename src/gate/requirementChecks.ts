/**
 * The built-in checks: each `requires` entry against the session's state, and unresolved
 * conflicts on keys the action does not require.
 */
import type { ConflictView, GateReason, StateView, Verdict } from './gateTypes.js';

/** A `requires` entry with its trust threshold resolved to a number. */
export interface CompiledRequirement {
  readonly key: string;
  /** Minimum trust, or `undefined` when the entry sets none. */
  readonly minTrust: number | undefined;
  /** How `min_trust` was written (`user_input` or `3`), for messages. */
  readonly minTrustLabel: string;
  /** Allowed item types, or `undefined` for any. */
  readonly types: readonly string[] | undefined;
}

/** Settings the requirement checks read from the policy. */
export interface RequirementSettings {
  readonly lowTrustBelow: number;
}

/**
 * Checks one requirement against the state; appends a reason for every failed check.
 * `conflictedKeys` holds keys with an unresolved conflict record (an item whose status says
 * `conflicted` counts too).
 */
export function checkRequirement(
  requirement: CompiledRequirement,
  state: Record<string, StateView>,
  conflictedKeys: ReadonlySet<string>,
  settings: RequirementSettings,
  reasons: GateReason[],
): void {
  const { key } = requirement;
  const item = Object.hasOwn(state, key) ? state[key] : undefined;
  if (item === undefined) {
    reasons.push({
      rule: 'required_missing',
      verdict: 'Block',
      message: `Required state "${key}" is missing.`,
      keys: [key],
    });
    return;
  }
  if (item.status === 'conflicted' || conflictedKeys.has(key)) {
    reasons.push({
      rule: 'required_conflicted',
      verdict: 'Block',
      message: `Required state "${key}" has an unresolved conflict.`,
      keys: [key],
    });
  }
  if (requirement.types !== undefined && !requirement.types.includes(item.type)) {
    reasons.push({
      rule: 'required_wrong_type',
      verdict: 'Block',
      message: `Required state "${key}" has type ${item.type}; expected ${listWithOr(requirement.types)}.`,
      keys: [key],
    });
  }
  if (requirement.minTrust !== undefined) {
    if (item.trust < requirement.minTrust) {
      const needed = /^\d+$/.test(requirement.minTrustLabel)
        ? `trust ${requirement.minTrust}`
        : `${requirement.minTrustLabel} (trust ${requirement.minTrust})`;
      reasons.push({
        rule: 'required_untrusted',
        verdict: 'Block',
        message: `Required state "${key}" comes from ${item.source} (trust ${item.trust}); at least ${needed} is required.`,
        keys: [key],
      });
    }
  } else if (item.type === 'fact' && item.trust < settings.lowTrustBelow) {
    reasons.push({
      rule: 'required_low_trust',
      verdict: 'Warn',
      message: `Required fact "${key}" comes only from ${item.source} (trust ${item.trust}), a low-trust source.`,
      keys: [key],
    });
  }
}

/**
 * The reason for unresolved conflicts on keys outside `requiredKeys`, or `undefined` when
 * there are none or `verdict` is `Allow`.
 */
export function checkOpenConflicts(
  conflictedKeys: ReadonlySet<string>,
  requiredKeys: ReadonlySet<string>,
  verdict: Verdict,
): GateReason | undefined {
  if (verdict === 'Allow') return undefined;
  const keys = [...conflictedKeys].filter((key) => !requiredKeys.has(key)).sort();
  if (keys.length === 0) return undefined;
  return {
    rule: 'open_conflicts',
    verdict,
    message:
      keys.length === 1
        ? `The session has an unresolved conflict on "${keys[0]}".`
        : `The session has unresolved conflicts on ${keys.map((key) => `"${key}"`).join(', ')}.`,
    keys,
  };
}

/** Conflicted keys of frozen (shared, see `gateStateOf`) states. */
const conflictedOfState = new WeakMap<Record<string, StateView>, ReadonlySet<string>>();

/** The keys with an unresolved conflict: conflict records plus items marked `conflicted`. */
export function conflictedKeysOf(
  state: Record<string, StateView>,
  conflicts: readonly ConflictView[],
): ReadonlySet<string> {
  let marked = conflictedOfState.get(state);
  if (!marked) {
    const keys = new Set<string>();
    for (const key of Object.keys(state)) {
      if (state[key]?.status === 'conflicted') keys.add(key);
    }
    marked = keys;
    if (Object.isFrozen(state)) conflictedOfState.set(state, marked);
  }
  if (conflicts.length === 0) return marked;
  const keys = new Set(marked);
  for (const conflict of conflicts) keys.add(conflict.key);
  return keys;
}

function listWithOr(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}
