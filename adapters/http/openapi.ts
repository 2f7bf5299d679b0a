/**
 * The OpenAPI 3.1 document, derived from the route table (adapters/http/routes.ts) and the
 * service routes: paths, parameters, bodies, every response with its schema, problem answers.
 * zod 4's `z.toJSONSchema` turns the contract's schemas into components.
 */
import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../../src/index.js';
import { HISTORY_STREAM_DOC } from './historyStream.js';
import { PROBLEM_DESCRIPTIONS, ProblemSchema, STATUS_BY_CODE } from './problem.js';
import type { ApiRoute } from './route.js';
import { API_ROUTES } from './routes.js';
import { SERVICE_ROUTES, type ServiceDoc } from './serviceRoutes.js';

type Json = Record<string, unknown>;

const TAGS = [
  { name: 'State', description: 'Governed state: versioned, conflict-checked items.' },
  { name: 'Gate', description: 'Allow / Warn / Block decisions and their outcomes.' },
  { name: 'History', description: 'The append-only, hash-chained history.' },
  { name: 'Webhooks', description: 'Signed, retried deliveries of history events.' },
  {
    name: 'Approvals',
    description: 'Held actions that a person approves or denies, each bound to exactly one action and state.',
  },
  { name: 'Keys', description: 'The calling API key.' },
  { name: 'Policy', description: 'The policy in force, its revisions, and replays of recorded decisions.' },
  { name: 'Service', description: 'Probes, metrics, this document and the problem pages (no key).' },
];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Builds a components section from named zod schemas (one JSON Schema each, `$ref`s between). */
function componentSchemas(named: Map<z.ZodType, string>, io: 'input' | 'output'): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [schema, id] of named) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    io,
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, Json> };
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _s, $id: _i, ...schema }]) => [id, schema]),
  );
}

/** The OpenAPI parameters of an object schema (its properties, each with its own schema). */
function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): Json[] {
  if (!schema) return [];
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  const properties = (json['properties'] ?? {}) as Record<string, Json>;
  const required = new Set((json['required'] ?? []) as string[]);
  return Object.entries(properties).map(([name, { description, ...property }]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    ...(description === undefined ? {} : { description }),
    schema: property,
  }));
}

/** Problem answers, one per status; codes that share a status share a description. */
function problems(codes: Iterable<ErrorCode>): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = STATUS_BY_CODE[code];
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  }
  const out: Record<string, Json> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: list.map((code) => `\`${code}\`: ${PROBLEM_DESCRIPTIONS[code]}`).join(' '),
      content: { 'application/problem+json': { schema: ref('Problem') } },
    };
  }
  return out;
}

/** The error codes any call of `route` can meet. */
function errorCodes(route: ApiRoute): ErrorCode[] {
  const codes: ErrorCode[] = ['unauthorized', 'rate_limited'];
  if (route.scope !== null) codes.push('forbidden');
  if (route.params || route.query || route.body) codes.push('invalid_request');
  if (route.body) codes.push('malformed_request', 'payload_too_large', 'unsupported_media_type');
  codes.push(...route.errors, 'internal');
  return codes;
}

function operation(operationId: string, route: ApiRoute, inputs: Map<z.ZodType, string>): Json {
  const responses: Record<string, Json> = {};
  for (const [status, description] of Object.entries(route.response.statuses)) {
    responses[status] =
      route.response.schema && route.response.name
        ? { description, content: { 'application/json': { schema: ref(route.response.name) } } }
        : { description };
    if (route.responseHeaders) {
      responses[status]!['headers'] = {
        ETag: { description: 'The policy revision, as a strong entity tag.', schema: { type: 'string' } },
      };
    }
  }
  const parameterList = [...parameters(route.params, 'path'), ...parameters(route.query, 'query')];
  for (const header of route.headers ?? []) {
    parameterList.push({
      name: header.name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase()),
      in: 'header',
      required: true,
      description: header.description,
      schema: { type: 'string', minLength: 1 },
    });
  }
  if (route.method === 'POST') {
    parameterList.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Replays the first answer to a repeated key (24 h); a different body under it is refused. An answer that was not kept (a 5xx, or too large) carries `Idempotency-Status: not-stored`: a retry with the key runs again. A kept answer that held data of a session erased since is not replayed: the retry is answered `response_erased` (409).',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  }
  return {
    operationId,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description === undefined ? {} : { description: route.description }),
    ...(parameterList.length > 0 ? { parameters: parameterList } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: route.body.optional !== true,
            content: { 'application/json': { schema: ref(inputs.get(route.body.schema)!) } },
          },
        }
      : {}),
    responses: { ...responses, ...problems(errorCodes(route)) },
  };
}

function serviceOperation(operationId: string, doc: ServiceDoc, outputs: Map<z.ZodType, string>): Json {
  const schema = doc.ok.schema ? ref(outputs.get(doc.ok.schema)!) : { type: 'string' };
  const codeParameter = doc.path.includes('{code}')
    ? [{ name: 'code', in: 'path', required: true, schema: { type: 'string', enum: [...ERROR_CODES] } }]
    : [];
  // Every path answers another method with a 405 problem; the probes have no other 4xx.
  const extra: Record<string, Json> = problems(['method_not_allowed']);
  for (const [status, description] of Object.entries(doc.problems ?? {})) {
    extra[status] = { description, content: { 'application/problem+json': { schema: ref('Problem') } } };
  }
  return {
    operationId,
    tags: ['Service'],
    summary: doc.summary,
    security: [],
    ...(codeParameter.length > 0 ? { parameters: codeParameter } : {}),
    responses: {
      '200': {
        description: doc.ok.description,
        content: {
          [doc.ok.contentType]: doc.path === '/v1/openapi.json' ? { schema: { type: 'object' } } : { schema },
        },
      },
      ...extra,
    },
  };
}

/** `GET /v1/history/stream`: its answer is a `text/event-stream`, not one JSON value. */
function streamOperation(): Json {
  const doc = HISTORY_STREAM_DOC;
  return {
    operationId: doc.operationId,
    tags: ['History'],
    summary: doc.summary,
    description: doc.description,
    parameters: [
      ...parameters(doc.query, 'query'),
      {
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        description: 'Resume after this seq (sent by a reconnecting client).',
        schema: { type: 'string', pattern: '^[0-9]{1,15}$' },
      },
    ],
    responses: {
      '200': {
        description: 'The stream: `id: <seq>` and `data: <HistoryEvent JSON>` per event.',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
      ...problems([
        'unauthorized',
        'forbidden',
        'invalid_request',
        'rate_limited',
        'internal',
        'unavailable',
      ]),
    },
  };
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

let cached: Json | undefined;

/** The OpenAPI 3.1 document of this service (built once). */
export function buildOpenApiDocument(): Json {
  if (cached) return cached;
  const routes = Object.entries(API_ROUTES) as Array<[string, ApiRoute]>;
  const inputs = new Map<z.ZodType, string>();
  const outputs = new Map<z.ZodType, string>([[ProblemSchema, 'Problem']]);
  for (const [, route] of routes) {
    if (route.body) inputs.set(route.body.schema, route.body.name);
    if (route.response.schema && route.response.name) outputs.set(route.response.schema, route.response.name);
  }
  for (const [operationId, doc] of Object.entries(SERVICE_ROUTES) as Array<[string, ServiceDoc]>) {
    if (doc.ok.schema) outputs.set(doc.ok.schema, `${capitalized(operationId.replace(/^get/, ''))}Status`);
  }

  const paths: Record<string, Record<string, Json>> = {};
  const at = (path: string) => {
    paths[path] ??= {};
    return paths[path]!;
  };
  for (const [operationId, doc] of Object.entries(SERVICE_ROUTES) as Array<[string, ServiceDoc]>) {
    at(doc.path)['get'] = serviceOperation(operationId, doc, outputs);
  }
  for (const [operationId, route] of routes) {
    at(route.path)[route.method.toLowerCase()] = operation(operationId, route, inputs);
  }
  at(HISTORY_STREAM_DOC.path)['get'] = streamOperation();

  cached = {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse',
      version: '1',
      description:
        "Governed state and an action gate for AI agents. Errors are RFC 9457 problem+json; their `type` is this service's `/problems/<code>` page.",
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'This service (the document is served by it, at /v1/openapi.json).' }],
    tags: TAGS,
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: { ...componentSchemas(inputs, 'input'), ...componentSchemas(outputs, 'output') },
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (`gh_…`), as `Authorization: Bearer <key>`.',
        },
      },
    },
  };
  return cached;
}
