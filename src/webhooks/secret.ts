/**
 * Webhook signing secrets in the Standard Webhooks format: `whsec_` + base64 of random bytes.
 */
import { GatehouseError } from '../errors.js';

/** The prefix of every webhook signing secret. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** Random bytes in a generated secret (the Standard Webhooks spec asks for 24–64). */
export const WEBHOOK_SECRET_BYTES = 32;

/** Fewest key bytes {@link decodeWebhookSecret} accepts; shorter keys are too easy to guess. */
export const MIN_WEBHOOK_SECRET_BYTES = 16;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Creates a new signing secret: `whsec_` + base64 of 32 bytes from `randomBytes`.
 * @param randomBytes a cryptographically secure source, e.g. `crypto.randomBytes` (injected so
 *   tests are deterministic).
 * @throws GatehouseError `internal` if `randomBytes` returns fewer than 32 bytes.
 * @example
 * import { randomBytes } from 'node:crypto';
 * const secret = generateWebhookSecret((n) => randomBytes(n)); // 'whsec_…'
 */
export function generateWebhookSecret(randomBytes: (n: number) => Uint8Array): string {
  const bytes = randomBytes(WEBHOOK_SECRET_BYTES);
  if (bytes.length < WEBHOOK_SECRET_BYTES) {
    throw new GatehouseError(
      'internal',
      `The random source returned ${bytes.length} bytes; a webhook secret needs ${WEBHOOK_SECRET_BYTES}.`,
    );
  }
  return WEBHOOK_SECRET_PREFIX + Buffer.from(bytes.subarray(0, WEBHOOK_SECRET_BYTES)).toString('base64');
}

/**
 * Returns the HMAC key of a secret: the base64 after the optional `whsec_` prefix, decoded
 * (the same rule as the `standardwebhooks` package).
 * @throws GatehouseError `invalid_request` (path `secret`) if the rest is not base64 or decodes
 *   to fewer than 16 bytes.
 * @example
 * decodeWebhookSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').length // 24
 */
export function decodeWebhookSecret(secret: string): Buffer {
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX)
    ? secret.slice(WEBHOOK_SECRET_PREFIX.length)
    : secret;
  const key = BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
  if (key.length < MIN_WEBHOOK_SECRET_BYTES) {
    const message = `Webhook secret must be "${WEBHOOK_SECRET_PREFIX}" followed by base64 of at least ${MIN_WEBHOOK_SECRET_BYTES} bytes.`;
    throw new GatehouseError('invalid_request', message, { errors: [{ path: 'secret', message }] });
  }
  return key;
}

/**
 * True when a stored secret still signs at `nowIso`: the newest one (no expiry) or an older one
 * inside its rotation overlap.
 */
export function isSecretActive(secret: { expires_at: string | null }, nowIso: string): boolean {
  return secret.expires_at === null || secret.expires_at > nowIso;
}
