/**
 * The OpenAPI document is derived from the route table: it names every route the app serves,
 * describes what each really answers, and passes Redocly's recommended rules with nothing to say.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES, createHttpApp, type HttpApp } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse, HistoryQuerySchema, type Store } from '../../src/index.js';

const root = join(import.meta.dirname, '../..');
let store: Store;
let app: HttpApp;
let doc: any;

beforeAll(async () => {
  store = openSqliteStore();
  const gatehouse = createGatehouse({ store });
  app = createHttpApp({
    gatehouse,
    rateLimit: false,
    mcp: async () => new Response(null, { status: 204 }),
  });
  const res = await app.request('/v1/openapi.json');
  expect(res.status).toBe(200);
  doc = await res.json();
});

afterAll(async () => {
  await store.close();
});

const toOpenApi = (pattern: string) => pattern.replace(/:([a-z_]+)/g, '{$1}');

describe('the document and the app agree', () => {
  it('every route the app serves is in the document, and every operation is served', () => {
    // /mcp speaks JSON-RPC (the MCP Streamable HTTP transport), described by the MCP spec.
    const served = app.routes
      .filter((r) => r.path !== '/mcp')
      .map((r) => `${r.method} ${toOpenApi(r.path)}`)
      .sort();
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(documented).toEqual(served);
    expect(app.routes).toContainEqual({ method: 'ALL', path: '/mcp' });
  });

  it('operationIds are the table keys (and the client method names)', () => {
    const ids = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((ops) =>
      Object.values(ops).map((op) => op.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(Object.keys(API_ROUTES)));
  });

  it('describes what the routes really answer (the drift of issue 14 is gone)', () => {
    const decision = doc.paths['/v1/decisions/{id}'].get.responses['200'];
    expect(decision.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/DecisionRecord',
    });
    expect(doc.components.schemas.DecisionRecord.required).toEqual(
      expect.arrayContaining(['decision_id', 'params', 'context', 'event_id']),
    );
    const names = (path: string) =>
      doc.paths[path].get.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name);
    expect(names('/v1/state/conflicts')).toEqual(['session_id', 'key', 'status']);
    expect(names('/v1/webhooks/{id}/deliveries')).toEqual(['status', 'limit', 'before_id']);
    expect(names('/v1/history/events')).toEqual(Object.keys(HistoryQuerySchema.shape));
    const write = doc.paths['/v1/state/items'].post.responses;
    expect(Object.keys(write)).toEqual(
      expect.arrayContaining(['200', '201', '401', '403', '409', '413', '422', '429']),
    );
    expect(write['422'].content['application/problem+json'].schema).toEqual({
      $ref: '#/components/schemas/Problem',
    });
    expect(doc.servers).toHaveLength(1);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/healthz'].get.security).toEqual([]);
  });
});

describe('Redocly lint (recommended rules)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-openapi-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('0 errors and 0 warnings on the generated document', async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        join(root, 'node_modules/@redocly/cli/bin/cli.js'),
        'lint',
        file,
        '--extends=recommended',
        '--format=json',
      ],
      {
        cwd: dir,
        // No telemetry or update check: the suite talks to loopback only.
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', CI: 'true' },
        maxBuffer: 16 * 1024 * 1024,
      },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string }>;
    };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 60_000);
});
