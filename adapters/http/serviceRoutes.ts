/**
 * The unauthenticated service routes (probes, metrics, the document, problem pages), declared
 * once: their documentation here, their handlers bound by operationId in {@link createServiceRoutes}.
 */
import { z } from 'zod';
import { type Gatehouse, GatehouseError } from '../../src/index.js';
import type { Metrics } from './metrics.js';
import type { ServiceRoute } from './pipeline.js';
import { problemPage, problemReply, type Reply } from './problem.js';

/** How the document describes one service route. */
export interface ServiceDoc {
  path: string;
  summary: string;
  /** Content type and (for JSON) schema of the 200 answer. */
  ok: { description: string; contentType: string; schema?: z.ZodType };
  /** Problem answers besides 200. */
  problems?: Partial<Record<404 | 503, string>>;
}

/** The service routes, by operationId. */
export const SERVICE_ROUTES = {
  getHealth: {
    path: '/healthz',
    summary: 'Liveness: the process answers',
    ok: {
      description: 'Alive.',
      contentType: 'application/json',
      schema: z.object({ status: z.literal('ok') }),
    },
  },
  getReadiness: {
    path: '/readyz',
    summary: 'Readiness: the database is reachable',
    ok: {
      description: 'Ready.',
      contentType: 'application/json',
      schema: z.object({ status: z.literal('ready'), store: z.string() }),
    },
    problems: { 503: 'The database is unreachable (`unavailable`).' },
  },
  getMetrics: {
    path: '/metrics',
    summary: 'Prometheus metrics',
    ok: { description: 'Metrics in the Prometheus text format.', contentType: 'text/plain' },
  },
  getOpenApiDocument: {
    path: '/v1/openapi.json',
    summary: 'This OpenAPI 3.1 document',
    ok: { description: 'The document.', contentType: 'application/json' },
  },
  getProblemType: {
    path: '/problems/{code}',
    summary: 'What a problem `type` URI means',
    ok: { description: 'A short page describing the error code.', contentType: 'text/html' },
    problems: { 404: 'No such error code (`not_found`).' },
  },
} as const satisfies Record<string, ServiceDoc>;

/** The operationIds of the service routes. */
export type ServiceOperationId = keyof typeof SERVICE_ROUTES;

function json(body: unknown): Reply {
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

/** Binds a handler to each service route. */
export function createServiceRoutes(deps: {
  gatehouse: Gatehouse;
  metrics: Metrics;
  openApiDocument: () => unknown;
}): ServiceRoute[] {
  const handlers: Record<ServiceOperationId, ServiceRoute['handle']> = {
    getHealth: async () => json({ status: 'ok' }),
    getReadiness: async () => {
      try {
        await deps.gatehouse.store.ping();
        return json({ status: 'ready', store: deps.gatehouse.store.kind });
      } catch {
        return problemReply(new GatehouseError('unavailable', 'The database is unreachable.'), {
          instance: '/readyz',
        });
      }
    },
    getMetrics: async () => ({
      status: 200,
      headers: { 'content-type': deps.metrics.registry.contentType },
      body: await deps.metrics.registry.metrics(),
    }),
    getOpenApiDocument: async () => json(deps.openApiDocument()),
    getProblemType: async ({ code = '' }) => {
      const page = problemPage(code);
      if (page === undefined) {
        return problemReply(new GatehouseError('not_found', `No problem type '${code}'.`), {
          instance: `/problems/${code}`,
        });
      }
      return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: page };
    },
  };
  return Object.entries(SERVICE_ROUTES).map(([operationId, doc]) => ({
    kind: 'service',
    method: 'GET',
    path: doc.path,
    handle: handlers[operationId as ServiceOperationId],
  }));
}
