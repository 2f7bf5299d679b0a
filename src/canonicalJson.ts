/**
 * RFC 8785 canonical JSON, for everything Gatehouse hashes (history events, policy revisions,
 * approval digests).
 *
 * For JSON data (what Gatehouse hashes: parsed JSON and its own plain objects) RFC 8785 is
 * `JSON.stringify` with every object's keys sorted by UTF-16 code units: numbers and strings are
 * serialised exactly as ECMAScript does. safe-stable-stringify (pino's) does that in its
 * deterministic mode, twice as fast as the `canonicalize` reference package on an event; a
 * property test checks the two agree on arbitrary JSON values, so existing chains still verify.
 */
import { configure } from 'safe-stable-stringify';

const stringify = configure({
  deterministic: true,
  // A circular structure is a bug, never data: fail instead of hashing a placeholder.
  circularValue: Error,
  bigint: false,
});

/**
 * The canonical JSON text of `value`.
 * @throws {TypeError} on a circular structure
 * @example canonicalJson({ b: 1, a: [true, 'x'] }) // '{"a":[true,"x"],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return stringify(value) ?? '';
}
