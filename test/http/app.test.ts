/**
 * The /v1 API through the web-standard handler (no port): every route, status and error code.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpApp, PROBLEM_DESCRIPTIONS, STATUS_BY_CODE } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  ERROR_CODES,
  type Gatehouse,
  type Scope,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { BUDGET_POLICY } from '../support/policies.js';

let store: Store;
let gh: Gatehouse;
let app: ReturnType<typeof createHttpApp>;
let admin: string;

async function key(scopes: Scope[], options: { tenantId?: string; sources?: string[] } = {}) {
  const { secret, key } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    {
      scopes,
      tenantId: options.tenantId ?? 'default',
      sources: options.sources ?? ['user_input', 'tool_output'],
    },
  );
  return { secret, id: key.id };
}

interface Call {
  key?: string | null;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
}

async function call(method: string, path: string, options: Call = {}) {
  const headers: Record<string, string> = { ...options.headers };
  const k = options.key === undefined ? admin : options.key;
  if (k !== null) headers['authorization'] = `Bearer ${k}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await app.request(path, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, json, text };
}

const budget = { session_id: 's1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' };

function expectProblem(r: Awaited<ReturnType<typeof call>>, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.headers.get('content-type')).toBe('application/problem+json');
  expect(r.json).toMatchObject({ status, code, title: expect.any(String), detail: expect.any(String) });
  expect(JSON.stringify(r.json)).not.toMatch(/at .*\.(ts|js):\d+/);
}

beforeEach(async () => {
  store = openSqliteStore();
  gh = createGatehouse({ store, policy: compilePolicy(BUDGET_POLICY) });
  app = createHttpApp({ gatehouse: gh, rateLimit: false });
  admin = (await key(['admin'])).secret;
});
afterEach(async () => {
  await store.close();
});

describe('the seed flow', () => {
  it('record, conflict, Block, history by session/type/decision, webhook', async () => {
    const created = await call('POST', '/v1/state/items', { body: budget });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      outcome: 'created',
      item: { key: 'budget.limit', version: 1, trust: 3 },
    });

    const conflict = await call('POST', '/v1/state/items', {
      body: { ...budget, value: '999999', source: 'tool_output' },
    });
    expect(conflict.status).toBe(200);
    expect(conflict.json).toMatchObject({
      outcome: 'conflict',
      item: { value: '5000' },
      conflict: { status: 'open' },
    });

    await call('POST', `/v1/state/conflicts/${conflict.json.conflict.conflict_id}/resolve`, {
      body: { resolution: 'keep_current' },
    });
    const decision = await call('POST', '/v1/gates/evaluate', {
      body: { session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } },
    });
    expect(decision.status).toBe(200);
    expect(decision.json).toMatchObject({
      verdict: 'Block',
      allowed: false,
      reasons: [{ rule: 'over_budget' }],
    });
    expect(decision.json.reason).toContain('9000');
    const id = decision.json.decision_id as string;

    const bySessionType = await call('GET', '/v1/history/events?session_id=s1&type=gate_evaluation');
    expect(bySessionType.json.events.map((e: any) => e.data.decision_id)).toEqual([id]);
    const byDecision = await call('GET', `/v1/history/events?decision_id=${id}`);
    expect(byDecision.json.events).toHaveLength(1);

    const hook = await call('POST', '/v1/webhooks', {
      body: {
        url: 'https://hooks.example.com/gatehouse',
        events: ['gate_evaluation'],
        filter: { verdicts: ['Block'] },
      },
    });
    expect(hook.status).toBe(201);
    expect(hook.json.secret).toMatch(/^whsec_/);
  });
});

describe('state routes', () => {
  it('reads items, versions, one version, conflicts', async () => {
    await call('POST', '/v1/state/items', { body: budget });
    await call('POST', '/v1/state/items', { body: { ...budget, value: '6000' } });
    const c = await call('POST', '/v1/state/items', {
      body: { ...budget, value: '1', source: 'tool_output' },
    });
    expect((await call('GET', '/v1/state/items?session_id=s1')).json.items).toHaveLength(1);
    expect((await call('GET', '/v1/state/items/budget.limit?session_id=s1')).json).toMatchObject({
      version: 2,
      status: 'conflicted',
    });
    expect(
      (await call('GET', '/v1/state/items/budget.limit/versions?session_id=s1')).json.versions,
    ).toHaveLength(2);
    expect((await call('GET', '/v1/state/items/budget.limit/versions/1?session_id=s1')).json.value).toBe(
      '5000',
    );
    expectProblem(
      await call('GET', '/v1/state/items/budget.limit/versions/9?session_id=s1'),
      404,
      'not_found',
    );
    expectProblem(
      await call('GET', '/v1/state/items/budget.limit/versions/x?session_id=s1'),
      422,
      'invalid_request',
    );
    expectProblem(await call('GET', '/v1/state/items/nope.key?session_id=s1'), 404, 'not_found');
    expectProblem(await call('GET', '/v1/state/items/budget.limit'), 422, 'invalid_request');
    const list = await call('GET', '/v1/state/conflicts?session_id=s1&status=open');
    expect(list.json.conflicts).toHaveLength(1);
    const one = await call('GET', `/v1/state/conflicts/${c.json.conflict.conflict_id}`);
    expect(one.json.proposed.value).toBe('1');
    const resolved = await call('POST', `/v1/state/conflicts/${c.json.conflict.conflict_id}/resolve`, {
      body: { resolution: 'accept_proposed' },
    });
    expect(resolved.json).toMatchObject({ status: 'resolved', resolution: 'accept_proposed' });
    expectProblem(
      await call('POST', `/v1/state/conflicts/${c.json.conflict.conflict_id}/resolve`, {
        body: { resolution: 'keep_current' },
      }),
      409,
      'version_conflict',
    );
    expectProblem(await call('GET', '/v1/state/conflicts/cfl_nope'), 404, 'not_found');
  });

  it('validation errors name each field', async () => {
    const r = await call('POST', '/v1/state/items', { body: { session_id: '', key: 'x', value: 1 } });
    expectProblem(r, 422, 'invalid_request');
    const paths = r.json.errors.map((e: any) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['session_id', 'value', 'type', 'source']));
    const badKey = await call('POST', '/v1/state/items', { body: { ...budget, key: 'Budget' } });
    expectProblem(badKey, 422, 'invalid_request');
    expect(badKey.json.errors[0].path).toBe('key');
  });

  it('a field sent with the wrong type is named as such, not as missing', async () => {
    const number = await call('POST', '/v1/state/items', { body: { ...budget, value: 5000 } });
    expectProblem(number, 422, 'invalid_request');
    expect(number.json.detail).toBe('Invalid state item: value: expected string, received number.');
    const nul = await call('POST', '/v1/state/items', { body: { ...budget, value: null } });
    expect(nul.json.errors).toEqual([{ path: 'value', message: 'expected string, received null' }]);
    const missing = await call('POST', '/v1/state/items', { body: { ...budget, value: undefined } });
    expect(missing.json.errors).toEqual([{ path: 'value', message: 'is required' }]);
    const array = await call('POST', '/v1/gates/evaluate', { body: [1, 2] });
    expect(array.json.errors).toEqual([{ path: '(root)', message: 'expected object, received array' }]);
    const params = await call('POST', '/v1/gates/evaluate', {
      body: { session_id: 's1', action: 'payments.transfer', params: '9000' },
    });
    expect(params.json.errors).toEqual([{ path: 'params', message: 'expected object, received string' }]);
  });

  it('a __proto__ key in params, context or metadata is data, recorded as sent, at the top level too', async () => {
    // JSON.parse keeps it as an own key; a zod record rebuilt the object without it, so the
    // policy and an approval's digest did not see what the caller's tool receives.
    const raw = (body: string) => ({ raw: body, headers: { 'content-type': 'application/json' } });
    const d = await call(
      'POST',
      '/v1/gates/evaluate',
      raw(
        '{"session_id":"s1","action":"a.b","params":{"amount":5,"__proto__":{"amount":99999}},"context":{"__proto__":1}}',
      ),
    );
    expect(d.status).toBe(200);
    const read = await call('GET', `/v1/decisions/${d.json.decision_id}`);
    expect(Object.keys(read.json.params)).toEqual(['amount', '__proto__']);
    expect(read.text).toContain('"__proto__":{"amount":99999}');
    expect(read.text).toContain('"context":{"__proto__":1}');
    const item = await call(
      'POST',
      '/v1/state/items',
      raw(JSON.stringify(budget).replace('}', ',"metadata":{"__proto__":{"x":1}}}')),
    );
    expect(item.status).toBe(201);
    expect(JSON.stringify(item.json.item.metadata)).toBe('{"__proto__":{"x":1}}');
    expect(({} as Record<string, unknown>)['amount']).toBeUndefined();
  });

  it('in-process, params that are not JSON are refused, naming what was found', async () => {
    // The policy would judge the value, the history record its JSON (a Date as a string, a Map as {}).
    for (const [params, found] of [
      [{ n: 10n }, 'a bigint'],
      [{ at: new Date(0) }, 'a Date'],
      [{ m: new Map([['k', 1]]) }, 'a Map'],
      [{ deep: [{ f: () => 1 }] }, 'a function'],
    ] as const) {
      const error = await gh.evaluate({ session_id: 's1', action: 'a.b', params }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'invalid_request' });
      expect((error as Error).message).toContain(`params must hold only JSON values`);
      expect((error as Error).message).toContain(`not ${found}.`);
    }
    // undefined is left out, as JSON leaves it out.
    expect(
      (await gh.evaluate({ session_id: 's1', action: 'a.b', params: { a: undefined, b: 1 } })).verdict,
    ).toBe('Allow');
  });

  it('query numbers are decimal digits, and a query parameter is given once', async () => {
    const limit = async (value: string) =>
      (await call('GET', `/v1/history/events?limit=${value}`)).json.errors?.[0]?.message;
    expect(await limit('0x10')).toBe('limit must be a whole number in decimal digits');
    expect(await limit('1e1')).toBe('limit must be a whole number in decimal digits');
    expect(await limit('%2B5')).toBe('limit must be a whole number in decimal digits');
    expect(await limit('')).toBe('limit must be a whole number in decimal digits');
    expect(await limit('501')).toBe('limit must be at most 500');
    expect((await call('GET', '/v1/history/events?limit=20')).status).toBe(200);
    const twice = await call('GET', '/v1/history/events?limit=1&limit=2');
    expectProblem(twice, 422, 'invalid_request');
    expect(twice.json.detail).toBe("Query parameter 'limit' is given more than once.");
    const proto = await call('GET', '/v1/history/events?__proto__=1');
    expect(proto.json.errors).toEqual([{ path: '(root)', message: 'unknown field(s): __proto__' }]);
    await call('POST', '/v1/state/items', { body: budget });
    const version = await call('GET', '/v1/state/items/budget.limit/versions/1e0?session_id=s1');
    expect(version.json.errors).toEqual([
      { path: 'version', message: 'version must be a whole number in decimal digits' },
    ]);
    const huge = await call('GET', '/v1/state/items/budget.limit/versions/9007199254740993?session_id=s1');
    expect(huge.json.errors).toEqual([
      { path: 'version', message: 'version must be at most 9007199254740991' },
    ]);
  });

  it('a webhook names the event types it allows; a replay refuses since after until', async () => {
    const hook = await call('POST', '/v1/webhooks', {
      body: { url: 'https://hooks.example.com/x', events: ['constructor'] },
    });
    expectProblem(hook, 422, 'invalid_request');
    expect(hook.json.errors[0]).toEqual({
      path: 'events.0',
      message: expect.stringMatching(/^must be an event type \(state_change, .*gate_evaluation.*\) or \*$/),
    });
    const replay = await call('POST', '/v1/policy/replay', {
      body: { policy: 'version: 1\n', since: '2026-02-01T00:00:00Z', until: '2026-01-01T00:00:00Z' },
    });
    expectProblem(replay, 422, 'invalid_request');
    expect(replay.json.errors).toEqual([{ path: 'since', message: 'since must not be later than until' }]);
  });

  it('an unknown type and an unknown source are both named', async () => {
    const r = await call('POST', '/v1/state/items', {
      body: { ...budget, type: 'factoid', source: 'martian' },
    });
    expectProblem(r, 422, 'invalid_request');
    expect(r.json.errors.map((e: any) => e.path)).toEqual(['type', 'source']);
    expect(r.json.detail).toMatch(
      /^Unknown type 'factoid'; allowed: .*\. Unknown source 'martian'; allowed: /,
    );
    // Names an object's built-in properties have are not sources either.
    const proto = await call('POST', '/v1/state/items', { body: { ...budget, source: 'constructor' } });
    expectProblem(proto, 422, 'invalid_request');
    expect(proto.json.errors).toEqual([
      { path: 'source', message: expect.stringMatching(/^must be one of /) },
    ]);
  });

  it('expected_version mismatch is 409', async () => {
    await call('POST', '/v1/state/items', { body: budget });
    expectProblem(
      await call('POST', '/v1/state/items', { body: { ...budget, value: '7', expected_version: 0 } }),
      409,
      'version_conflict',
    );
  });
});

describe('decisions', () => {
  it('reads a decision and records its outcome once', async () => {
    await call('POST', '/v1/state/items', { body: budget });
    const d = await call('POST', '/v1/gates/evaluate', {
      body: { session_id: 's1', action: 'payments.transfer', params: { amount: 10 } },
    });
    expect(d.json.verdict).toBe('Allow');
    const read = await call('GET', `/v1/decisions/${d.json.decision_id}`);
    expect(read.json).toMatchObject({ decision_id: d.json.decision_id, params: { amount: 10 } });
    const outcome = await call('POST', `/v1/decisions/${d.json.decision_id}/outcome`, {
      body: { outcome: 'succeeded' },
    });
    expect(outcome.status).toBe(201);
    expect(outcome.json.type).toBe('action_outcome');
    expectProblem(
      await call('POST', `/v1/decisions/${d.json.decision_id}/outcome`, { body: { outcome: 'failed' } }),
      409,
      'already_recorded',
    );
    expectProblem(await call('GET', '/v1/decisions/dec_unknown'), 404, 'not_found');
    expectProblem(
      await call('POST', '/v1/gates/evaluate', { body: { session_id: 's1' } }),
      422,
      'invalid_request',
    );
  });
});

describe('history', () => {
  it('pages, verifies, rejects bad queries', async () => {
    for (let i = 0; i < 3; i++)
      await call('POST', '/v1/state/items', { body: { ...budget, key: `a.k${i}` } });
    const first = await call('GET', '/v1/history/events?limit=2');
    expect(first.json.events.map((e: any) => e.seq)).toEqual([3, 2]);
    const second = await call('GET', `/v1/history/events?limit=2&cursor=${first.json.next_cursor}`);
    expect(second.json).toMatchObject({ events: [{ seq: 1 }], next_cursor: null });
    expect((await call('GET', '/v1/history/verify')).json).toMatchObject({ ok: true, checked: 3 });
    expectProblem(await call('GET', '/v1/history/events?limit=0'), 422, 'invalid_request');
    expectProblem(await call('GET', '/v1/history/events?type=nope'), 422, 'invalid_request');
    expectProblem(await call('GET', '/v1/history/events?bogus=1'), 422, 'invalid_request');
    expectProblem(await call('GET', '/v1/history/events?cursor=zzz'), 422, 'invalid_request');
  });
});

describe('webhooks', () => {
  it('list, read, rotate, enable, deliveries, redeliver, delete', async () => {
    const w = await call('POST', '/v1/webhooks', {
      body: { url: 'https://hooks.example.com/x', events: ['*'] },
    });
    await call('POST', '/v1/state/items', { body: budget });
    expect((await call('GET', '/v1/webhooks')).json.webhooks).toHaveLength(1);
    const read = await call('GET', `/v1/webhooks/${w.json.id}`);
    expect(read.json.secret).toBeUndefined();
    const rotated = await call('POST', `/v1/webhooks/${w.json.id}/rotate-secret`);
    expect(rotated.json.secret).not.toBe(w.json.secret);
    expect((await call('POST', `/v1/webhooks/${w.json.id}/enable`)).json.status).toBe('active');
    const deliveries = await call('GET', `/v1/webhooks/${w.json.id}/deliveries`);
    expect(deliveries.json.deliveries).toHaveLength(1);
    const again = await call(
      'POST',
      `/v1/webhooks/${w.json.id}/deliveries/${deliveries.json.deliveries[0].delivery_id}/redeliver`,
    );
    expect(again.status).toBe(202);
    expectProblem(
      await call('GET', `/v1/webhooks/${w.json.id}/deliveries?limit=9999`),
      422,
      'invalid_request',
    );
    expect((await call('DELETE', `/v1/webhooks/${w.json.id}`)).status).toBe(204);
    expectProblem(await call('DELETE', `/v1/webhooks/${w.json.id}`), 404, 'not_found');
    expectProblem(
      await call('POST', '/v1/webhooks', { body: { url: 'http://hooks.example.com', events: ['*'] } }),
      422,
      'invalid_request',
    );
  });
});

describe('auth', () => {
  it('401 with WWW-Authenticate for missing, malformed, unknown and revoked keys', async () => {
    const { secret, id } = await key(['admin']);
    await store.revokeApiKey(id, new Date().toISOString());
    for (const header of [undefined, 'Basic abc', 'Bearer', 'Bearer gh_unknown', `Bearer ${secret}`]) {
      const r = await call('GET', '/v1/history/events', {
        key: null,
        headers: header === undefined ? {} : { authorization: header },
      });
      expectProblem(r, 401, 'unauthorized');
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
  });

  it('403 for a missing scope; the source cap is enforced', async () => {
    const reader = await key(['history:read']);
    expectProblem(
      await call('POST', '/v1/state/items', { key: reader.secret, body: budget }),
      403,
      'forbidden',
    );
    expectProblem(await call('POST', '/v1/webhooks', { key: reader.secret, body: {} }), 403, 'forbidden');
    const tool = await key(['state:write'], { sources: ['tool_output'] });
    const r = await call('POST', '/v1/state/items', { key: tool.secret, body: budget });
    expectProblem(r, 403, 'forbidden');
    expect(r.json.detail).toContain('user_input');
    const sys = await call('POST', '/v1/state/items', { body: { ...budget, source: 'system' } });
    expectProblem(sys, 403, 'forbidden');
  });

  it("another tenant's data is 404, never 403", async () => {
    const other = (await key(['admin'], { tenantId: 'other' })).secret;
    await call('POST', '/v1/state/items', { body: budget });
    const d = await call('POST', '/v1/gates/evaluate', { body: { session_id: 's1', action: 'x.y' } });
    const w = await call('POST', '/v1/webhooks', {
      body: { url: 'https://hooks.example.com/x', events: ['*'] },
    });
    expectProblem(await call('GET', `/v1/decisions/${d.json.decision_id}`, { key: other }), 404, 'not_found');
    expectProblem(await call('GET', `/v1/webhooks/${w.json.id}`, { key: other }), 404, 'not_found');
    expectProblem(
      await call('GET', '/v1/state/items/budget.limit?session_id=s1', { key: other }),
      404,
      'not_found',
    );
    expect((await call('GET', '/v1/history/events', { key: other })).json.events).toEqual([]);
  });
});

describe('protocol errors', () => {
  it('405 with Allow, 404 for unknown routes', async () => {
    const r = await call('PUT', '/v1/gates/evaluate', { body: {} });
    expectProblem(r, 405, 'method_not_allowed');
    expect(r.headers.get('allow')).toContain('POST');
    expectProblem(await call('GET', '/v1/nothing-here'), 404, 'not_found');
  });

  it('415 for non-JSON, 400 for malformed JSON, 413 for a large body', async () => {
    expectProblem(
      await call('POST', '/v1/state/items', {
        raw: 'a=b',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'unsupported_media_type',
    );
    expectProblem(
      await call('POST', '/v1/state/items', {
        raw: '{"a":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'malformed_request',
    );
    // Bytes that are not UTF-8 are refused, not replaced by U+FFFD and stored.
    const notUtf8 = Buffer.concat([
      Buffer.from('{"session_id":"s1","key":"a.b","type":"fact","source":"user_input","value":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}'),
    ]);
    const res = await app.request('/v1/state/items', {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: notUtf8,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: 'malformed_request',
      detail: 'The request body is not valid UTF-8.',
    });
    const big = JSON.stringify({ ...budget, value: 'x'.repeat(70 * 1024) });
    expectProblem(
      await call('POST', '/v1/state/items', { raw: big, headers: { 'content-type': 'application/json' } }),
      413,
      'payload_too_large',
    );
  });

  it('Idempotency-Key replays the first response and refuses a different body', async () => {
    const headers = { 'idempotency-key': 'abc-1' };
    const a = await call('POST', '/v1/state/items', { body: budget, headers });
    const b = await call('POST', '/v1/state/items', { body: budget, headers });
    expect(b.status).toBe(a.status);
    expect(b.json).toEqual(a.json);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect((await gh.readHistory()).events).toHaveLength(1);
    expectProblem(
      await call('POST', '/v1/state/items', { body: { ...budget, value: '1' }, headers }),
      422,
      'invalid_request',
    );
  });

  it('429 with Retry-After past the per-key rate', async () => {
    app = createHttpApp({ gatehouse: gh, rateLimit: { ratePerSecond: 1, burst: 2, now: () => 0 } });
    await call('GET', '/v1/webhooks');
    await call('GET', '/v1/webhooks');
    const r = await call('GET', '/v1/webhooks');
    expectProblem(r, 429, 'rate_limited');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});

describe('service routes', () => {
  it('healthz, readyz, metrics, openapi without a key', async () => {
    expect((await call('GET', '/healthz', { key: null })).json).toEqual({ status: 'ok' });
    expect((await call('GET', '/readyz', { key: null })).json).toMatchObject({
      status: 'ready',
      store: 'sqlite',
    });
    await call('POST', '/v1/gates/evaluate', { body: { session_id: 's1', action: 'x.y' } });
    const metrics = await app.request('/metrics');
    const text = await metrics.text();
    expect(text).toContain('gatehouse_decisions_total{verdict="Allow"} 1');
    const doc = (await call('GET', '/v1/openapi.json', { key: null })).json;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/state/items', '/v1/gates/evaluate', '/v1/history/events', '/v1/webhooks']),
    );
    expect(doc.components.schemas.RecordStateInput.required).toEqual(
      expect.arrayContaining(['session_id', 'key', 'value', 'type', 'source']),
    );
  });

  it('readyz is 503 when the store is unreachable', async () => {
    await store.close();
    expectProblem(await call('GET', '/readyz', { key: null }), 503, 'unavailable');
    store = openSqliteStore();
  });
});

describe('error codes', () => {
  it('every code has a status, pinned', () => {
    expect(STATUS_BY_CODE).toEqual({
      invalid_request: 422,
      malformed_request: 400,
      unauthorized: 401,
      forbidden: 403,
      not_found: 404,
      method_not_allowed: 405,
      version_conflict: 409,
      already_recorded: 409,
      response_erased: 409,
      precondition_failed: 412,
      precondition_required: 428,
      payload_too_large: 413,
      unsupported_media_type: 415,
      rate_limited: 429,
      unavailable: 503,
      internal: 500,
    });
  });

  it('every code is in the error table of docs/http-api.md', () => {
    const table = readFileSync(join(import.meta.dirname, '../../docs/http-api.md'), 'utf8');
    for (const code of ERROR_CODES) expect(table).toContain(`| \`${code}\` | ${STATUS_BY_CODE[code]} |`);
  });
});

describe('problem types', () => {
  it("name the service's own /problems/<code> page, which answers without a key", async () => {
    const r = await call('GET', '/v1/decisions/dec_unknown');
    expect(r.json.type).toBe('/problems/not_found');
    for (const code of ERROR_CODES) {
      const page = await app.request(`/problems/${code}`);
      expect(page.status, code).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await page.text();
      expect(html).toContain(code);
      expect(html).toContain(String(STATUS_BY_CODE[code]));
    }
    expectProblem(await call('GET', '/problems/no_such_code', { key: null }), 404, 'not_found');
    expect(JSON.stringify(r.json)).not.toContain('gatehouse.dev');
  });

  it('an absolute base is used when configured', async () => {
    app = createHttpApp({ gatehouse: gh, rateLimit: false, problemBaseUrl: 'https://gh.example.org/' });
    const r = await call('GET', '/v1/decisions/dec_unknown');
    expect(r.json.type).toBe('https://gh.example.org/problems/not_found');
  });

  it('every code has a description', () => {
    for (const code of ERROR_CODES) expect(PROBLEM_DESCRIPTIONS[code].length).toBeGreaterThan(10);
  });
});
