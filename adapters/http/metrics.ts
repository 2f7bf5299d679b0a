/**
 * Prometheus metrics (prom-client): request counts and latency by route, decisions by verdict.
 */
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/** The metrics of one service instance. */
export interface Metrics {
  registry: Registry;
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  observeDecision(verdict: string): void;
}

/** Creates a registry with Gatehouse's metrics (and Node's defaults when `defaults`). */
export function createMetrics(options: { defaults?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaults) collectDefaultMetrics({ register: registry, prefix: 'gatehouse_' });
  const requests = new Counter({
    name: 'gatehouse_http_requests_total',
    help: 'HTTP requests by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'gatehouse_http_request_duration_seconds',
    help: 'HTTP request latency by route.',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
    registers: [registry],
  });
  const decisions = new Counter({
    name: 'gatehouse_decisions_total',
    help: 'Gate decisions by verdict.',
    labelNames: ['verdict'] as const,
    registers: [registry],
  });
  // Each label set's children, bound once: prom-client otherwise hashes the labels on every call.
  // Routes are patterns and statuses a short list, so there are few.
  const byRequest = new Map<string, { count: { inc(): void }; latency: { observe(v: number): void } }>();
  return {
    registry,
    observeRequest(method, route, status, seconds) {
      const id = `${method} ${status} ${route}`;
      let bound = byRequest.get(id);
      if (!bound) {
        bound = {
          count: requests.labels({ method, route, status: String(status) }),
          latency: latency.labels({ route }),
        };
        byRequest.set(id, bound);
      }
      bound.count.inc();
      bound.latency.observe(seconds);
    },
    observeDecision(verdict) {
      decisions.inc({ verdict });
    },
  };
}
