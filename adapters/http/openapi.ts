/**
 * The OpenAPI 3.1 document, generated from the same zod schemas that validate requests.
 */
import { z } from 'zod';
import {
  ConflictSchema,
  CreateWebhookInputSchema,
  DecisionSchema,
  DeliverySchema,
  EvaluateInputSchema,
  HistoryEventSchema,
  HistoryPageSchema,
  OutcomeInputSchema,
  RecordStateInputSchema,
  RecordStateResultSchema,
  ResolveConflictInputSchema,
  RotateSecretInputSchema,
  StateItemSchema,
  VerifyResultSchema,
  WebhookSchema,
  WebhookWithSecretSchema,
} from '../../src/index.js';

const schemas = {
  RecordStateInput: [RecordStateInputSchema, 'input'],
  RecordStateResult: [RecordStateResultSchema, 'output'],
  StateItem: [StateItemSchema, 'output'],
  Conflict: [ConflictSchema, 'output'],
  ResolveConflictInput: [ResolveConflictInputSchema, 'input'],
  EvaluateInput: [EvaluateInputSchema, 'input'],
  Decision: [DecisionSchema, 'output'],
  OutcomeInput: [OutcomeInputSchema, 'input'],
  HistoryEvent: [HistoryEventSchema, 'output'],
  HistoryPage: [HistoryPageSchema, 'output'],
  VerifyResult: [VerifyResultSchema, 'output'],
  CreateWebhookInput: [CreateWebhookInputSchema, 'input'],
  Webhook: [WebhookSchema, 'output'],
  WebhookWithSecret: [WebhookWithSecretSchema, 'output'],
  RotateSecretInput: [RotateSecretInputSchema, 'input'],
  Delivery: [DeliverySchema, 'output'],
} as const;

const ref = (name: keyof typeof schemas) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: keyof typeof schemas) => ({ content: { 'application/json': { schema: ref(name) } } });
const problem = { description: 'Problem (RFC 9457)', content: { 'application/problem+json': {} } };
const errors = { '401': problem, '403': problem, '422': problem, '429': problem };
const sessionParam = { name: 'session_id', in: 'query', required: true, schema: { type: 'string' } };
const pathParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });
const list = (key: string, name: keyof typeof schemas) => ({
  content: {
    'application/json': {
      schema: { type: 'object', properties: { [key]: { type: 'array', items: ref(name) } } },
    },
  },
});

let cached: unknown;

/** The OpenAPI document (built once). */
export function buildOpenApiDocument(): unknown {
  if (cached) return cached;
  const components: Record<string, unknown> = {};
  for (const [name, [schema, io]] of Object.entries(schemas)) {
    components[name] = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  }
  cached = {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse',
      version: '1',
      description: 'Governed state and an action gate for AI agents.',
    },
    components: {
      schemas: components,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/state/items': {
        post: {
          summary: 'Record a state item',
          requestBody: json('RecordStateInput'),
          responses: {
            '201': json('RecordStateResult'),
            '200': json('RecordStateResult'),
            '409': problem,
            ...errors,
          },
        },
        get: {
          summary: 'List current items of a session',
          parameters: [sessionParam],
          responses: { '200': list('items', 'StateItem'), ...errors },
        },
      },
      '/v1/state/items/{key}': {
        get: {
          summary: 'Read the current item',
          parameters: [pathParam('key'), sessionParam],
          responses: { '200': json('StateItem'), '404': problem, ...errors },
        },
      },
      '/v1/state/items/{key}/versions': {
        get: {
          summary: 'List all versions',
          parameters: [pathParam('key'), sessionParam],
          responses: { '200': list('versions', 'StateItem'), '404': problem, ...errors },
        },
      },
      '/v1/state/items/{key}/versions/{version}': {
        get: {
          summary: 'Read one version',
          parameters: [pathParam('key'), pathParam('version'), sessionParam],
          responses: { '200': json('StateItem'), '404': problem, ...errors },
        },
      },
      '/v1/state/conflicts': {
        get: { summary: 'List conflicts', responses: { '200': list('conflicts', 'Conflict'), ...errors } },
      },
      '/v1/state/conflicts/{id}': {
        get: {
          summary: 'Read a conflict',
          parameters: [pathParam('id')],
          responses: { '200': json('Conflict'), '404': problem, ...errors },
        },
      },
      '/v1/state/conflicts/{id}/resolve': {
        post: {
          summary: 'Resolve a conflict',
          parameters: [pathParam('id')],
          requestBody: json('ResolveConflictInput'),
          responses: { '200': json('Conflict'), '404': problem, '409': problem, ...errors },
        },
      },
      '/v1/gates/evaluate': {
        post: {
          summary: 'Evaluate an action (a Block is a 200 with the decision)',
          requestBody: json('EvaluateInput'),
          responses: { '200': json('Decision'), ...errors },
        },
      },
      '/v1/decisions/{id}': {
        get: {
          summary: 'Read a decision',
          parameters: [pathParam('id')],
          responses: { '200': json('Decision'), '404': problem, ...errors },
        },
      },
      '/v1/decisions/{id}/outcome': {
        post: {
          summary: 'Record the outcome of a decided action',
          parameters: [pathParam('id')],
          requestBody: json('OutcomeInput'),
          responses: { '201': json('HistoryEvent'), '404': problem, '409': problem, ...errors },
        },
      },
      '/v1/history/events': {
        get: {
          summary: 'Read history events',
          parameters: ['session_id', 'type', 'decision_id', 'limit', 'cursor', 'order'].map((name) => ({
            name,
            in: 'query',
            required: false,
            schema: { type: name === 'limit' ? 'integer' : 'string' },
          })),
          responses: { '200': json('HistoryPage'), ...errors },
        },
      },
      '/v1/history/verify': {
        get: { summary: 'Recompute the hash chain', responses: { '200': json('VerifyResult'), ...errors } },
      },
      '/v1/webhooks': {
        post: {
          summary: 'Register a webhook (the secret is shown once)',
          requestBody: json('CreateWebhookInput'),
          responses: { '201': json('WebhookWithSecret'), ...errors },
        },
        get: { summary: 'List webhooks', responses: { '200': list('webhooks', 'Webhook'), ...errors } },
      },
      '/v1/webhooks/{id}': {
        get: {
          summary: 'Read a webhook',
          parameters: [pathParam('id')],
          responses: { '200': json('Webhook'), '404': problem, ...errors },
        },
        delete: {
          summary: 'Delete a webhook',
          parameters: [pathParam('id')],
          responses: { '204': { description: 'Deleted' }, '404': problem, ...errors },
        },
      },
      '/v1/webhooks/{id}/rotate-secret': {
        post: {
          summary: 'Rotate the signing secret',
          parameters: [pathParam('id')],
          requestBody: json('RotateSecretInput'),
          responses: { '200': json('WebhookWithSecret'), '404': problem, ...errors },
        },
      },
      '/v1/webhooks/{id}/enable': {
        post: {
          summary: 'Re-enable a disabled webhook',
          parameters: [pathParam('id')],
          responses: { '200': json('Webhook'), '404': problem, ...errors },
        },
      },
      '/v1/webhooks/{id}/deliveries': {
        get: {
          summary: 'List deliveries',
          parameters: [pathParam('id')],
          responses: { '200': list('deliveries', 'Delivery'), '404': problem, ...errors },
        },
      },
      '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver': {
        post: {
          summary: 'Deliver again',
          parameters: [pathParam('id'), pathParam('delivery_id')],
          responses: { '202': json('Delivery'), '404': problem, ...errors },
        },
      },
    },
  };
  return cached;
}
