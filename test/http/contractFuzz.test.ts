/**
 * A deterministic contract fuzz of every `/v1` operation, read off the OpenAPI document the
 * service serves: malformed bodies, fields, path and query parameters, content types, methods,
 * credentials, Idempotency-Keys and clients that go away mid-body, over real HTTP on loopback
 * with a SQLite file, through both faces of the app (the node:http listener and the web `fetch`).
 * Whatever a client sends, the answer is never a 5xx and has a status the document lists; a 4xx
 * is problem+json whose `status` is the HTTP status and whose `detail` names the field or
 * parameter at fault; no stack trace or key secret comes back or is logged, no client mistake is
 * logged as a server error, and the server keeps answering.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createHttpApp,
  type HttpApp,
  type RunningServer,
  startHttpServer,
} from '../../adapters/http/index.js';
import { API_ROUTES } from '../../adapters/http/routes.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type Scope,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { APPROVAL_POLICY } from '../support/policies.js';

type Json = Record<string, any>;

interface Operation {
  id: string;
  method: string;
  path: string;
  parameters: Json[];
  body?: { schema: Json; required: boolean };
  /** A web route answering a stream: only requests it refuses are sent. */
  stream: boolean;
  /** The statuses the document lists for it. */
  statuses: Set<number>;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

interface Expect {
  /** Statuses allowed besides the always-refused 5xx (default: any below 500). */
  statuses?: readonly number[];
  /** A name the problem's `detail` (or an `errors[].path`) must carry when the answer is 4xx. */
  names?: string;
  /** Only when the answer is exactly this status must it name `names`. */
  namesOn?: number;
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-contract-fuzz-'));
let store: Store;
let gatehouse: Gatehouse;
/** The two faces of one app: the lean node:http listener, and its web `fetch` behind a converter. */
type Face = 'node:http' | 'web fetch';
const faces: Record<Face, { servers: RunningServer[]; apps: HttpApp[]; pool?: Pool; widePool?: Pool }> = {
  'node:http': { servers: [], apps: [] },
  'web fetch': { servers: [], apps: [] },
};
/** The face under test: its default server, and one whose body limit lets a 1 MB field in. */
let pool: Pool;
let widePool: Pool;
let admin: string;
/** A key that only decides approvals, and one that was revoked. */
let approver: string;
let revoked: string;
let ops: Operation[] = [];
let doc: Json;
/** Real IDs of objects of another tenant, to ask for from this one. */
const foreign: Record<string, string> = {};
/** Real IDs of this tenant's objects, by the path segment naming their collection. */
const own: Record<string, string> = {};
const failures: string[] = [];
/** What the servers logged (JSON lines): no error may be logged for a client's mistake. */
const logged: string[] = [];
const logger = pino({ level: 'debug' }, { write: (line: string) => void logged.push(line) });
/** Every problem `type` answered, each of which must resolve to its page. */
const types = new Set<string>();

async function newKey(scopes: Scope[], tenantId = 'default'): Promise<string> {
  const { secret } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes, tenantId, sources: ['user_input', 'tool_output'], labels: ['finance'] },
  );
  return secret;
}

async function send(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string; auth?: string | null; via?: Pool } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  const auth = options.auth === undefined ? `Bearer ${admin}` : options.auth;
  if (auth !== null) headers['authorization'] = auth;
  const res = await (options.via ?? pool).request({
    method,
    path,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const text = await res.body.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** A stack frame, a module path or a source file path: what no answer may carry. */
const STACK =
  /(?:\n|\\n)\s+at \S|\bat [^\n]*\(?[^\s()]+\.[cm]?[jt]s:\d+|node_modules|file:\/\/|(?:\/[\w.@-]+){2,}\.[cm]?[jt]s\b/;

/** Checks one answer against the contract; records every breach with `label`. */
function check(
  label: string,
  answer: Answer,
  want: Expect = {},
  secrets: readonly string[] = [],
  op?: Operation,
): void {
  const fail = (what: string) =>
    failures.push(`${label}: ${what} (${answer.status} ${answer.text.slice(0, 300)})`);
  if (answer.status >= 500) fail('a 5xx');
  if (want.statuses && !want.statuses.includes(answer.status))
    fail(`status not in ${want.statuses.join('/')}`);
  if (op && !op.statuses.has(answer.status))
    fail('a status the OpenAPI document does not list for the operation');
  if (STACK.test(answer.text)) fail('stack trace or file path in the answer');
  for (const secret of [admin, ...secrets]) {
    if (secret.length >= 8 && answer.text.includes(secret)) fail('key material echoed back');
  }
  if (answer.status < 400) {
    const type = String(answer.headers['content-type'] ?? '');
    if (answer.status !== 204 && !type.startsWith('application/json')) fail('a success that is not JSON');
    return;
  }
  if (typeof answer.json?.type === 'string') types.add(answer.json.type);
  if (answer.headers['content-type'] !== 'application/problem+json') fail('not application/problem+json');
  const problem = answer.json;
  if (typeof problem !== 'object' || problem === null) {
    fail('no JSON problem body');
    return;
  }
  if (typeof problem.type !== 'string' || !problem.type.includes('/problems/')) fail('no `type`');
  if (typeof problem.title !== 'string' || problem.title === '') fail('no `title`');
  if (problem.status !== answer.status) fail('`status` differs from the HTTP status');
  if (typeof problem.detail !== 'string' || problem.detail === '') fail('no `detail`');
  if (want.names !== undefined && (want.namesOn === undefined || want.namesOn === answer.status)) {
    const paths: string[] = Array.isArray(problem.errors)
      ? problem.errors.map((e: Json) => String(e.path))
      : [];
    const named =
      String(problem.detail).includes(want.names) ||
      paths.some((p) => p === want.names || p.startsWith(`${want.names}.`));
    if (!named) fail(`the problem does not name '${want.names}'`);
  }
}

/** Runs `tasks` a few at a time (the server is on the same two cores). */
async function inBatches(tasks: Array<() => Promise<void>>, width = 4): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < tasks.length) await tasks[next++]!();
    }),
  );
}

function resolve(schema: Json): Json {
  if (typeof schema?.['$ref'] === 'string') {
    const name = schema['$ref'].replace('#/components/schemas/', '');
    return resolve(doc['components'].schemas[name]);
  }
  return schema ?? {};
}

/** One type a field's schema admits, for picking a wrong one. */
function typeOf(schema: Json): string {
  const s = resolve(schema);
  if (typeof s['type'] === 'string') return s['type'];
  if (Array.isArray(s['anyOf'])) return typeOf(s['anyOf'][0]);
  if (s['enum'] || s['const'] !== undefined) return 'string';
  return 'any';
}

const SAMPLES: Record<string, unknown> = {
  session_id: 'fuzz-s1',
  key: 'fuzz.key',
  value: '42',
  type: 'fact',
  source: 'user_input',
  action: 'notes.write',
  url: 'https://hooks.example.com/fuzz',
  subject: 'subject-1',
  policy: 'version: 1\n',
};

/** Bodies the schema alone does not make valid (one of two optional fields is needed). */
const BASES: Record<string, Json> = {
  replayPolicy: { policy: 'version: 1\n' },
};

/** A plausible value for a schema (valid where the schema is simple enough). */
function sample(name: string, schema: Json): unknown {
  if (name in SAMPLES) return SAMPLES[name];
  const s = resolve(schema);
  if (s['const'] !== undefined) return s['const'];
  if (Array.isArray(s['enum'])) return s['enum'][0];
  if (Array.isArray(s['anyOf'])) return sample(name, s['anyOf'][0]);
  switch (s['type']) {
    case 'string':
      if (s['format'] === 'date-time') return '2026-01-01T00:00:00Z';
      if (s['pattern'] === '^[0-9a-f]{64}$') return '0'.repeat(64);
      if (typeof s['pattern'] === 'string' && s['pattern'].endsWith('d$')) return '400d';
      return 'x';
    case 'integer':
    case 'number':
      return Math.max(1, s['minimum'] ?? 1);
    case 'boolean':
      return false;
    case 'array':
      return [sample(name, s['items'] ?? {})];
    case 'object':
      return sampleObject(s);
    default:
      return 'x';
  }
}

function sampleObject(schema: Json, op?: Operation): Json {
  const s = resolve(schema);
  const out: Json = { ...(op ? BASES[op.id] : {}) };
  for (const field of (s['required'] ?? []) as string[]) out[field] = sample(field, s['properties'][field]);
  return out;
}

/** A body with `field` set to raw JSON text (numbers JSON.stringify cannot write, deep nesting). */
function withRaw(base: Json, field: string, raw: string): string {
  return JSON.stringify({ ...base, [field]: '@@raw@@' }).replace('"@@raw@@"', () => raw);
}

/** Cursors of the right shape for another list, order or range, and of none. */
const CURSORS = ['v1:asc:999999999999999', 'v1:desc:0', 'r1:999999999999999', 'r1:-1', 'a1:x', '{}'].map(
  (c) => Buffer.from(c).toString('base64url'),
);

const DEPTH = 10_000;
const DEEP_OBJECT = `${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}`;
const DEEP_ARRAY = `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`;
const MEGABYTE = 'x'.repeat(1024 * 1024);

/** The path of `op` with each parameter set to a harmless value, or `override` for one. */
function pathOf(op: Operation, override?: { name: string; raw: string }): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (override && override.name === name) return override.raw;
    if (name === 'version') return '1';
    if (name === 'key') return 'fuzz.key';
    // An object of this tenant where there is one, so that the body is read past the lookup.
    const area = Object.keys(own).find((a) => op.path.includes(`/${a}`));
    return (name === 'id' && area && own[area]) || 'fuzz-missing-id';
  });
}

/** The query string that makes `op` valid (its required parameters). */
function requiredQuery(op: Operation): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of op.parameters) if (p['in'] === 'query' && p['required']) out[p['name']] = 'fuzz-s1';
  return out;
}

function withQuery(path: string, query: Record<string, string> | string): string {
  const search = typeof query === 'string' ? query : new URLSearchParams(query).toString();
  return search === '' ? path : `${path}?${search}`;
}

function jsonHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { 'content-type': 'application/json', ...extra };
}

/** Headers a route needs besides the body: the policy's `If-Match`, the active revision's ETag. */
async function routeHeaders(op: Operation): Promise<Record<string, string>> {
  if (!op.parameters.some((p) => p['in'] === 'header' && p['name'] === 'If-Match')) return {};
  const policy = await send('GET', '/v1/policy');
  return { 'if-match': String(policy.headers['etag']) };
}

beforeAll(async () => {
  store = openSqliteStore({ filename: join(dir, 'gatehouse.db') });
  gatehouse = createGatehouse({ store, policy: compilePolicy(APPROVAL_POLICY) });
  admin = await newKey(['admin']);
  approver = await newKey(['approvals:decide']);
  const gone = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['admin'] },
  );
  await store.revokeApiKey(gone.key.id, new Date().toISOString());
  revoked = gone.secret;
  for (const face of Object.keys(faces) as Face[]) {
    // The same service with a body limit large enough that a 1 MB field reaches the field rules.
    const apps = [{}, { maxBodyBytes: 4 * 1024 * 1024 }].map((limits) =>
      createHttpApp({ gatehouse, rateLimit: false, logger, ...limits }),
    );
    const [normal, wider] = await Promise.all(
      apps.map((app) =>
        startHttpServer(face === 'node:http' ? app : (request) => app.fetch(request), { port: 0 }),
      ),
    );
    faces[face] = {
      servers: [normal!, wider!],
      apps,
      pool: new Pool(normal!.url, { connections: 4 }),
      widePool: new Pool(wider!.url, { connections: 4 }),
    };
  }
  pool = faces['node:http'].pool!;
  widePool = faces['node:http'].widePool!;

  const served = await send('GET', '/v1/openapi.json', { auth: null });
  expect(served.status).toBe(200);
  doc = served.json;
  for (const [path, byMethod] of Object.entries<Json>(doc['paths'])) {
    for (const [method, op] of Object.entries<Json>(byMethod)) {
      const content = op['requestBody']?.content?.['application/json'];
      ops.push({
        id: op['operationId'],
        method: method.toUpperCase(),
        path,
        parameters: op['parameters'] ?? [],
        ...(content
          ? { body: { schema: resolve(content.schema), required: op['requestBody'].required } }
          : {}),
        stream: Object.keys(op['responses']['200']?.content ?? {}).includes('text/event-stream'),
        statuses: new Set(Object.keys(op['responses']).map(Number)),
      });
    }
  }
  // Only the authenticated /v1 operations; the service routes are probed for methods alone.
  ops = ops.filter((op) => op.path.startsWith('/v1/') && op.id !== 'getOpenApiDocument');
  expect(ops.length).toBeGreaterThan(30);

  // Objects of another tenant, whose IDs this tenant's admin must not reach.
  const other = await newKey(['admin'], 'other-tenant');
  const as = (method: string, path: string, body: unknown) =>
    send(method, path, { auth: `Bearer ${other}`, headers: jsonHeaders(), body: JSON.stringify(body) });
  const hook = await as('POST', '/v1/webhooks', { url: 'https://hooks.example.com/fuzz', events: ['*'] });
  foreign['webhook'] = hook.json?.id;
  const item = {
    session_id: 'other-s1',
    key: 'budget.limit',
    value: '100',
    type: 'fact',
    source: 'user_input',
  };
  await as('POST', '/v1/state/items', item);
  const conflict = await as('POST', '/v1/state/items', { ...item, value: '900', source: 'tool_output' });
  foreign['conflict'] = conflict.json?.conflict?.conflict_id;
  const held = await as('POST', '/v1/gates/evaluate', {
    session_id: 'other-s2',
    action: 'refunds.issue',
  });
  foreign['decision'] = held.json?.decision_id;
  foreign['approval'] = held.json?.approval?.id;
  const hold = await as('POST', '/v1/legal-holds', { session_id: 'other-s1', reference: 'CASE-1' });
  foreign['hold'] = hold.json?.hold_id;
  for (const [what, id] of Object.entries(foreign)) {
    if (typeof id !== 'string') throw new Error(`no ${what} of the other tenant: fix the fixture`);
  }

  // The same objects in this tenant, for the routes that read a body after finding the object.
  const mine = (method: string, path: string, body: unknown) =>
    send(method, path, { headers: jsonHeaders(), body: JSON.stringify(body) });
  own['webhooks'] = (
    await mine('POST', '/v1/webhooks', { url: 'https://hooks.example.com/own', events: ['*'] })
  ).json?.id;
  await mine('POST', '/v1/state/items', item);
  own['conflicts'] = (
    await mine('POST', '/v1/state/items', { ...item, value: '900', source: 'tool_output' })
  ).json?.conflict?.conflict_id;
  const ownHeld = await mine('POST', '/v1/gates/evaluate', { session_id: 'own-s2', action: 'refunds.issue' });
  own['decisions'] = ownHeld.json?.decision_id;
  own['approvals'] = ownHeld.json?.approval?.id;
  for (const [what, id] of Object.entries(own)) {
    if (typeof id !== 'string') throw new Error(`no ${what} of this tenant: fix the fixture`);
  }
}, 60_000);

afterAll(async () => {
  for (const face of Object.values(faces)) {
    await face.pool?.close();
    await face.widePool?.close();
    for (const server of face.servers) await server.close(0);
    for (const app of face.apps) app.close();
  }
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Fails with every breach recorded by `run`, listed. */
async function expectNoBreaches(run: () => Promise<void>): Promise<void> {
  failures.length = 0;
  await run();
  expect(failures).toEqual([]);
}

const bodyOps = () => ops.filter((op) => op.body && !op.stream);

describe.each(Object.keys(faces) as Face[])(
  'every /v1 operation, fuzzed from the served OpenAPI document (%s)',
  (face) => {
    beforeAll(() => {
      pool = faces[face].pool!;
      widePool = faces[face].widePool!;
      logged.length = 0;
    });

    it('body fields: wrong types, missing, extra, null, odd numbers and strings, deep nesting', async () => {
      await expectNoBreaches(async () => {
        const tasks: Array<() => Promise<void>> = [];
        for (const op of bodyOps()) {
          const schema = op.body!.schema;
          const base = sampleObject(schema, op);
          const properties = Object.entries<Json>(schema['properties'] ?? {});
          const post = (label: string, body: string, want: Expect, via?: Pool) =>
            tasks.push(async () => {
              const answer = await send(op.method, pathOf(op), {
                headers: jsonHeaders(await routeHeaders(op)),
                body,
                ...(via ? { via } : {}),
              });
              check(`${op.method} ${op.path} ${label}`, answer, want, [], op);
            });
          post('a plausible body', JSON.stringify(base), {});
          for (const [field, fieldSchema] of properties) {
            const type = typeOf(fieldSchema);
            const wrong =
              type === 'string'
                ? 12345
                : type === 'integer' || type === 'number'
                  ? '12'
                  : type === 'boolean'
                    ? 'yes'
                    : type === 'array' || type === 'object'
                      ? 'not-a-container'
                      : undefined;
            if (wrong !== undefined) {
              post(`${field}: ${JSON.stringify(wrong)}`, JSON.stringify({ ...base, [field]: wrong }), {
                statuses: [422],
                names: field,
              });
            }
            post(`${field}: null`, JSON.stringify({ ...base, [field]: null }), {
              names: field,
              namesOn: 422,
            });
            post(`${field}: a deep object`, withRaw(base, field, DEEP_OBJECT), {
              names: field,
              namesOn: 422,
            });
            post(`${field}: a deep array`, withRaw(base, field, DEEP_ARRAY), { names: field, namesOn: 422 });
            if (type === 'string') {
              for (const [what, text] of [
                ['NUL', 'a\u0000b'],
                ['a lone surrogate', 'a\ud800b'],
                ['bidi controls', '\u202eevil\u202c\u2066x\u2069'],
                ['empty', ''],
              ] as const) {
                post(`${field}: ${what}`, JSON.stringify({ ...base, [field]: text }), {
                  names: field,
                  namesOn: 422,
                });
              }
              post(
                `${field}: 1 MB`,
                JSON.stringify({ ...base, [field]: MEGABYTE }),
                { names: field, namesOn: 422 },
                widePool,
              );
            }
            if (type === 'integer' || type === 'number') {
              for (const raw of ['1e309', '-1e309', '-0', '18446744073709551616', '1.5', '-1']) {
                post(`${field}: ${raw}`, withRaw(base, field, raw), { names: field, namesOn: 422 });
              }
            }
          }
          for (const field of (schema['required'] ?? []) as string[]) {
            const { [field]: _, ...rest } = base;
            post(`without ${field}`, JSON.stringify(rest), { statuses: [422], names: field });
          }
          if (schema['additionalProperties'] === false) {
            post('an extra field', JSON.stringify({ ...base, zz_fuzz_extra: 1 }), {
              statuses: [422],
              names: 'zz_fuzz_extra',
            });
          }
          // Deep nesting inside an open object (a params or metadata record).
          for (const [field, fieldSchema] of properties) {
            const s = resolve(fieldSchema);
            if (s['type'] === 'object' && s['additionalProperties'] !== false && !s['properties']) {
              post(
                `${field}: a record holding a deep object`,
                withRaw(base, field, `{"deep":${DEEP_OBJECT}}`),
                {
                  names: field,
                  namesOn: 422,
                },
              );
              post(`${field}: a record holding 1e309`, withRaw(base, field, '{"amount":1e309}'), {
                names: field,
                namesOn: 422,
              });
            }
          }
        }
        await inBatches(tasks);
      });
    }, 60_000);

    it('whole bodies: empty, invalid JSON, not an object, deeply nested', async () => {
      await expectNoBreaches(async () => {
        const tasks: Array<() => Promise<void>> = [];
        for (const op of bodyOps()) {
          const bodies: Array<[string, string, Expect]> = [
            ['an empty body', '', op.body!.required ? { statuses: [400, 422] } : {}],
            ['invalid JSON', '{"session_id": ', { statuses: [400] }],
            ['trailing garbage', '{} x', { statuses: [400] }],
            ['an array', '[]', { statuses: [422] }],
            ['a string', '"text"', { statuses: [422] }],
            ['a number', '42', { statuses: [422] }],
            // The core reads a `null` body of an optional one as none.
            ['null', 'null', op.body!.required ? { statuses: [422] } : {}],
            ['a deep array', DEEP_ARRAY, { statuses: [422] }],
            ['a deep object', DEEP_OBJECT, { statuses: [422] }],
            ['__proto__', '{"__proto__": {"admin": true}}', { statuses: [422] }],
          ];
          for (const [label, body, want] of bodies) {
            tasks.push(async () => {
              const answer = await send(op.method, pathOf(op), {
                headers: jsonHeaders(await routeHeaders(op)),
                body,
              });
              check(`${op.method} ${op.path} ${label}`, answer, want, [], op);
            });
          }
          tasks.push(async () => {
            // Not UTF-8: refused as malformed, never read with replacement characters.
            const res = await pool.request({
              method: op.method,
              path: pathOf(op),
              headers: { authorization: `Bearer ${admin}`, ...jsonHeaders(await routeHeaders(op)) },
              body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
            });
            const text = await res.body.text();
            check(
              `${op.method} ${op.path} bytes that are not UTF-8`,
              answerOf(res.statusCode, res.headers, text),
              {
                statuses: [400],
              },
              [],
              op,
            );
          });
        }
        // One body over the default limit.
        const evaluate = ops.find((op) => op.id === 'evaluate')!;
        tasks.push(async () => {
          const answer = await send('POST', evaluate.path, {
            headers: jsonHeaders(),
            body: JSON.stringify({ session_id: 's', action: 'a', params: { x: MEGABYTE } }),
          });
          check('POST /v1/gates/evaluate 1 MB body', answer, { statuses: [413] }, [], evaluate);
        });
        await inBatches(tasks);
      });
    }, 60_000);

    it('path parameters: too long, dot segments, NUL, bad escapes, unicode, another tenant’s IDs', async () => {
      await expectNoBreaches(async () => {
        const tasks: Array<() => Promise<void>> = [];
        const bad = [
          'x'.repeat(4000),
          '..',
          '%2e%2e',
          '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
          '%00',
          'a%00b',
          '%ZZ',
          '%',
          '%ED%A0%80',
          '%E2%80%AEevil',
          '%F0%9F%98%80',
          '%C3%A9t%C3%A9',
          ...Object.values(foreign),
        ];
        for (const op of ops) {
          const names = op.parameters.filter((p) => p['in'] === 'path').map((p) => String(p['name']));
          for (const name of names) {
            const values =
              name === 'version' ? [...bad, '-1', '0', '1e309', '99999999999999999999', '1.5', 'abc'] : bad;
            for (const raw of values) {
              if (op.stream) continue;
              tasks.push(async () => {
                const path = withQuery(pathOf(op, { name, raw }), requiredQuery(op));
                const hasBody = op.body !== undefined;
                const answer = await send(op.method, path, {
                  headers: jsonHeaders(await routeHeaders(op)),
                  ...(hasBody ? { body: JSON.stringify(sampleObject(op.body!.schema, op)) } : {}),
                });
                const label = `${op.method} ${op.path} ${name}=${raw.slice(0, 40)}`;
                // Another tenant's object does not exist here; nor does anything else sent.
                const isForeign = Object.values(foreign).includes(raw);
                check(
                  label,
                  answer,
                  isForeign ? { statuses: [404, 422] } : { names: name, namesOn: 422 },
                  [],
                  op,
                );
              });
            }
          }
        }
        await inBatches(tasks);
      });
    }, 60_000);

    it('query parameters: negative, huge, non-numeric, repeated, unknown, missing', async () => {
      await expectNoBreaches(async () => {
        const tasks: Array<() => Promise<void>> = [];
        for (const op of ops) {
          const query = op.parameters.filter((p) => p['in'] === 'query');
          if (query.length === 0) continue;
          const base = requiredQuery(op);
          const path = pathOf(op);
          const probe = (label: string, search: string, want: Expect) =>
            tasks.push(async () => {
              const answer = await send(op.method, withQuery(path, search), {});
              check(`${op.method} ${op.path} ${label}`, answer, want, [], op);
            });
          const baseSearch = new URLSearchParams(base).toString();
          const plus = (extra: string) => (baseSearch === '' ? extra : `${baseSearch}&${extra}`);
          probe('an unknown parameter', plus('zz_unknown=1'), { statuses: [422], names: 'zz_unknown' });
          probe('__proto__', plus('__proto__=1'), { statuses: [422], names: '__proto__' });
          for (const p of query) {
            const name = String(p['name']);
            const type = typeOf(p['schema'] ?? {});
            const others = Object.fromEntries(Object.entries(base).filter(([n]) => n !== name));
            const rest = new URLSearchParams(others).toString();
            const withParam = (value: string) => `${rest === '' ? '' : `${rest}&`}${name}=${value}`;
            if (!op.stream)
              probe(`${name} twice`, `${withParam('1')}&${name}=2`, { statuses: [422], names: name });
            if (p['required']) probe(`without ${name}`, rest, { statuses: [422], names: name });
            const numeric = type === 'integer' || type === 'number' || name === 'limit' || name === 'wait';
            const values = numeric
              ? ['-1', 'abc', '1e309', '99999999999999999999', '1.5', '0x10', '', '%00']
              : ['%00', 'x'.repeat(5000), '%E2%80%AE', '%ZZ', ...(name === 'cursor' ? CURSORS : [])];
            for (const value of values) {
              // A stream answers a valid query with a stream: only send what it must refuse.
              if (op.stream && !numeric) continue;
              probe(`${name}=${value.slice(0, 20)}`, withParam(value), {
                names: name,
                namesOn: 422,
                ...(numeric && ['-1', 'abc', '1e309', '0x10'].includes(value) ? { statuses: [422] } : {}),
              });
            }
          }
        }
        await inBatches(tasks);
      });
    }, 60_000);

    it('content types: text/plain, form-encoded, none', async () => {
      await expectNoBreaches(async () => {
        const tasks: Array<() => Promise<void>> = [];
        for (const op of bodyOps()) {
          const body = JSON.stringify(sampleObject(op.body!.schema, op));
          for (const type of [
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            null,
          ]) {
            tasks.push(async () => {
              const headers: Record<string, string> = { ...(await routeHeaders(op)) };
              if (type !== null) headers['content-type'] = type;
              const answer = await send(op.method, pathOf(op), { headers, body });
              check(
                `${op.method} ${op.path} Content-Type ${type}`,
                answer,
                { statuses: [415], names: 'Content-Type' },
                [],
                op,
              );
            });
          }
        }
        await inBatches(tasks);
      });
    }, 60_000);

    it('methods: one the path does not have, OPTIONS, HEAD', async () => {
      await expectNoBreaches(async () => {
        const tasks: Array<() => Promise<void>> = [];
        for (const [path, byMethod] of Object.entries<Json>(doc['paths'])) {
          const have = new Set(Object.keys(byMethod).map((m) => m.toUpperCase()));
          const concrete = path.replace(/\{[^}]+\}/g, 'x');
          for (const method of ['PATCH', 'PUT', 'DELETE', 'POST', 'OPTIONS']) {
            if (have.has(method)) continue;
            tasks.push(async () => {
              const answer = await send(method, concrete, { headers: jsonHeaders(), body: '{}' });
              check(`${method} ${path}`, answer, { statuses: [405] });
              const allow = String(answer.headers['allow'] ?? '');
              for (const m of have)
                if (!allow.includes(m)) failures.push(`${method} ${path}: Allow lacks ${m}`);
            });
          }
        }
        // HEAD is GET without the body.
        for (const op of ops.filter((o) => o.method === 'GET' && !o.stream)) {
          tasks.push(async () => {
            const path = withQuery(pathOf(op), requiredQuery(op));
            const [head, get] = await Promise.all([send('HEAD', path), send('GET', path)]);
            if (head.status !== get.status || head.text !== '')
              failures.push(`HEAD ${op.path}: ${head.status} '${head.text.slice(0, 80)}', GET ${get.status}`);
          });
        }
        await inBatches(tasks);
      });
    }, 60_000);

    it('credentials: none, another scheme, garbage, a near-miss, revoked, huge; a scope too few', async () => {
      await expectNoBreaches(async () => {
        const tasks: Array<() => Promise<void>> = [];
        for (const op of ops) {
          const scope: unknown = (API_ROUTES as Record<string, { scope: unknown }>)[op.id]?.scope;
          if (scope === null || scope === 'approvals:decide') continue;
          if (Array.isArray(scope) && scope.includes('approvals:decide')) continue;
          tasks.push(async () => {
            const answer = await send(op.method, withQuery(pathOf(op), requiredQuery(op)), {
              auth: `Bearer ${approver}`,
              headers: jsonHeaders(await routeHeaders(op)),
              ...(op.body ? { body: JSON.stringify(sampleObject(op.body.schema, op)) } : {}),
            });
            // Refused for its scope before anything else, naming the scope it needs.
            const needs = op.stream ? 'history:read' : Array.isArray(scope) ? scope[0] : String(scope);
            check(
              `${op.method} ${op.path} without scope ${needs}`,
              answer,
              { statuses: [403], names: needs },
              [approver],
              op,
            );
          });
        }
        const near = `${admin.slice(0, -1)}${admin.endsWith('A') ? 'B' : 'A'}`;
        const headers: Array<[string, string | null]> = [
          ['none', null],
          ['empty', ''],
          ['Basic', `Basic ${Buffer.from(`user:${admin}`).toString('base64')}`],
          ['Bearer alone', 'Bearer'],
          ['garbage bearer', 'Bearer not-a-key-at-all'],
          ['fake key', 'Bearer gh_0000000000000000_fake'],
          ['near miss', `Bearer ${near}`],
          ['key and more', `Bearer ${admin} extra`],
          ['huge', `Bearer gh_${'A'.repeat(8000)}`],
          ['revoked key', `Bearer ${revoked}`],
        ];
        for (const op of ops) {
          for (const [label, auth] of headers) {
            tasks.push(async () => {
              const answer = await send(op.method, withQuery(pathOf(op), requiredQuery(op)), {
                auth,
                headers: jsonHeaders(await routeHeaders(op)),
                ...(op.body ? { body: JSON.stringify(sampleObject(op.body.schema, op)) } : {}),
              });
              check(
                `${op.method} ${op.path} Authorization ${label}`,
                answer,
                { statuses: [401] },
                [near, admin, revoked],
                op,
              );
            });
          }
        }
        await inBatches(tasks);
      });
    }, 60_000);

    it('Idempotency-Key: empty, too long, odd bytes, reused with another body', async () => {
      await expectNoBreaches(async () => {
        const tasks: Array<() => Promise<void>> = [];
        for (const op of ops.filter((o) => o.method === 'POST' && !o.stream)) {
          const body = op.body ? JSON.stringify(sampleObject(op.body.schema, op)) : undefined;
          const post = (label: string, key: string, want: Expect, text = body) =>
            send(op.method, pathOf(op), {
              headers: jsonHeaders({ 'idempotency-key': key }),
              ...(text === undefined ? {} : { body: text }),
            }).then((answer) =>
              check(`${op.method} ${op.path} Idempotency-Key ${label}`, answer, want, [], op),
            );
          tasks.push(() => post('too long', 'k'.repeat(256), { statuses: [422], names: 'Idempotency-Key' }));
          tasks.push(() => post('latin-1 bytes', `k-\u00e9\u00ff-${op.id}`, {}));
          tasks.push(() => post('with spaces', `  k ${op.id}  `, {}));
          if (op.body) {
            tasks.push(async () => {
              const key = `fuzz-reuse-${op.id}`;
              await post('first use', key, {});
              await post(
                'reused with another body',
                key,
                { statuses: [422], names: 'Idempotency-Key' },
                '{"zz":1}',
              );
            });
          }
        }
        await inBatches(tasks);
        // The same key twice at once: the operation runs once, and both get its answer.
        const twice = await Promise.all(
          [1, 2].map(() =>
            send('POST', '/v1/gates/evaluate', {
              headers: jsonHeaders({ 'idempotency-key': `fuzz-concurrent-${face}` }),
              body: JSON.stringify({ session_id: 'fuzz-s1', action: 'notes.write' }),
            }),
          ),
        );
        expect(twice.map((a) => a.status)).toEqual([200, 200]);
        expect(twice[0]!.json.decision_id).toBe(twice[1]!.json.decision_id);
        // An empty key: the header is there, its value is not.
        const answer = await send('POST', '/v1/gates/evaluate', {
          headers: jsonHeaders({ 'idempotency-key': '' }),
          body: JSON.stringify({ session_id: 'fuzz-s1', action: 'notes.write' }),
        });
        check('POST /v1/gates/evaluate Idempotency-Key empty', answer, {
          names: 'Idempotency-Key',
          namesOn: 422,
        });
      });
    }, 60_000);

    it('clients that stop mid-body, or send broken framing', async () => {
      const { hostname, port } = new URL(faces[face].servers[0]!.url);
      /**
       * Writes `text` on a raw socket; resolves with the first answer (or what came before the
       * server closed). `destroy` goes away 20 ms after writing instead of waiting.
       */
      const raw = (text: string | Buffer, destroy = false) =>
        new Promise<string>((resolve) => {
          const socket = connect(Number(port), hostname);
          let answer = '';
          const done = () => {
            socket.destroy();
            resolve(answer);
          };
          socket.on('data', (chunk) => {
            answer += chunk.toString('latin1');
            const [head, body = ''] = answer.split('\r\n\r\n');
            const length = /content-length: (\d+)/i.exec(head ?? '')?.[1];
            if (length !== undefined && Buffer.byteLength(body, 'latin1') >= Number(length)) done();
          });
          socket.on('error', () => undefined);
          socket.on('close', () => resolve(answer));
          socket.setTimeout(5000, done);
          socket.write(text, () => {
            if (destroy) setTimeout(done, 20);
          });
        });
      const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
      const auth = `authorization: Bearer ${admin}\r\ncontent-type: application/json\r\n`;
      const tasks: Array<() => Promise<void>> = [];
      for (const op of bodyOps()) {
        const extra = Object.entries(await routeHeaders(op)).map(([name, value]) => `${name}: ${value}\r\n`);
        const head = `${op.method} ${pathOf(op)} HTTP/1.1\r\nhost: fuzz\r\n${auth}${extra.join('')}`;
        // Promises more than it sends, then goes away: nothing to answer, no server error to log.
        tasks.push(async () => {
          await raw(`${head}content-length: 1000\r\n\r\n{"session_id":`, true);
        });
        tasks.push(async () => {
          await raw(`${head}transfer-encoding: chunked\r\n\r\n5\r\n{"ses\r\n`, true);
        });
        // A chunked body whose chunk size is not hex.
        tasks.push(async () => {
          const answer = await raw(`${head}transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
          if (statusOf(answer) >= 500)
            failures.push(`${op.method} ${op.path} bad chunk size: ${answer.slice(0, 200)}`);
        });
        // A chunked body split inside a multi-byte character: read whole, like any other.
        tasks.push(async () => {
          const json = JSON.stringify({ ...sampleObject(op.body!.schema, op), zz_note: 'é€' });
          const body = Buffer.from(json);
          const at = body.indexOf(Buffer.from('é')) + 1;
          const chunk = (part: Buffer) =>
            Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]);
          const answer = await raw(
            Buffer.concat([
              Buffer.from(`${head}transfer-encoding: chunked\r\n\r\n`),
              chunk(body.subarray(0, at)),
              chunk(body.subarray(at)),
              Buffer.from('0\r\n\r\n'),
            ]),
          );
          // Read whole and valid UTF-8: the unknown field is what is refused, by name.
          const problem = answer.slice(answer.indexOf('\r\n\r\n') + 4);
          if (statusOf(answer) !== 422 || !problem.includes('zz_note'))
            failures.push(`${op.method} ${op.path} chunked: ${answer.slice(0, 300)}`);
        });
      }
      await expectNoBreaches(() => inBatches(tasks));
      const health = await send('GET', '/healthz', { auth: null });
      expect(health.status).toBe(200);
    });

    it('still answers afterwards, every problem type resolves, and the history still verifies', async () => {
      const health = await send('GET', '/healthz', { auth: null });
      expect(health.status).toBe(200);
      expect(types.size).toBeGreaterThan(5);
      for (const type of types) {
        const page = await send('GET', type, { auth: null });
        expect(page.status, type).toBe(200);
        expect(page.headers['content-type']).toMatch(/^text\/html/);
      }
      const verify = await send('GET', '/v1/history/verify');
      expect(verify.status).toBe(200);
      expect(verify.json.ok).toBe(true);
      // No client mistake is logged as a server error, and no log line carries a key's secret.
      const errors = logged.filter((line) => JSON.parse(line).level >= 50);
      expect(errors).toEqual([]);
      expect(logged.filter((line) => line.includes(admin))).toEqual([]);
    });
  },
);

function answerOf(status: number, headers: Answer['headers'], text: string): Answer {
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status, headers, text, json };
}
