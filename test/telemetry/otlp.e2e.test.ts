/**
 * The real `gatehouse serve` process exporting over OTLP/HTTP to a receiver in this test: the
 * standard variables switch the SDK on, a request's spans arrive in the caller's trace, the
 * metrics arrive too, and shutdown flushes them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, stopServe } from '../reliability/fixtures.js';

interface Export {
  path: string;
  contentType: string;
  body: string;
}

let dir: string;
let collector: Server;
let endpoint: string;
const exports: Export[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-otlp-'));
  collector = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      exports.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
});

afterAll(async () => {
  collector.closeAllConnections();
  await new Promise<void>((r) => collector.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

describe('gatehouse serve with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('exports the request and decision spans and the metrics, flushed on SIGTERM', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const serve = await startServe(['--database', join(dir, 'gh.db')], {
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'gatehouse-e2e',
      },
    });
    try {
      const res = await fetch(`${serve.url}/v1/gates/evaluate`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${serve.key}`,
          'content-type': 'application/json',
          traceparent: `00-${traceId}-b7ad6b7169203331-01`,
        },
        body: JSON.stringify({ session_id: 'e2e', action: 'email.send', params: { to: 'a@example.com' } }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    } finally {
      expect(await stopServe(serve)).toBe(0);
    }

    const traces = exports.filter((e) => e.path === '/v1/traces');
    expect(traces.length, serve.stderr()).toBeGreaterThan(0);
    expect(traces[0]!.contentType).toContain('application/json');
    const spans = traces.flatMap((e) => {
      const body = JSON.parse(e.body) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: Array<{ name: string; traceId: string }> }>;
        }>;
      };
      return body.resourceSpans.flatMap((r) => {
        const service = r.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
        return r.scopeSpans.flatMap((s) => s.spans.map((span) => ({ ...span, service })));
      });
    });
    const inTrace = spans.filter((s) => s.traceId === traceId).map((s) => s.name);
    expect(inTrace).toEqual(
      expect.arrayContaining([
        'POST /v1/gates/evaluate',
        'gatehouse.evaluate',
        'gatehouse.store.transaction',
      ]),
    );
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['gatehouse-e2e']));

    const metrics = exports
      .filter((e) => e.path === '/v1/metrics')
      .map((e) => e.body)
      .join('\n');
    expect(metrics).toContain('gatehouse.decisions');
    expect(metrics).toContain('http.server.request.duration');
    // The resource never carries the command line (it could hold --database-url with a password).
    expect(exports.map((e) => e.body).join('\n')).not.toContain('process.command_args');
  });
});
