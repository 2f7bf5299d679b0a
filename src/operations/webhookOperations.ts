/**
 * Webhook subscriptions and their deliveries.
 */
import { GatehouseError } from '../errors.js';
import type { Gatehouse } from '../gatehouseTypes.js';
import { CreateWebhookInputSchema, isPlausibleId, RotateSecretInputSchema } from '../schemas.js';
import type { StoredWebhook } from '../store.js';
import { parseInput } from '../validation.js';
import { generateWebhookSecret, isSecretActive } from '../webhooks/index.js';
import { assertPlausibleId, notFound } from './notFound.js';
import type { OperationContext } from './operationContext.js';
import { publicWebhook } from './webhookViews.js';

/** Secrets that sign a webhook's deliveries at once, at most: the new one and the newest earlier ones still in their overlap. */
const MAX_SIGNING_SECRETS = 4;

/**
 * Most webhooks one tenant may have: each event is queued once per matching webhook in the
 * transaction that records it, so this bounds what one evaluation writes.
 */
export const MAX_WEBHOOKS_PER_TENANT = 32;

/** Webhook subscriptions and their deliveries. */
export function webhookOperations(
  core: OperationContext,
): Pick<
  Gatehouse,
  | 'createWebhook'
  | 'listWebhooks'
  | 'getWebhook'
  | 'deleteWebhook'
  | 'rotateWebhookSecret'
  | 'enableWebhook'
  | 'listDeliveries'
  | 'redeliver'
> {
  const { store, ids, clock, randomBytes, tenantOf, now, checkWebhookUrl, requireWebhook } = core;
  return {
    async createWebhook(rawInput, ctx) {
      const input = parseInput(CreateWebhookInputSchema, rawInput, 'webhook');
      const warnings = (await checkWebhookUrl(input.url))?.warnings ?? [];
      const at = now();
      const secret = generateWebhookSecret(randomBytes);
      const webhook: StoredWebhook = {
        id: ids('whk'),
        url: input.url,
        events: [...new Set(input.events)],
        filter: input.filter ?? null,
        description: input.description ?? null,
        status: 'active',
        secrets: [{ secret, created_at: at, expires_at: null }],
        created_at: at,
        updated_at: at,
      };
      const tenantId = tenantOf(ctx);
      await core.transaction(async (tx) => {
        // The tenant's chain lock: creations at once, on any instance, count one after the other.
        await tx.lockChainHead(tenantId);
        const count = (await tx.listWebhooks(tenantId)).length;
        if (count >= MAX_WEBHOOKS_PER_TENANT) {
          throw new GatehouseError(
            'invalid_request',
            `A tenant may have at most ${MAX_WEBHOOKS_PER_TENANT} webhooks, and this one has ${count}: ` +
              'delete one, or subscribe an existing webhook to more events.',
            { errors: [{ path: 'url', message: `at most ${MAX_WEBHOOKS_PER_TENANT} webhooks per tenant` }] },
          );
        }
        await tx.insertWebhook(tenantId, webhook);
      });
      return {
        ...publicWebhook(webhook),
        secret,
        ...(warnings.length > 0 ? { warnings: [...warnings] } : {}),
      };
    },

    async listWebhooks(ctx) {
      return (await store.listWebhooks(tenantOf(ctx))).map(publicWebhook);
    },

    async getWebhook(webhookId, ctx) {
      return publicWebhook(await requireWebhook(tenantOf(ctx), webhookId));
    },

    async deleteWebhook(webhookId, ctx) {
      assertPlausibleId(webhookId, 'Webhook');
      const deleted = await core.transaction((tx) => tx.deleteWebhook(tenantOf(ctx), webhookId));
      if (!deleted) throw notFound(`Webhook '${webhookId}'`);
    },

    async rotateWebhookSecret(webhookId, rawInput = {}, ctx) {
      const input = parseInput(RotateSecretInputSchema, rawInput, 'rotation');
      assertPlausibleId(webhookId, 'Webhook');
      const tenantId = tenantOf(ctx);
      const at = clock();
      const secret = generateWebhookSecret(randomBytes);
      const nowIso = at.toISOString();
      const updated = await core.transaction(async (tx) => {
        // The write first: it takes the webhook's row lock (PostgreSQL reads without one), so a
        // rotation at the same time waits and then reads the secrets this one adds. Read first,
        // the later of two kept only its own new secret: the other caller's never signed.
        await tx.updateWebhook(tenantId, webhookId, { updated_at: nowIso });
        const webhook = await tx.getWebhook(tenantId, webhookId);
        if (!webhook) throw notFound(`Webhook '${webhookId}'`);
        const until = new Date(at.getTime() + input.overlap_seconds * 1000).toISOString();
        // The secrets still signing keep doing so for the overlap, never longer than they would have.
        const overlapping =
          input.overlap_seconds === 0
            ? []
            : webhook.secrets
                .filter((s) => isSecretActive(s, nowIso))
                .map((s) => ({
                  ...s,
                  expires_at: s.expires_at === null || s.expires_at > until ? until : s.expires_at,
                }));
        // At most the newest few keep signing: each signs every delivery, and rotations in a row
        // within one overlap would otherwise grow the signature header past what receivers take.
        const secrets = [
          ...overlapping.slice(-(MAX_SIGNING_SECRETS - 1)),
          { secret, created_at: nowIso, expires_at: null },
        ];
        await tx.updateWebhook(tenantId, webhookId, { secrets, updated_at: nowIso });
        return { ...webhook, secrets, updated_at: nowIso };
      });
      return { ...publicWebhook(updated), secret };
    },

    async enableWebhook(webhookId, ctx) {
      assertPlausibleId(webhookId, 'Webhook');
      const tenantId = tenantOf(ctx);
      return core.transaction(async (tx) => {
        const webhook = await tx.getWebhook(tenantId, webhookId);
        if (!webhook) throw notFound(`Webhook '${webhookId}'`);
        const at = now();
        await tx.updateWebhook(tenantId, webhookId, { status: 'active', updated_at: at });
        return publicWebhook({ ...webhook, status: 'active', updated_at: at });
      });
    },

    async listDeliveries(webhookId, query = {}, ctx) {
      const tenantId = tenantOf(ctx);
      await requireWebhook(tenantId, webhookId);
      const limit = query.limit ?? 50;
      if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
        throw new GatehouseError('invalid_request', 'limit must be an integer from 1 to 500.', {
          errors: [{ path: 'limit', message: 'must be an integer from 1 to 500' }],
        });
      }
      if (query.before_id !== undefined && !isPlausibleId(query.before_id)) {
        throw new GatehouseError('invalid_request', 'before_id must be a delivery ID.', {
          errors: [{ path: 'before_id', message: 'must be a delivery ID (printable ASCII)' }],
        });
      }
      return store.listDeliveries(tenantId, webhookId, {
        status: query.status,
        limit,
        before_id: query.before_id,
      });
    },

    async redeliver(webhookId, deliveryId, ctx) {
      if (!isPlausibleId(webhookId)) throw notFound(`Delivery '${deliveryId}'`);
      assertPlausibleId(deliveryId, 'Delivery');
      const tenantId = tenantOf(ctx);
      const delivery = await core.transaction(async (tx) => {
        // A deleted webhook's delivery could never be sent. A disabled one's is queued, and goes
        // out once the webhook is enabled again.
        if (!(await tx.getWebhook(tenantId, webhookId))) throw notFound(`Webhook '${webhookId}'`);
        const found = await tx.getDelivery(tenantId, deliveryId);
        if (!found || found.webhook_id !== webhookId) throw notFound(`Delivery '${deliveryId}'`);
        const at = now();
        await tx.resetDelivery(tenantId, deliveryId, at, at);
        return (await tx.getDelivery(tenantId, deliveryId))!;
      });
      core.onDeliveriesQueued?.();
      return delivery;
    },
  };
}
