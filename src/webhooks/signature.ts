/**
 * Standard Webhooks signatures: `v1,` + base64 HMAC-SHA256 of `${msgId}.${timestamp}.${body}`,
 * computed by the reference library (`standardwebhooks`), so sender and receivers agree on
 * every byte by construction.
 */
import { Webhook } from 'standardwebhooks';
import { GatehouseError } from '../errors.js';
import { decodeWebhookSecret } from './secret.js';

/** The version prefix of a symmetric (HMAC-SHA256) signature. */
export const SIGNATURE_VERSION = 'v1';

/**
 * Signs one delivery attempt. `body` must be the exact text that is sent (bytes must be UTF-8:
 * the library signs text, as the spec's JSON payloads are).
 * @param secret `whsec_…` (the prefix is optional)
 * @param msgId the `webhook-id` header: the event ID, stable across retries
 * @param timestampSeconds the `webhook-timestamp` header: Unix seconds of this attempt
 * @returns `v1,<base64 signature>`, byte-identical to `standardwebhooks`' `Webhook#sign`
 * @throws GatehouseError `invalid_request` for a malformed secret, an empty `msgId` or one
 *   containing `.`, a timestamp that is not a non-negative integer, or bytes that are not UTF-8.
 * @example
 * signWebhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'evt_1', 1700000000, '{"id":"evt_1"}')
 * // 'v1,…'
 */
export function signWebhook(
  secret: string,
  msgId: string,
  timestampSeconds: number,
  body: string | Uint8Array,
): string {
  const key = decodeWebhookSecret(secret);
  if (msgId.length === 0 || msgId.includes('.')) {
    invalid('msgId', `Webhook message id ${JSON.stringify(msgId)} must be non-empty and contain no ".".`);
  }
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    invalid(
      'timestampSeconds',
      `Webhook timestamp ${timestampSeconds} must be a non-negative integer (seconds).`,
    );
  }
  // The key is decoded (and its length checked) by decodeWebhookSecret, the one rule for secrets;
  // the library then gets the raw key bytes.
  return new Webhook(key, { format: 'raw' }).sign(
    msgId,
    new Date(timestampSeconds * 1000),
    webhookText(body),
  );
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A webhook body as text. Bytes must be UTF-8: `standardwebhooks` signs text (it reads a Buffer
 * with `toString()`, which would replace invalid bytes, and refuses other byte arrays).
 * @throws GatehouseError `invalid_request` (path `body`) for bytes that are not UTF-8.
 */
export function webhookText(body: string | Uint8Array): string {
  if (typeof body === 'string') return body;
  try {
    return UTF8.decode(body);
  } catch (cause) {
    const message = 'Webhook body must be UTF-8 text.';
    throw new GatehouseError('invalid_request', message, { errors: [{ path: 'body', message }], cause });
  }
}

/**
 * The `webhook-signature` header value: one signature per active secret, space-separated, so a
 * receiver keeps verifying while a secret is rotated.
 * @throws GatehouseError `invalid_request` if `secrets` is empty, or as {@link signWebhook}.
 * @example
 * webhookSignatureHeader([newSecret, oldSecret], 'evt_1', ts, body) // 'v1,… v1,…'
 */
export function webhookSignatureHeader(
  secrets: readonly string[],
  msgId: string,
  timestampSeconds: number,
  body: string | Uint8Array,
): string {
  if (secrets.length === 0) invalid('secrets', 'At least one webhook secret is needed to sign a delivery.');
  return secrets.map((secret) => signWebhook(secret, msgId, timestampSeconds, body)).join(' ');
}

function invalid(path: string, message: string): never {
  throw new GatehouseError('invalid_request', message, { errors: [{ path, message }] });
}
