/**
 * What the operations show and accept of a webhook before the webhook rules proper
 * (`src/webhooks/`) come in: the public view of a stored subscription and the default URL check.
 */
import { GatehouseError } from '../errors.js';
import type { Webhook } from '../schemas.js';
import type { StoredWebhook } from '../store.js';

/** A webhook as shown to callers: without its secrets. */
export function publicWebhook(w: StoredWebhook): Webhook {
  const { secrets: _secrets, ...rest } = w;
  return rest;
}

/** Accepts only absolute `https:` URLs without credentials (no DNS: the service adds that). */
export async function defaultWebhookUrlCheck(url: string): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GatehouseError('invalid_request', `url is not a valid absolute URL: '${url}'.`, {
      errors: [{ path: 'url', message: 'must be an absolute https URL' }],
    });
  }
  if (parsed.protocol !== 'https:') {
    throw new GatehouseError('invalid_request', 'url must use https.', {
      errors: [{ path: 'url', message: 'must use https' }],
    });
  }
  if (parsed.username || parsed.password) {
    throw new GatehouseError('invalid_request', 'url must not contain credentials.', {
      errors: [{ path: 'url', message: 'must not contain credentials' }],
    });
  }
}
