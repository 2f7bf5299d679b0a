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

/**
 * Adds to `into` every string in `value` that {@link maskSecrets} masks for what it is (by its
 * name or its shape), so a copy of it elsewhere — quoted by a rule's message, echoed by an error —
 * is masked too.
 */
export function collectSecrets(value: unknown, name: string, into: Set<string>, depth = 0): void {
  if (typeof value === 'string') {
    if (isSecret(name, value)) into.add(value);
  } else if (Array.isArray(value)) {
    if (depth <= MAX_DEPTH) for (const v of value) collectSecrets(v, name, into, depth + 1);
  } else if (value !== null && typeof value === 'object' && depth <= MAX_DEPTH) {
    for (const [k, v] of Object.entries(value)) collectSecrets(v, `${name}.${k}`, into, depth + 1);
  }
}

/**
 * Copy on write: a subtree with nothing to mask comes back as the same object, so the common case
 * (no secret anywhere) allocates nothing. Callers treat the result as read-only either way.
 */
function walk(value: unknown, name: string, known: ReadonlySet<string>, depth: number): unknown {
  if (typeof value === 'string') return maskString(value, name, known);
  if (value === null || typeof value !== 'object') return value;
  // Fail closed: what is too deep to inspect is not copied out unmasked. (Inputs are limited to
  // LIMITS.objectDepth, so only a caller passing its own deeper object ever gets here.)
  if (depth > MAX_DEPTH) return MASKED_SECRET;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i += 1) {
      const masked = walk(value[i], name, known, depth + 1);
      if (masked !== value[i]) copy ??= value.slice();
      if (copy) copy[i] = masked;
    }
    return copy ?? value;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let masked: unknown[] | undefined;
  for (let i = 0; i < keys.length; i += 1) {
    const v = record[keys[i]!];
    const m = walk(v, `${name}.${keys[i]}`, known, depth + 1);
    if (m !== v) masked ??= keys.map((k) => record[k]);
    if (masked) masked[i] = m;
  }
  // fromEntries defines own properties: a `__proto__` key from JSON.parse stays a key instead of
  // becoming the copy's prototype (and vanishing from history).
  return masked ? Object.fromEntries(keys.map((k, i) => [k, masked[i]])) : value;
}

/**
 * Remembered verdicts for short strings under a name: decisions repeat the same rule names,
 * verdicts and messages, and running every detector on each was a sixth of an evaluation.
 * Bounded: cleared when full.
 */
const secretVerdicts = new Map<string, boolean>();
const CACHE_ENTRIES = 4096;
const CACHE_MAX_LENGTH = 256;

/** True when `value`, standing under `name`, classifies as secret (cached for short strings). */
export function isSecret(name: string, value: string): boolean {
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

/** Decision fields Gatehouse writes itself (IDs, times, hashes, enums, version numbers): never a secret. */
const OWN_DECISION_FIELDS = new Set([
  'decision_id',
  'evaluated_at',
  'verdict',
  'allowed',
  'policy',
  'state_versions',
]);

/**
 * {@link maskSecrets} for a decision, skipping the fields Gatehouse generated: its ID and time are
 * new strings on every call, so the detectors ran on each (nothing to remember) for nothing.
 * What a caller or a policy can put in (reasons and their messages, session, action, approval)
 * is masked as before, under the same names.
 */
export function maskDecision<D extends { decision_id: string }>(
  decision: D,
  knownSecrets: ReadonlySet<string>,
): D {
  let copy: Record<string, unknown> | undefined;
  // Keys, not entries: no pair array per field on every decision.
  for (const field of Object.keys(decision)) {
    if (OWN_DECISION_FIELDS.has(field)) continue;
    const value = (decision as Record<string, unknown>)[field];
    const masked = walk(value, `decision.${field}`, knownSecrets, 1);
    if (masked !== value) {
      copy ??= { ...decision };
      copy[field] = masked;
    }
  }
  return (copy ?? decision) as D;
}
