/**
 * Whether a `matches()` pattern can run in linear time. cel-js runs patterns on V8's backtracking
 * `RegExp`, where `^(a+)+$` against 30 characters takes seconds; the CLI turns on V8's fallback to
 * its linear-time engine for a match that backtracks too much, but that engine refuses some
 * patterns, and those backtrack without end: `^(?=.{1,254}$)([a-z0-9]+\.?)+@corp\.com$` (a
 * lookahead) took 0.8 s on 28 characters, `^(a{1,20})+$` (a bound above 16) 13 s, with the
 * fallback on. A policy's pattern meets the engine's conditions or does not load, wherever it
 * loads. CEL's own regular expressions (RE2) have neither lookaround nor backreferences.
 *
 * The conditions are V8's (`ExperimentalRegExp::CanBeHandled`), read on the pattern as V8 parses
 * it without flags (cel-js gives none): no lookaround, no backreference, and no repetition bound
 * above {@link MAX_REPLICATION}, counting nested repetitions multiplied (`{n,m}` counts m, an
 * open `{n,}`, `+` or `*` counts n + 1). That is Node 20's V8; later ones count an open bound as
 * n, so this keeps the stricter count and a policy loads alike on every supported Node. A test
 * compares this with the V8 it runs on.
 */

/** V8's `kMaxReplicationFactor`: how often the linear engine may copy a repeated part. */
export const MAX_REPLICATION = 16;

/** Why a pattern cannot run in linear time, and where (0-based, in the pattern). */
export interface NonLinearPattern {
  readonly index: number;
  readonly message: string;
}

const QUANTIFIER = /\{(\d+)(,(\d*))?\}\??/y;

/**
 * What keeps a valid pattern (one `RegExp` accepts) from V8's linear-time engine, or undefined
 * when nothing does. `\1`–`\9` and `\k` are refused even where they read as plain characters:
 * no pattern needs them so.
 */
export function findNonLinearPattern(pattern: string): NonLinearPattern | undefined {
  // Per open group, the most copies any part of it needs (a path's repetitions multiplied).
  const groups: number[] = [1];
  // The copies the atom just read needs (1 for a character); undefined when nothing precedes.
  let atom: number | undefined;
  let index = 0;
  while (index < pattern.length) {
    const char = pattern[index];
    const start = index;
    let bounds: [min: number, max: number] | undefined;
    if (char === '\\') {
      const next = pattern[index + 1] ?? '';
      if (/[1-9k]/.test(next)) {
        return {
          index,
          message: 'it has a backreference (\\1, \\k<name>)',
        };
      }
      atom = 1;
      index += 2;
    } else if (char === '[') {
      index = classEnd(pattern, index);
      atom = 1;
    } else if (char === '(') {
      if (pattern[index + 1] === '?') {
        const kind = pattern.slice(index + 2, index + 4);
        if (/^(?:[=!]|<[=!])/.test(kind)) {
          return {
            index,
            message: 'it has lookaround ((?=, (?!, (?<=, (?<!)',
          };
        }
        if (kind[0] === '<') index = pattern.indexOf('>', index) + 1;
        else if (kind[0] === ':') index += 3;
        else return { index, message: `it has the group "${pattern.slice(index, index + 3)}"` };
      } else {
        index += 1;
      }
      groups.push(1);
      atom = undefined;
    } else if (char === ')') {
      atom = groups.pop() ?? 1;
      widen(groups, atom);
      index += 1;
    } else if (char === '|' || char === '^' || char === '$') {
      atom = undefined;
      index += 1;
    } else if (char === '*' || char === '+' || char === '?') {
      bounds = char === '?' ? [0, 1] : [char === '+' ? 1 : 0, Number.POSITIVE_INFINITY];
      index += pattern[index + 1] === '?' ? 2 : 1;
    } else if (char === '{') {
      QUANTIFIER.lastIndex = index;
      const match = QUANTIFIER.exec(pattern);
      if (match) {
        const min = Number(match[1]);
        bounds = [
          min,
          match[2] === undefined ? min : match[3] === '' ? Number.POSITIVE_INFINITY : Number(match[3]),
        ];
        index = QUANTIFIER.lastIndex;
      } else {
        atom = 1;
        index += 1;
      }
    } else {
      atom = 1;
      index += 1;
    }
    if (bounds === undefined) continue;
    const [min, max] = bounds;
    if (min > MAX_REPLICATION || (max !== Number.POSITIVE_INFINITY && max > MAX_REPLICATION)) {
      return {
        index: start,
        message: `it has a repetition bound above ${MAX_REPLICATION} (write + or * and check the length with size())`,
      };
    }
    const copies = (atom ?? 1) * (max === Number.POSITIVE_INFINITY ? min + 1 : max);
    if (copies > MAX_REPLICATION) {
      return {
        index: start,
        message: `its nested repetitions multiply past ${MAX_REPLICATION}`,
      };
    }
    widen(groups, copies);
    atom = undefined;
  }
  return undefined;
}

/** Records that the innermost open group holds a part needing `copies`. */
function widen(groups: number[], copies: number): void {
  const last = groups.length - 1;
  if (last >= 0 && copies > groups[last]!) groups[last] = copies;
}

/** The index after the `]` closing the character class opened at `start`. */
function classEnd(pattern: string, start: number): number {
  let index = start + 1;
  if (pattern[index] === '^') index += 1;
  while (index < pattern.length && pattern[index] !== ']') index += pattern[index] === '\\' ? 2 : 1;
  return index + 1;
}
