/**
 * Canonical state keys: `<area>.<name>[.<more>]`, trimmed and lower-cased, so that `User.Email `
 * and `user.email` name the same item.
 */
import { GatehouseError } from '../errors.js';

/** The longest canonical key, in characters. */
export const MAX_KEY_LENGTH = 128;

const SEGMENT = /^[a-z0-9_-]+$/;
const CANONICAL = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)+$/;
const ASCII_UPPER = /[A-Z]/g;
const NOT_SEGMENT_CHAR = /[^a-z0-9_-]/;
const QUOTE_LIMIT = 80;

/**
 * Returns the canonical form of a state key: surrounding whitespace trimmed, ASCII letters
 * lower-cased. The result has at least two dot-separated segments, each of `a-z`, `0-9`, `_`, `-`,
 * and at most {@link MAX_KEY_LENGTH} (128) characters.
 *
 * Only ASCII letters are folded: `String#toLowerCase` would turn the Kelvin sign `K` into `k`,
 * letting a look-alike key alias another one, so any non-ASCII character is rejected instead.
 *
 * @throws GatehouseError `invalid_request` naming the rule that failed and quoting the key,
 *   with `errors: [{ path: 'key', message }]`.
 * @example
 * canonicalKey('  User.Email ') // 'user.email'
 * canonicalKey('email')         // throws: at least two segments
 */
export function canonicalKey(raw: string): string {
  if (typeof raw !== 'string') fail(`Key must be a string, got ${raw === null ? 'null' : typeof raw}.`);
  const key = raw.trim().replace(ASCII_UPPER, (c) => c.toLowerCase());
  if (key.length === 0) fail('Key is empty: expected <area>.<name>, for example "user.email".');
  if (key.length > MAX_KEY_LENGTH) {
    fail(`Key ${quote(key)} is ${key.length} characters long; the maximum is ${MAX_KEY_LENGTH}.`);
  }
  const segments = key.split('.');
  if (segments.length < 2) {
    fail(`Key ${quote(key)} has one segment; expected at least two, as in <area>.<name> ("user.email").`);
  }
  for (const [index, segment] of segments.entries()) {
    if (segment.length === 0) {
      fail(
        `Key ${quote(key)} has an empty segment at position ${index + 1}; separate segments with single dots.`,
      );
    }
    if (!SEGMENT.test(segment)) {
      const bad = String.fromCodePoint(segment.codePointAt(segment.search(NOT_SEGMENT_CHAR)) ?? 0);
      fail(
        `Key ${quote(key)} contains ${describeChar(bad)} in segment ${quote(segment)}; ` +
          'segments may contain only a-z, 0-9, "_" and "-".',
      );
    }
  }
  return key;
}

/**
 * True when `key` is a canonical key as it stands (what {@link canonicalKey} returns unchanged):
 * any other string can never name a state item.
 * @example
 * isCanonicalKey('user.email') // true
 * isCanonicalKey('User.Email') // false
 */
export function isCanonicalKey(key: string): boolean {
  return key.length <= MAX_KEY_LENGTH && CANONICAL.test(key);
}

/**
 * Returns the category of a key: its first dot-separated segment (the "area"), trimmed and with
 * ASCII letters lower-cased. It does not validate the key (use {@link canonicalKey} for that), so it
 * never throws and also works on field names that are not state keys.
 * @example
 * keyCategory('user.email')   // 'user'
 * keyCategory(' Billing.Card') // 'billing'
 */
export function keyCategory(key: string): string {
  const trimmed = key.trim();
  const dot = trimmed.indexOf('.');
  return (dot === -1 ? trimmed : trimmed.slice(0, dot)).replace(ASCII_UPPER, (c) => c.toLowerCase());
}

/** Quotes a character, adding its code point when it is not printable ASCII (`K` vs `K`). */
function describeChar(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  if (code >= 0x20 && code < 0x7f) return JSON.stringify(char);
  return `${JSON.stringify(char)} (U+${code.toString(16).toUpperCase().padStart(4, '0')})`;
}

function quote(text: string): string {
  const shown = text.length > QUOTE_LIMIT ? `${text.slice(0, QUOTE_LIMIT)}…` : text;
  return JSON.stringify(shown);
}

function fail(message: string): never {
  throw new GatehouseError('invalid_request', message, { errors: [{ path: 'key', message }] });
}
