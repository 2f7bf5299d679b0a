/**
 * Masks secrets in what goes into history and webhooks. A value is masked when the detectors
 * classify it (with the name it stands under) as secret, or when it equals a value already known
 * to be secret in the session.
 */
import { classify, MASKED_SECRET, maskValue } from './classify.js';

const MAX_DEPTH = 32;

/**
 * Returns a copy of `value` with every secret string leaf replaced by the masked marker.
 * @param name the field name the value stands under, used by the key-name detectors
 * @param knownSecrets exact values to mask wherever they appear, including inside longer strings
 */
export function maskSecrets(
  value: unknown,
  name: string,
  knownSecrets: ReadonlySet<string> = new Set(),
): unknown {
  return walk(value, name, knownSecrets, 0);
}

function walk(value: unknown, name: string, known: ReadonlySet<string>, depth: number): unknown {
  if (typeof value === 'string') return maskString(value, name, known);
  if (value === null || typeof value !== 'object') return value;
  // Fail closed: what is too deep to inspect is not copied out unmasked. (Inputs are limited to
  // LIMITS.objectDepth, so only a caller passing its own deeper object ever gets here.)
  if (depth > MAX_DEPTH) return MASKED_SECRET;
  if (Array.isArray(value)) return value.map((v) => walk(v, name, known, depth + 1));
  // fromEntries defines own properties: a `__proto__` key from JSON.parse stays a key instead of
  // becoming the copy's prototype (and vanishing from history).
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, walk(v, `${name}.${k}`, known, depth + 1)]),
  );
}

/**
 * Remembered verdicts for short strings under a name: decisions repeat the same rule names,
 * verdicts and messages, and running every detector on each was a sixth of an evaluation.
 * Bounded: cleared when full.
 */
const secretVerdicts = new Map<string, boolean>();
const CACHE_ENTRIES = 4096;
const CACHE_MAX_LENGTH = 256;

function isSecret(name: string, value: string): boolean {
  if (value.length > CACHE_MAX_LENGTH) return classify(name, value).sensitivity === 'secret';
  const key = `${name}\u0000${value}`;
  let secret = secretVerdicts.get(key);
  if (secret === undefined) {
    secret = classify(name, value).sensitivity === 'secret';
    if (secretVerdicts.size >= CACHE_ENTRIES) secretVerdicts.clear();
    secretVerdicts.set(key, secret);
  }
  return secret;
}

function maskString(value: string, name: string, known: ReadonlySet<string>): string {
  if (isSecret(name, value)) return maskValue(value, 'secret');
  let out = value;
  for (const secret of known) {
    if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join(maskValue(secret, 'secret'));
  }
  return out;
}
