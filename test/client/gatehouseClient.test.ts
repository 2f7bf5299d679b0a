/**
 * The /v1 client against the real HTTP app on loopback: every method, the problem+json →
 * GatehouseError mapping, and what a dead or silent server turns into.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { MockAgent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatehouseClient, type GatehouseClient } from '../../adapters/client/index.js';
import { API_ROUTES, createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  GatehouseError,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { BUDGET_POLICY } from '../support/policies.js';

let store: Store;
let server: RunningServer;
let client: GatehouseClient;

function optionError(options: Parameters<typeof createGatehouseClient>[0]): GatehouseError {
  try {
    createGatehouseClient(options);
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    return error as GatehouseError;
  }
  throw new Error(`createGatehouseClient accepted ${JSON.stringify(options)}`);
}

async function errorOf(promise: Promise<unknown>): Promise<GatehouseError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatehouseError);
  return error as GatehouseError;
}

/** A raw TCP-level server for failure modes the real app never produces. */
async function rawServer(
  onRequest: Parameters<typeof createServer>[1],
): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const http: Server = createServer(onRequest);
  http.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        http.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  store = openSqliteStore();
  const gatehouse = createGatehouse({ store, policy: compilePolicy(BUDGET_POLICY) });
  const app = createHttpApp({ gatehouse, rateLimit: false });
  server = await startHttpServer(app.fetch, { port: 0 });
  const { secret } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['admin'], sources: ['user_input', 'tool_output'] },
  );
  client = createGatehouseClient({ baseUrl: `${server.url}/`, apiKey: secret });
});

afterAll(async () => {
  await server?.close(0);
  await store?.close();
});

describe('every method against the real /v1 app', () => {
  it('has one method per operation of the route table, and no other', () => {
    const methods = Object.keys(client).sort();
    expect(methods).toEqual(Object.keys(API_ROUTES).sort());
    for (const name of methods) expect(typeof client[name as keyof GatehouseClient]).toBe('function');
  });

  it('records, reads and versions state', async () => {
    const created = await client.recordState({
      session_id: 'c1',
      key: 'Budget.Limit',
      value: '5000',
      type: 'fact',
      source: 'user_input',
    });
    expect(created).toMatchObject({
      outcome: 'created',
      changed: true,
      item: { key: 'budget.limit', version: 1 },
    });
    await client.recordState({
      session_id: 'c1',
      key: 'budget.limit',
      value: '6000',
      type: 'fact',
      source: 'user_input',
    });

    expect(await client.getItem('c1', 'budget.limit')).toMatchObject({ value: '6000', version: 2 });
    expect((await client.getItemVersion('c1', 'budget.limit', 1)).value).toBe('5000');
    expect((await client.listItemVersions('c1', 'budget.limit')).map((v) => v.version)).toEqual([1, 2]);
    expect((await client.listItems('c1')).map((i) => i.key)).toEqual(['budget.limit']);
    expect(await client.listItems('nobody')).toEqual([]);
  });

  it('replays a write sent twice with the same idempotency key', async () => {
    const input = { session_id: 'c2', key: 'trip.city', value: 'Lyon', type: 'fact', source: 'user_input' };
    const first = await client.recordState(input, { idempotencyKey: 'idem-1' });
    // Same key, different body: the server refuses rather than applying a second write.
    const reused = await errorOf(
      client.recordState({ ...input, value: 'Nice' }, { idempotencyKey: 'idem-1' }),
    );
    expect(reused).toMatchObject({ code: 'invalid_request', errors: [{ path: 'Idempotency-Key' }] });
    const replay = await client.recordState(input, { idempotencyKey: 'idem-1' });
    expect(replay.event_id).toBe(first.event_id);
    expect((await client.listItemVersions('c2', 'trip.city')).length).toBe(1);
  });

  it('lists, reads and resolves conflicts', async () => {
    await client.recordState({
      session_id: 'c3',
      key: 'user.email',
      value: 'a@x.io',
      type: 'fact',
      source: 'user_input',
    });
    const lower = await client.recordState({
      session_id: 'c3',
      key: 'user.email',
      value: 'evil@x.io',
      type: 'fact',
      source: 'tool_output',
    });
    expect(lower.outcome).toBe('conflict');
    const [open] = await client.listConflicts({ session_id: 'c3', status: 'open' });
    expect(open?.proposed.value).toBe('evil@x.io');
    expect((await client.getConflict(open!.conflict_id)).status).toBe('open');
    const resolved = await client.resolveConflict(open!.conflict_id, { resolution: 'keep_current' });
    expect(resolved).toMatchObject({ status: 'resolved', resolution: 'keep_current' });
    expect(await client.listConflicts({ session_id: 'c3', status: 'open' })).toEqual([]);
  });

  it('evaluates, reads the decision, records the outcome and reads it back in history', async () => {
    await client.recordState({
      session_id: 'c4',
      key: 'budget.limit',
      value: '100',
      type: 'fact',
      source: 'user_input',
    });
    const blocked = await client.evaluate({
      session_id: 'c4',
      action: 'payments.transfer',
      params: { amount: 500 },
    });
    expect(blocked).toMatchObject({ verdict: 'Block', allowed: false });
    expect(blocked.reasons.map((r) => r.rule)).toContain('over_budget');

    const allowed = await client.evaluate({
      session_id: 'c4',
      action: 'payments.transfer',
      params: { amount: 50 },
    });
    expect(allowed.verdict).toBe('Allow');
    const record = await client.getDecision(allowed.decision_id);
    expect(record).toMatchObject({ decision_id: allowed.decision_id, params: { amount: 50 } });

    const outcome = await client.recordOutcome(allowed.decision_id, { outcome: 'succeeded', detail: 'paid' });
    expect(outcome).toMatchObject({ type: 'action_outcome', data: { outcome: 'succeeded' } });

    const page = await client.readHistory({ decision_id: allowed.decision_id, order: 'asc' });
    expect(page.events.map((e) => e.type)).toEqual(['gate_evaluation', 'action_outcome']);
    const paged = await client.readHistory({ session_id: 'c4', limit: 1 });
    expect(paged.events).toHaveLength(1);
    expect(paged.next_cursor).not.toBeNull();
    const next = await client.readHistory({ session_id: 'c4', limit: 1, cursor: paged.next_cursor! });
    expect(next.events[0]!.seq).toBeLessThan(paged.events[0]!.seq);

    expect(await client.verifyHistory()).toMatchObject({ ok: true, first_bad_seq: null });
  });

  it('manages webhooks and their deliveries', async () => {
    const created = await client.createWebhook({ url: 'https://hooks.example.com/gh', events: ['*'] });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await client.listWebhooks()).map((w) => w.id)).toContain(created.id);
    expect((await client.getWebhook(created.id)).url).toBe('https://hooks.example.com/gh');

    await client.recordState({
      session_id: 'c5',
      key: 'trip.city',
      value: 'Oslo',
      type: 'fact',
      source: 'user_input',
    });
    const [delivery] = await client.listDeliveries(created.id, { limit: 10 });
    expect(delivery).toMatchObject({ webhook_id: created.id, status: 'pending' });
    expect((await client.redeliver(created.id, delivery!.delivery_id)).delivery_id).toBe(
      delivery!.delivery_id,
    );

    const rotated = await client.rotateWebhookSecret(created.id, { overlap_seconds: 0 });
    expect(rotated.secret).not.toBe(created.secret);
    expect((await client.enableWebhook(created.id)).status).toBe('active');

    await client.deleteWebhook(created.id);
    expect((await errorOf(client.getWebhook(created.id))).code).toBe('not_found');
  });
});

describe('problem+json → GatehouseError', () => {
  it('401: a wrong key is unauthorized', async () => {
    const stranger = createGatehouseClient({ baseUrl: server.url, apiKey: 'gh_not-a-real-key' });
    const error = await errorOf(stranger.listWebhooks());
    expect(error.code).toBe('unauthorized');
    expect(error.message).toMatch(/API key/);
  });

  it('404: an unknown item is not_found, with the detail as message', async () => {
    const error = await errorOf(client.getItem('c1', 'no.such'));
    expect(error.code).toBe('not_found');
    expect(error.message).toBe("State item 'no.such' in session 'c1' was not found.");
  });

  it('422: a bad key is invalid_request with field errors', async () => {
    const error = await errorOf(
      client.recordState({ session_id: 'c1', key: 'nodots', value: 'v', type: 'fact', source: 'user_input' }),
    );
    expect(error.code).toBe('invalid_request');
    expect(error.errors.length).toBeGreaterThan(0);
    expect(error.errors[0]).toMatchObject({ path: expect.any(String), message: expect.any(String) });
  });

  it('422: an unknown type names the field', async () => {
    const error = await errorOf(
      client.recordState({ session_id: 'c1', key: 'a.b', value: 'v', type: 'rumour', source: 'user_input' }),
    );
    expect(error).toMatchObject({ code: 'invalid_request', errors: [{ path: 'type' }] });
  });

  it('403: a source beyond the key is forbidden; 409: a second outcome is already_recorded', async () => {
    const forbidden = await errorOf(
      client.recordState({ session_id: 'c1', key: 'a.b', value: 'v', type: 'fact', source: 'system' }),
    );
    expect(forbidden.code).toBe('forbidden');

    const decision = await client.evaluate({ session_id: 'c6', action: 'search.web' });
    await client.recordOutcome(decision.decision_id, { outcome: 'failed' });
    expect((await errorOf(client.recordOutcome(decision.decision_id, { outcome: 'failed' }))).code).toBe(
      'already_recorded',
    );
  });

  it('maps Retry-After and a foreign error page through an injected dispatcher', async () => {
    const mock = new MockAgent();
    mock.disableNetConnect();
    const pool = mock.get('http://gatehouse.test');
    pool.intercept({ path: '/v1/webhooks', method: 'GET' }).reply(
      429,
      { code: 'rate_limited', detail: 'Slow down.', status: 429 },
      {
        headers: { 'content-type': 'application/problem+json', 'retry-after': '7' },
      },
    );
    pool
      .intercept({ path: '/v1/history/verify', method: 'GET' })
      .reply(502, '<html>Bad gateway</html>', { headers: { 'content-type': 'text/html' } });
    pool.intercept({ path: '/v1/history/verify', method: 'GET' }).reply(200, { ok: 'yes' });
    const mocked = createGatehouseClient({ baseUrl: 'http://gatehouse.test', apiKey: 'k', dispatcher: mock });

    expect(await errorOf(mocked.listWebhooks())).toMatchObject({
      code: 'rate_limited',
      message: 'Slow down.',
      retryAfter: 7,
    });
    const gateway = await errorOf(mocked.verifyHistory());
    expect(gateway.code).toBe('unavailable');
    expect(gateway.message).not.toContain('<html>');
    // A 2xx that breaks the contract is an error, never a half-typed value.
    expect((await errorOf(mocked.verifyHistory())).code).toBe('internal');
    await mock.close();
  });
});

describe('Retry-After', () => {
  it('an HTTP-date becomes the seconds from now; a past one is 0', async () => {
    let retryAfter = '';
    const limited = await rawServer((_req, res) => {
      res
        .writeHead(429, { 'content-type': 'application/problem+json', 'retry-after': retryAfter })
        .end(JSON.stringify({ code: 'rate_limited', detail: 'Slow down.', status: 429 }));
    });
    try {
      const c = createGatehouseClient({ baseUrl: limited.url, apiKey: 'gh_k' });
      retryAfter = new Date(Date.now() + 30_000).toUTCString();
      const soon = await errorOf(c.verifyHistory());
      expect(soon.code).toBe('rate_limited');
      expect(soon.retryAfter).toBeGreaterThanOrEqual(28);
      expect(soon.retryAfter).toBeLessThanOrEqual(30);
      retryAfter = 'Wed, 21 Oct 2015 07:28:00 GMT';
      expect((await errorOf(c.verifyHistory())).retryAfter).toBe(0);
      retryAfter = '12';
      expect((await errorOf(c.verifyHistory())).retryAfter).toBe(12);
    } finally {
      await limited.close();
    }
  });
});

describe('configuration', () => {
  it('keeps a path prefix of baseUrl and sends the key, JSON and the idempotency key', async () => {
    const mock = new MockAgent();
    mock.disableNetConnect();
    mock
      .get('http://gatehouse.test')
      .intercept({
        path: '/gh/v1/decisions/dec_1/outcome',
        method: 'POST',
        headers: {
          authorization: 'Bearer gh_k',
          'content-type': 'application/json',
          'idempotency-key': 'o-1',
        },
        body: JSON.stringify({ outcome: 'succeeded' }),
      })
      .reply(201, {
        event_id: 'evt_1',
        seq: 1,
        type: 'action_outcome',
        session_id: 's',
        occurred_at: '2025-01-01T00:00:00.000Z',
        data: {},
        prev_hash: 'a',
        hash: 'b',
      });
    const prefixed = createGatehouseClient({
      baseUrl: 'http://gatehouse.test/gh/',
      apiKey: 'gh_k',
      dispatcher: mock,
    });
    expect(
      (await prefixed.recordOutcome('dec_1', { outcome: 'succeeded' }, { idempotencyKey: 'o-1' })).seq,
    ).toBe(1);
    mock.assertNoPendingInterceptors();
    await mock.close();
  });

  it('refuses a baseUrl that is not an absolute URL', () => {
    expect(() => createGatehouseClient({ baseUrl: 'localhost:8787', apiKey: 'k' })).toThrow(GatehouseError);
    expect(() => createGatehouseClient({ baseUrl: 'ftp://gatehouse.test', apiKey: 'k' })).toThrow(
      /http\(s\)/,
    );
  });

  it('refuses a baseUrl with a query or fragment, which would swallow every path', () => {
    for (const baseUrl of [
      'http://gatehouse.test/?x=1',
      'http://gatehouse.test#frag',
      'http://gatehouse.test/gh?',
    ]) {
      expect(optionError({ baseUrl, apiKey: 'gh_k' })).toMatchObject({
        code: 'invalid_request',
        message: expect.stringMatching(/^baseUrl must not have a query or fragment/),
        errors: [{ path: 'baseUrl' }],
      });
    }
  });

  it('refuses an apiKey that is empty or holds whitespace, without echoing it', () => {
    for (const apiKey of ['gh_secret\n', ' gh_secret', 'gh_se cret', 'gh_secret\u0000', '', 42]) {
      const error = optionError({ baseUrl: 'http://gatehouse.test', apiKey: apiKey as string });
      expect(error).toMatchObject({ code: 'invalid_request', errors: [{ path: 'apiKey' }] });
      expect(error.message).toMatch(/^apiKey must be a non-empty string of printable/);
      expect(error.message).not.toContain('secret');
    }
    expect(() =>
      createGatehouseClient({ baseUrl: 'http://gatehouse.test', apiKey: 'gh_AZaz09-_' }),
    ).not.toThrow();
  });

  it('refuses a timeoutMs a timer cannot hold, instead of failing every call as unavailable', () => {
    for (const timeoutMs of [Number.POSITIVE_INFINITY, -1, 0, Number.NaN, 1.5, 2 ** 31, '5000']) {
      expect(
        optionError({ baseUrl: 'http://gatehouse.test', apiKey: 'gh_k', timeoutMs: timeoutMs as number }),
      ).toMatchObject({
        code: 'invalid_request',
        message: 'timeoutMs must be a whole number of milliseconds from 1 to 2147483647.',
        errors: [{ path: 'timeoutMs' }],
      });
    }
    for (const timeoutMs of [1, 2 ** 31 - 1]) {
      expect(() =>
        createGatehouseClient({ baseUrl: 'http://gatehouse.test', apiKey: 'gh_k', timeoutMs }),
      ).not.toThrow();
    }
  });
});

/** A loopback server counting the requests it gets (each answered 500): a refused call sends none. */
async function countingServer() {
  let requests = 0;
  const server = await rawServer((_req, res) => {
    requests += 1;
    res.writeHead(500).end();
  });
  return { url: server.url, close: server.close, requests: () => requests };
}

describe('a request the caller got wrong → invalid_request, nothing sent', () => {
  it('a body that cannot be serialised (BigInt, circular) is invalid_request, not unavailable', async () => {
    const counting = await countingServer();
    try {
      const c = createGatehouseClient({ baseUrl: counting.url, apiKey: 'gh_k' });
      const circular: Record<string, unknown> = {};
      circular['self'] = circular;
      for (const params of [{ amount: 10n }, circular]) {
        const error = await errorOf(c.evaluate({ session_id: 's', action: 'payments.transfer', params }));
        expect(error).toMatchObject({ code: 'invalid_request', errors: [{ path: 'body' }] });
        expect(error.message).toMatch(/^The request body cannot be serialised as JSON/);
      }
      expect(counting.requests()).toBe(0);
    } finally {
      await counting.close();
    }
  });

  it('an idempotency key with a control character is invalid_request, not unavailable', async () => {
    const counting = await countingServer();
    try {
      const c = createGatehouseClient({ baseUrl: counting.url, apiKey: 'gh_k' });
      const error = await errorOf(c.evaluate({ session_id: 's', action: 'a.b' }, { idempotencyKey: 'a\nb' }));
      expect(error).toMatchObject({ code: 'invalid_request', errors: [{ path: 'idempotency-key' }] });
      expect(counting.requests()).toBe(0);
    } finally {
      await counting.close();
    }
  });
});

describe('no answer → unavailable', () => {
  it('a server that accepts and never answers times out as unavailable', async () => {
    const silent = await rawServer(() => {
      // Never respond.
    });
    try {
      const slow = createGatehouseClient({ baseUrl: silent.url, apiKey: 'k', timeoutMs: 150 });
      const started = Date.now();
      const error = await errorOf(slow.evaluate({ session_id: 's', action: 'a.b' }));
      expect(error.code).toBe('unavailable');
      expect(error.message).toMatch(/no answer within 150 ms/);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await silent.close();
    }
  });

  it("getApproval's longer deadline stays one a timer can hold, for any timeoutMs and wait", async () => {
    const slow = await rawServer((_req, res) => {
      setTimeout(() => {
        res
          .writeHead(404, { 'content-type': 'application/problem+json' })
          .end(JSON.stringify({ code: 'not_found', detail: 'No such approval.', status: 404 }));
      }, 50);
    });
    try {
      const longest = createGatehouseClient({ baseUrl: slow.url, apiKey: 'gh_k', timeoutMs: 2 ** 31 - 1 });
      expect((await errorOf(longest.getApproval('apr_1', { wait: 1 }))).code).toBe('not_found');
      const usual = createGatehouseClient({ baseUrl: slow.url, apiKey: 'gh_k' });
      expect((await errorOf(usual.getApproval('apr_1', { wait: 0.0001 }))).code).toBe('not_found');
    } finally {
      await slow.close();
    }
  });

  it('a refused connection is unavailable', async () => {
    const gone = await rawServer(() => {});
    await gone.close();
    const error = await errorOf(createGatehouseClient({ baseUrl: gone.url, apiKey: 'k' }).verifyHistory());
    expect(error.code).toBe('unavailable');
    expect(error.message).toContain(gone.url);
  });
});
