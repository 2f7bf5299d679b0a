/**
 * Hostile input against every /v1 route, through the web-standard handler: fuzzed bodies, query
 * strings, path parameters, headers, content types and sizes (unicode with lone surrogates, NUL,
 * deep nesting, `__proto__`/`constructor`/`prototype` keys). Never a 5xx, every error is
 * problem+json, no prototype is polluted, and the app still answers normally afterwards.
 * Then the limits on a real socket: oversized bodies (413), slowloris headers and slow bodies
 * (cut off by the server's timeouts).
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../adapters/http/index.js';
import { openPostgresStore } from '../../adapters/postgres/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, type Store } from '../../src/index.js';
import { call, createWorld, POLICY, pathOf, ROUTES, type Route, type World } from './fixtures.js';

const RUNS = Number(process.env['GATEHOUSE_FUZZ_RUNS'] ?? 120);

let world: World;
const prototypesBefore = snapshotPrototypes();

beforeAll(async () => {
  world = await createWorld({ policy: compilePolicy(POLICY) });
});
afterAll(async () => {
  await world.store.close();
});

function snapshotPrototypes() {
  return [Object.prototype, Array.prototype, Function.prototype, String.prototype].map((p) =>
    Object.getOwnPropertyNames(p).sort().join(','),
  );
}

// ---- arbitraries --------------------------------------------------------------------------------

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const oddChar = fc.constantFrom(
  '\u0000',
  '\u202e',
  '\ufeff',
  '\u2028',
  '"',
  '\\',
  '%',
  '/',
  '.',
  '..',
  '\n',
  '\r\n',
  '\t',
  '😀',
  'K',
  '\u00e9',
  "'",
  '{',
  '}',
  '$',
);
const unit = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: oddChar },
  { weight: 1, arbitrary: loneSurrogate },
);
/** Any text: every code point, lone surrogates, NUL, bidi controls. */
const text = fc.string({ unit, maxLength: 24 });

const PROTO_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '__defineGetter__',
];
const FIELD_NAMES = [
  'session_id',
  'key',
  'value',
  'type',
  'source',
  'metadata',
  'expected_version',
  'action',
  'params',
  'context',
  'resolution',
  'note',
  'outcome',
  'detail',
  'url',
  'events',
  'filter',
  'description',
  'overlap_seconds',
  'verdicts',
  'amount',
];
const objectKey = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...PROTO_KEYS) },
  { weight: 2, arbitrary: fc.constantFrom(...FIELD_NAMES) },
  { weight: 1, arbitrary: text },
);

/** A JSON scalar as text, including numbers JavaScript bends (1e400 is Infinity, -0, huge ints). */
const scalarText = fc.oneof(
  fc.constantFrom(
    'null',
    'true',
    'false',
    '0',
    '-0',
    '1e400',
    '-1e400',
    '1.5',
    '123456789012345678901234567890',
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.integer().map(String),
  text.map((s) => JSON.stringify(s)),
  fc.constantFrom(
    '"payments.transfer"',
    '"budget.limit"',
    '"user_input"',
    '"system"',
    '"fact"',
    '"keep_current"',
    '"accept_proposed"',
    '"succeeded"',
    '"*"',
    '"https://hooks.example.com/x"',
    '"http://127.0.0.1/x"',
    '"s1"',
  ),
);

/** JSON text built by hand, so `__proto__` stays a key (as it would on the wire). */
const { jsonText } = fc.letrec<{ jsonText: string; array: string; object: string }>((tie) => ({
  jsonText: fc.oneof({ maxDepth: 4, depthSize: 'small' }, scalarText, tie('array'), tie('object')),
  array: fc.array(tie('jsonText'), { maxLength: 5 }).map((items) => `[${items.join(',')}]`),
  object: fc
    .array(fc.tuple(objectKey, tie('jsonText')), { maxLength: 6 })
    .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
}));

/** `[[[…]]]` or `{"a":{"a":…}}` nested up to 40,000 deep. */
const deepNesting = fc
  .tuple(fc.integer({ min: 30, max: 40_000 }), fc.boolean(), fc.constantFrom('params', 'metadata', 'context'))
  .map(([depth, arrays, field]) => {
    const inner = arrays
      ? `${'['.repeat(depth)}1${']'.repeat(depth)}`
      : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    return `{"session_id":"s1","key":"deep.x","value":"v","type":"fact","source":"user_input","action":"a.b","${field}":{"d":${inner}}}`;
  });

/** The route's own body with fields replaced, removed or added (prototype keys included). */
function mutatedBody(route: Route) {
  const base = (route.body?.() ?? {}) as Record<string, unknown>;
  const entries = Object.entries(base).map(([k, v]) => [k, JSON.stringify(v)] as [string, string]);
  return fc
    .array(fc.tuple(fc.nat(), objectKey, jsonText, fc.constantFrom('set', 'drop', 'add')), { maxLength: 3 })
    .map((edits) => {
      const out = [...entries];
      for (const [index, key, value, op] of edits) {
        const at = out.length === 0 ? 0 : index % out.length;
        if (op === 'set' && out[at]) out[at] = [out[at]![0], value];
        else if (op === 'drop') out.splice(at, 1);
        else out.push([key, value]);
      }
      return `{${out.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
    });
}

function bodyFor(route: Route) {
  return fc.oneof(
    { weight: 5, arbitrary: mutatedBody(route) },
    { weight: 3, arbitrary: jsonText },
    { weight: 1, arbitrary: fc.string({ unit, maxLength: 200 }) },
    { weight: 1, arbitrary: deepNesting },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 60_000, max: 80_000 }).map((n) => `{"value":"${'x'.repeat(n)}"}`),
    },
    { weight: 1, arbitrary: fc.constant('') },
  );
}

const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/problem+json',
  'application/merge-patch+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  '',
  ';;;',
  'application/json; charset=utf-16',
);

/** Percent-encodes any string; a lone surrogate becomes the (invalid) UTF-8 of a surrogate. */
function encode(s: string): string {
  return s.replace(/[\s\S]/gu, (ch) => {
    try {
      return encodeURIComponent(ch);
    } catch {
      return '%ED%A0%80';
    }
  });
}

const rawFragment = fc.constantFrom(
  '%',
  '%zz',
  '%E0%A4',
  '%00',
  '%2F',
  '%2e%2e',
  '%C0%AF',
  '%FF',
  '+',
  '&&',
  '==',
);
const queryValue = fc.oneof(
  text.map(encode),
  rawFragment,
  fc.constantFrom(
    's1',
    'asc',
    'desc',
    '0',
    '-1',
    '501',
    '1e3',
    'open',
    'pending',
    'gate_evaluation',
    'budget.limit',
  ),
);
const queryKey = fc.oneof(
  fc.constantFrom(
    'session_id',
    'type',
    'decision_id',
    'limit',
    'cursor',
    'order',
    'status',
    'key',
    'before_id',
    ...PROTO_KEYS,
  ),
  text.map(encode),
);
const queryString = fc
  .array(fc.tuple(queryKey, queryValue), { maxLength: 5 })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`));

const pathValue = fc.oneof(
  text.map(encode),
  rawFragment,
  fc.constantFrom('x', '0', '-1', '1e9', 'a.b', 'dec_x'),
);

/** A header value the Fetch API accepts (Latin-1, no CR/LF/NUL). */
const headerValue = fc.string({
  unit: fc
    .integer({ min: 0x20, max: 0xff })
    .filter((c) => c !== 0x7f)
    .map((c) => String.fromCharCode(c)),
  maxLength: 300,
});
const extraHeaders = fc.dictionary(
  fc.constantFrom(
    'idempotency-key',
    'x-forwarded-for',
    'accept',
    'accept-encoding',
    'x-request-id',
    'origin',
  ),
  headerValue,
  { maxKeys: 3 },
);

// ---- the properties -----------------------------------------------------------------------------

function expectWellFormed(method: string, status: number, headers: Headers, body: string) {
  expect(status, body.slice(0, 300)).toBeLessThan(500);
  if (status >= 400) {
    expect(headers.get('content-type')).toBe('application/problem+json');
    if (method === 'HEAD') return;
    const problem = JSON.parse(body);
    expect(problem).toMatchObject({ status, code: expect.any(String), detail: expect.any(String) });
    expect(body).not.toMatch(/at .*\.(ts|js):\d+/);
  } else if (method !== 'HEAD' && status !== 204) {
    expect(headers.get('content-type')).toMatch(/^application\/json/);
    JSON.parse(body);
  }
  if (status === 401) expect(headers.get('www-authenticate')).toMatch(/^Bearer/);
  if (status === 405) expect(headers.get('allow')).toBeTruthy();
}

/** The stores the fuzzing runs on: SQLite always, PostgreSQL (a fresh schema) when configured. */
const pgUrl = process.env['GATEHOUSE_TEST_DATABASE_URL'];
const pgSchemas: string[] = [];
const BACKENDS: Array<[string, () => Promise<Store>]> = [['SQLite', async () => openSqliteStore()]];
if (pgUrl) {
  BACKENDS.push([
    'PostgreSQL',
    () => {
      const schema = `gh_fuzz_${randomBytes(6).toString('hex')}`;
      pgSchemas.push(schema);
      return openPostgresStore({ connectionString: pgUrl, schema, pool: { max: 4 } });
    },
  ]);
}
afterAll(async () => {
  if (!pgUrl || pgSchemas.length === 0) return;
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    for (const schema of pgSchemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
});

describe.each(BACKENDS)('fuzzing every /v1 route (%s)', (_backend, open) => {
  let world: World;
  beforeAll(async () => {
    world = await createWorld({ policy: compilePolicy(POLICY), store: await open() });
  });
  afterAll(async () => {
    await world.store.close();
  });

  it.each(ROUTES.map((r) => [`${r.method} ${r.pattern}`, r] as const))(
    '%s: never a 5xx, errors are problem+json',
    async (_name, route) => {
      const method = fc.oneof(
        { weight: 8, arbitrary: fc.constant(route.method) },
        { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD') },
      );
      const params = fc.record({
        key: fc.oneof(fc.constant(world.ids.key), pathValue),
        version: fc.oneof(fc.constant('1'), pathValue),
        conflict: fc.oneof(fc.constant(world.ids.conflict), pathValue),
        decision: fc.oneof(fc.constant(world.ids.decision), pathValue),
        webhook: fc.oneof(fc.constant(world.ids.webhook), pathValue),
        delivery: fc.oneof(fc.constant(world.ids.delivery), pathValue),
        approval: fc.oneof(fc.constant(world.ids.approval), pathValue),
        revision: fc.oneof(fc.constant(world.ids.revision), pathValue),
        hold: fc.oneof(fc.constant(world.ids.hold), pathValue),
      });
      const auth = fc.oneof(
        { weight: 6, arbitrary: fc.constant(world.keys.admin) },
        { weight: 1, arbitrary: fc.constant(world.keys.otherTenant) },
        { weight: 1, arbitrary: fc.constant(world.keys.scoped['state:read']) },
        { weight: 1, arbitrary: headerValue.map((v) => `gh_${v}`) },
      );
      await fc.assert(
        fc.asyncProperty(
          method,
          params,
          queryString,
          bodyFor(route),
          contentType,
          extraHeaders,
          auth,
          async (m, values, query, body, type, extra, key) => {
            const path = pathOf(route, values) + query;
            const headers: Record<string, string> = { ...extra, authorization: `Bearer ${key}` };
            if (type) headers['content-type'] = type;
            const hasBody = m !== 'GET' && m !== 'HEAD';
            const res = await world.app.request(path, {
              method: m,
              headers,
              ...(hasBody ? { body } : {}),
            });
            expectWellFormed(m, res.status, res.headers, await res.text());
          },
        ),
        { numRuns: RUNS },
      );
    },
  );

  it('the route table covers every authenticated route the app has', () => {
    const appRoutes = world.app.routes
      // The history stream answers a stream, not one value: test/http/historyStream.test.ts has it.
      .filter(
        (r) =>
          r.method !== 'ALL' &&
          r.path.startsWith('/v1/') &&
          r.path !== '/v1/openapi.json' &&
          r.path !== '/v1/history/stream',
      )
      .map((r) => `${r.method} ${r.path}`);
    expect(new Set(appRoutes)).toEqual(new Set(ROUTES.map((r) => `${r.method} ${r.pattern}`)));
  });

  it('leaves every prototype unpolluted, and the app answers normally afterwards', async () => {
    expect(snapshotPrototypes()).toEqual(prototypesBefore);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    const admin = world.keys.admin;
    const write = await call(world.app, 'POST', '/v1/state/items', {
      key: admin,
      body: { session_id: 'after', key: 'budget.limit', value: '100', type: 'fact', source: 'user_input' },
    });
    expect(write.status).toBe(201);
    const decision = await call(world.app, 'POST', '/v1/gates/evaluate', {
      key: admin,
      body: { session_id: 'after', action: 'payments.transfer', params: { amount: 500 } },
    });
    expect(decision.json).toMatchObject({ verdict: 'Block', reasons: [{ rule: 'over_budget' }] });
    expect((await call(world.app, 'GET', '/v1/history/verify', { key: admin })).json).toMatchObject({
      ok: true,
    });
  });
});

describe.each(BACKENDS)('hostile values, one by one (%s)', (_backend, open) => {
  let world: World;
  beforeAll(async () => {
    world = await createWorld({ policy: compilePolicy(POLICY), store: await open() });
  });
  afterAll(async () => {
    await world.store.close();
  });

  const admin = () => world.keys.admin;
  const item = { session_id: 'h1', key: 'note.text', type: 'fact', source: 'user_input' };

  it('deep nesting (a whole 64 KiB body of it) is a 422 naming the limit, not a stack overflow', async () => {
    const depth = 32_000;
    const deep = `{"session_id":"s1","action":"a.b","params":{"d":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    const r = await call(world.app, 'POST', '/v1/gates/evaluate', { key: admin(), body: deep });
    expect(r.status).toBe(422);
    expect(r.json.errors[0]).toMatchObject({ path: 'params', message: expect.stringContaining('32 levels') });
    const ok = `{"session_id":"s1","action":"a.b","params":${'{"a":'.repeat(31)}1${'}'.repeat(31)}}`;
    expect((await call(world.app, 'POST', '/v1/gates/evaluate', { key: admin(), body: ok })).status).toBe(
      200,
    );
  });

  it('a number JSON cannot carry (1e400 parses to Infinity) is a 422, not a failed hash', async () => {
    const bodies: Array<[string, string]> = [
      ['/v1/gates/evaluate', '{"session_id":"s1","action":"a.b","params":{"amount":1e400}}'],
      ['/v1/gates/evaluate', '{"session_id":"s1","action":"a.b","context":{"x":[-1e400]}}'],
      [
        '/v1/state/items',
        '{"session_id":"s1","key":"a.b","value":"v","type":"fact","source":"user_input","metadata":{"n":1e999}}',
      ],
    ];
    for (const [path, body] of bodies) {
      const r = await call(world.app, 'POST', path, { key: admin(), body });
      expect(r.status, body).toBe(422);
      expect(r.json.errors[0].message).toContain('finite');
    }
  });

  it('a value with NUL or a lone surrogate is refused (it could not be stored unchanged)', async () => {
    for (const value of ['a\u0000b', 'a\ud800b', '\udc00']) {
      const r = await call(world.app, 'POST', '/v1/state/items', { key: admin(), body: { ...item, value } });
      expect(r.status).toBe(422);
      expect(r.json.errors[0].path).toBe('value');
    }
    const emoji = await call(world.app, 'POST', '/v1/state/items', {
      key: admin(),
      body: { ...item, value: 'ok 😀 é \u202e' },
    });
    expect(emoji.status).toBe(201);
    const read = await call(world.app, 'GET', '/v1/state/items/note.text?session_id=h1', { key: admin() });
    expect(read.json.value).toBe('ok 😀 é \u202e');
  });

  it('an action with a control character or a bidirectional override is refused (people read it)', async () => {
    for (const action of ['pay\u001b[2K', 'pay\nments.transfer', 'pay\u009bments', 'refund\u202etxt.exe']) {
      const r = await call(world.app, 'POST', '/v1/gates/evaluate', {
        key: admin(),
        body: { session_id: 'h1', action },
      });
      expect(r.status).toBe(422);
      expect(r.json.errors[0]).toEqual({
        path: 'action',
        message: 'action must not contain control characters or bidirectional overrides',
      });
    }
    const plain = await call(world.app, 'POST', '/v1/gates/evaluate', {
      key: admin(),
      body: { session_id: 'h1', action: 'überweisung.senden 😀' },
    });
    expect(plain.status).toBe(200);
    // The published pattern means the same to a validator without Unicode property escapes.
    const openapi = await call(world.app, 'GET', '/v1/openapi.json', { key: admin() });
    const pattern = new RegExp(openapi.json.components.schemas.EvaluateInput.properties.action.pattern);
    expect(['payments.transfer', 'überweisung.senden 😀'].map((a) => pattern.test(a))).toEqual([true, true]);
    expect(['pay\u001b[2K', 'pay\u009bments', 'refund\u202etxt'].some((a) => pattern.test(a))).toBe(false);
  });

  it('IDs no object can have are 404 (PostgreSQL would refuse NUL in a query)', async () => {
    for (const path of [
      '/v1/decisions/dec_%00',
      '/v1/state/conflicts/%00',
      '/v1/webhooks/%00',
      `/v1/webhooks/${'x'.repeat(5000)}`,
    ]) {
      const r = await call(world.app, 'GET', path, { key: admin() });
      expect(r.status, path).toBe(404);
    }
    const q = await call(world.app, 'GET', '/v1/history/events?decision_id=%00', { key: admin() });
    expect(q.status).toBe(422);
  });

  it('prototype keys are data: recorded as sent, never a prototype', async () => {
    const body =
      '{"session_id":"p1","action":"a.b","params":{"x":{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}}}}}';
    const d = await call(world.app, 'POST', '/v1/gates/evaluate', { key: admin(), body });
    expect(d.status).toBe(200);
    const read = await call(world.app, 'GET', `/v1/decisions/${d.json.decision_id}`, { key: admin() });
    const x = read.json.params.x;
    expect(Object.keys(x)).toEqual(['__proto__', 'constructor']);
    expect(read.text).toContain('"__proto__":{"polluted":1}');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('limits on a real socket', () => {
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  let base: string;
  let host: string;

  beforeAll(async () => {
    server = await startHttpServer(world.app.fetch, {
      port: 0,
      headersTimeoutMs: 400,
      requestTimeoutMs: 800,
    });
    base = server.url;
    host = new URL(base).host;
  });
  afterAll(async () => {
    await server.close(100);
  });

  /** Sends `chunks` over a raw socket (with `delayMs` between them); resolves with what came back. */
  function raw(chunks: string[], delayMs = 0): Promise<{ text: string; ms: number }> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const socket = connect(server.port, '127.0.0.1');
      let text = '';
      let timer: NodeJS.Timeout | undefined;
      socket.setEncoding('utf8');
      socket.on('data', (d) => {
        text += d;
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve({ text, ms: Date.now() - started });
      });
      const guard = setTimeout(() => {
        socket.destroy();
        reject(new Error('the server kept a slow client for more than 10 s'));
      }, 10_000);
      socket.on('close', () => clearTimeout(guard));
      socket.on('connect', () => {
        let i = 0;
        const next = () => {
          if (socket.destroyed || i >= chunks.length) return;
          socket.write(chunks[i++]!);
          timer = setTimeout(next, delayMs);
        };
        next();
      });
    });
  }

  it('413 for a body over 64 KiB, with and without Content-Length', async () => {
    const big = JSON.stringify({ session_id: 's1', action: 'a.b', params: { x: 'y'.repeat(70_000) } });
    const res = await fetch(`${base}/v1/gates/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.keys.admin}`, 'content-type': 'application/json' },
      body: big,
    });
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(((await res.json()) as { code: string }).code).toBe('payload_too_large');

    const head =
      `POST /v1/gates/evaluate HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${world.keys.admin}\r\n` +
      'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n';
    const chunk = 'z'.repeat(16 * 1024);
    const chunks = [
      head,
      ...Array.from({ length: 6 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
      '0\r\n\r\n',
    ];
    const chunked = await raw(chunks);
    expect(chunked.text).toMatch(/^HTTP\/1\.1 413/);
    expect(chunked.text).toContain('application/problem+json');
  });

  it('slowloris: headers sent byte by byte are cut off by the headers timeout', async () => {
    const line = `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n`;
    const drip = [
      line,
      ...'X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'.split(''),
    ];
    const r = await raw(drip, 100);
    expect(r.text).toMatch(/^HTTP\/1\.1 408/);
    expect(r.ms).toBeLessThan(3_000);
  });

  it('a body sent byte by byte is cut off by the request timeout', async () => {
    const head =
      `POST /v1/gates/evaluate HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${world.keys.admin}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 500\r\n\r\n';
    const r = await raw([head, ...'{"session_id":"s1","action":"a.b","params":{"x":"'.split('')], 100);
    expect(r.ms).toBeLessThan(4_000);
    expect(r.text === '' || /^HTTP\/1\.1 (408|400)/.test(r.text)).toBe(true);
    const ok = await fetch(`${base}/healthz`);
    expect(ok.status).toBe(200);
  });
});
