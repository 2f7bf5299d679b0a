/**
 * Receiver-side verification of a Gatehouse (Standard Webhooks) delivery. With `createDeduper`
 * (deduper.ts), "check the sender, dedupe by event ID, answer 2xx fast" is two calls.
 */
import { timingSafeEqual } from 'node:crypto';
import type { WebhookEvent } from '../../src/index.js';
import {
  decodeWebhookSecret,
  GatehouseError,
  signWebhook,
  WebhookEventSchema,
  webhookText,
} from '../../src/index.js';

export type { WebhookEvent } from '../../src/index.js';

/** Why {@link verifyWebhook} rejected a delivery. */
export type WebhookVerificationReason = 'missing_headers' | 'timestamp' | 'signature' | 'payload';

/**
 * A delivery that must not be processed: headers missing, timestamp outside the tolerance, no
 * signature matching any secret, or a body that is not a Gatehouse event. Answer it with 400
 * (or 401); the sender does not need to know which.
 */
export class WebhookVerificationError extends Error {
  /** What failed. */
  readonly reason: WebhookVerificationReason;

  constructor(reason: WebhookVerificationReason, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

/** Options for {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** Largest accepted distance between `webhook-timestamp` and now, in seconds. @default 300 */
  toleranceSeconds?: number;
  /** The clock. @default () => new Date() */
  now?: () => Date;
}

/** Request headers as the Fetch API or Node's `IncomingMessage#headers` give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const TIMESTAMP = /^\d{1,15}$/;

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
}

/**
 * Verifies a webhook delivery and returns its event. Checks, in order: the `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` headers are present; the timestamp is within
 * `toleranceSeconds` of now (replays of old deliveries fail); the body is UTF-8 text; some `v1,`
 * signature in the header
 * matches some secret (constant-time compare; pass several secrets while rotating); the body is a
 * Gatehouse event `{id, type, occurred_at, session_id, data}`.
 * Verify the raw body exactly as received: re-serialised JSON does not verify.
 * Then dedupe on `event.id` (see {@link createDeduper}).
 * @param secret the endpoint's `whsec_…` secret, or several during rotation
 * @throws WebhookVerificationError with `reason` `missing_headers`, `timestamp`, `signature` or
 *   `payload`.
 * @throws GatehouseError `invalid_request` if a secret is malformed (a configuration error).
 * @example
 * const event = verifyWebhook(process.env.GATEHOUSE_WEBHOOK_SECRET!, req.headers, rawBody);
 * if (await deduper.claim(event.id)) queue.push(event);
 */
export function verifyWebhook(
  secret: string | readonly string[],
  headers: WebhookHeaders,
  rawBody: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): WebhookEvent {
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (secrets.length === 0) {
    const message = 'verifyWebhook needs at least one secret.';
    throw new GatehouseError('invalid_request', message, { errors: [{ path: 'secret', message }] });
  }
  // Decode first so a misconfigured secret fails loudly instead of looking like a bad signature.
  for (const s of secrets) decodeWebhookSecret(s);

  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError(
      'missing_headers',
      'Missing webhook-id, webhook-timestamp or webhook-signature header.',
    );
  }

  const ts = timestamp.trim();
  if (!TIMESTAMP.test(ts)) {
    throw new WebhookVerificationError('timestamp', 'webhook-timestamp is not an integer number of seconds.');
  }
  const tolerance = options.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((options.now?.() ?? new Date()).getTime() / 1000);
  if (Math.abs(nowSeconds - Number(ts)) > tolerance) {
    throw new WebhookVerificationError(
      'timestamp',
      `webhook-timestamp is more than ${tolerance} s from now.`,
    );
  }

  let text: string;
  try {
    text = webhookText(rawBody);
  } catch (cause) {
    throw new WebhookVerificationError('payload', 'Webhook body is not valid UTF-8 JSON.', { cause });
  }
  if (id.includes('.')) {
    throw new WebhookVerificationError('signature', 'No webhook signature matches.');
  }
  // Signatures come from standardwebhooks (via signWebhook); its Webhook#verify is not used because
  // (1.1.1) it reads the clock with Date.now() and a fixed 300 s tolerance (no `now`, no
  // `toleranceSeconds`), takes only a Record<string, string> (not Headers, not string[] values),
  // splits the signature header on single spaces (Node joins repeated headers with ", "), accepts
  // a timestamp such as "12abc" (parseInt), returns undefined for an empty body and tells its
  // failures apart only by message, where callers need `reason`.
  const expected = secrets.map((s) => Buffer.from(signWebhook(s, id, Number(ts), text).slice(3), 'base64'));
  let matched = false;
  // Node joins repeated headers with ", ", so a trailing comma is a separator, not signature data.
  for (const entry of signatures.split(/\s+/)) {
    const [version, encoded] = entry.replace(/,+$/, '').split(',', 2);
    if (version !== 'v1' || !encoded) continue;
    const given = Buffer.from(encoded, 'base64');
    for (const candidate of expected) {
      if (given.length === candidate.length && timingSafeEqual(given, candidate)) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError('signature', 'No webhook signature matches.');

  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new WebhookVerificationError('payload', 'Webhook body is not valid UTF-8 JSON.', { cause });
  }
  const parsed = WebhookEventSchema.safeParse(json);
  if (!parsed.success) {
    throw new WebhookVerificationError('payload', 'Webhook body is not a Gatehouse event.', {
      cause: parsed.error,
    });
  }
  return parsed.data;
}
