/**
 * `gatehouse/webhooks`: the sender side (SSRF-guarded delivery) and the receiver side
 * (`verifyWebhook`, `createDeduper`).
 */

export { createDeduper, type Deduper, type DeduperOptions } from './deduper.js';
export {
  createWebhookDispatcher,
  type WebhookDispatcher,
  type WebhookDispatcherOptions,
} from './dispatcher.js';
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
  createGuardedConnector,
  createWebhookAgent,
  type GuardedConnectorOptions,
  isBlockedAddress,
  type Resolver,
  SSRF_BLOCKED_CODE,
  SsrfBlockedError,
  type WebhookAgentOptions,
  type WebhookUrlPolicy,
} from './ssrfGuard.js';
