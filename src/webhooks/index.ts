/**
 * Webhook rules of the core, without I/O: secrets, signatures, payloads, subscription matching
 * the retry schedule and how a sender's slots are shared between tenants. The dispatcher (`adapters/webhooks`) does the sending.
 */
export type { ClaimShare, DueCandidate } from './fairShare.js';
export { claimPageSize, fairShare, TenantWalk, WALK_TENANTS, webhookShareKey } from './fairShare.js';
export type { WebhookEvent, WebhookSourceEvent } from './payload.js';
export { buildWebhookPayload, WebhookEventSchema } from './payload.js';
export type { DeliveryOutcome, RetryDelayOptions } from './retrySchedule.js';
export {
  classifyDeliveryResponse,
  MAX_RETRY_AFTER_SECONDS,
  nextRetryDelay,
  parseRetryAfter,
  RETRY_DELAYS_MS,
  RETRY_JITTER,
} from './retrySchedule.js';
export {
  decodeWebhookSecret,
  generateWebhookSecret,
  isSecretActive,
  MIN_WEBHOOK_SECRET_BYTES,
  WEBHOOK_SECRET_BYTES,
  WEBHOOK_SECRET_PREFIX,
} from './secret.js';
export { SIGNATURE_VERSION, signWebhook, webhookSignatureHeader, webhookText } from './signature.js';
export type { MatchableEvent, SubscriptionMatch, WebhookEventType } from './subscription.js';
export { matchesSubscription, WEBHOOK_EVENT_TYPES } from './subscription.js';
