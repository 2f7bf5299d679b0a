/**
 * The conflict rule, deterministic and without I/O: what a write does to the current value.
 * A value from an equal or higher trust source supersedes; a different value from a lower trust
 * source never replaces what is there: it becomes a conflict that keeps both values.
 */

/** What a write does. */
export type WriteOutcome = 'created' | 'unchanged' | 'superseded' | 'conflict';

/** The parts of an item the rule reads. */
export interface WriteSide {
  value: string;
  type: string;
  trust: number;
}

/**
 * Decides the outcome of writing `incoming` over `current` (null when the key has no value yet).
 * The same value and type is `unchanged` whatever the source: repeating a fact is not a change.
 */
export function decideWrite(current: WriteSide | null, incoming: WriteSide): WriteOutcome {
  if (current === null) return 'created';
  if (current.value === incoming.value && current.type === incoming.type) return 'unchanged';
  return incoming.trust >= current.trust ? 'superseded' : 'conflict';
}
