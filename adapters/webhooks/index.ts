/**
 * `gatehouse/webhooks`: the sender side (SSRF-guarded delivery) and the receiver side
 * (`verifyWebhook`, `createDeduper`).
 */

export { isBlockedAddress } from './blockedAddresses.js';
export { createDeduper, type Deduper, type DeduperOptions } from './deduper.js';
export type { Resolver, WebhookUrlPolicy } from './destinationPolicy.js';
export {
  createWebhookDispatcher,
  type WebhookDispatcher,
  type WebhookDispatcherOptions,
} from './dispatcher.js';
export {
  createGuardedConnector,
  createWebhookAgent,
  type GuardedConnectorOptions,
  SSRF_BLOCKED_CODE,
  SsrfBlockedError,
  type WebhookAgentOptions,
} from './guardedConnector.js';
export {
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from './receiver.js';
export {
  type AssertWebhookUrlOptions,
  assertWebhookUrlAllowed,
  type WebhookUrlCheckResult,
} from './webhookUrlCheck.js';
