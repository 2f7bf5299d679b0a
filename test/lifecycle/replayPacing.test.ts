/**
 * A replay shares the process: it runs in slices, so the service answers while one runs; it stops
 * when its HTTP client disconnects (and records nothing); and it stops at its time budget, saying
 * where to continue. Asserted by the order of events, never by durations.
 */
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createHttpApp,
  createMetrics,
  type RunningServer,
  startHttpServer,
} from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  replayDecisions,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { BUDGET_POLICY } from '../support/policies.js';

/** Enough decisions for a replay of many slices (each slice is at most 200 events). */
const DECISIONS = 4000;

let store: Store;
let gatehouse: Gatehouse;
let server: RunningServer;
/** The same app through @hono/node-server's listener (web `Request`s, whose signal it aborts). */
let honoServer: Server;
let honoUrl: string;
let admin: string;
/** Called with each `queryEvents` query the store answers. */
let onQuery: (query: { order?: string }) => void = () => {};
/** Called with the status of each finished `POST /v1/policy/replay`. */
let onReplayAnswered: (status: number) => void = () => {};

beforeAll(async () => {
  store = openSqliteStore();
  const queryEvents = store.queryEvents.bind(store);
  store.queryEvents = (tenantId, query) => {
    onQuery(query);
    return queryEvents(tenantId, query);
  };
  gatehouse = createGatehouse({ store, policy: compilePolicy(BUDGET_POLICY) });
  await gatehouse.recordState({
    session_id: 's',
    key: 'budget.limit',
    value: '5000',
    type: 'fact',
    source: 'user_input',
  });
  for (let i = 0; i < DECISIONS; i++) {
    await gatehouse.evaluate({
      session_id: `s${i % 20}`,
      action: 'payments.transfer',
      params: { amount: i },
    });
  }
  const metrics = createMetrics();
  const app = createHttpApp({
    gatehouse,
    rateLimit: false,
    metrics: {
      ...metrics,
      observeRequest(method, route, status, seconds) {
        metrics.observeRequest(method, route, status, seconds);
        if (route === '/v1/policy/replay') onReplayAnswered(status);
      },
    },
  });
  server = await startHttpServer(app, { port: 0 });
  honoServer = createServer(getRequestListener(app.fetch));
  await new Promise<void>((resolve) => honoServer.listen(0, '127.0.0.1', resolve));
  honoUrl = `http://127.0.0.1:${(honoServer.address() as AddressInfo).port}`;
  const made = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['admin'] },
  );
  admin = made.secret;
});

afterAll(async () => {
  honoServer?.closeAllConnections();
  await new Promise((resolve) => honoServer?.close(resolve));
  await server?.close(0);
  await store?.close();
});

/** Resolves when the replay reads its first page of history: it is under way. */
function replayUnderWay(): Promise<void> {
  return new Promise((resolve) => {
    onQuery = (query) => {
      if (query.order !== 'asc') return;
      onQuery = () => {};
      resolve();
    };
  });
}

function replayRequest(agent: Agent, url = server.url) {
  return httpRequest(`${url}/v1/policy/replay`, {
    method: 'POST',
    agent,
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
  });
}

/** GET on its own kept-alive connection (opened beforehand, so one request needs one round trip). */
function get(agent: Agent, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    httpRequest(`${server.url}${path}`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}

async function replayedEvents(): Promise<number> {
  return (await store.queryEvents('default', { type: 'policy.replayed', order: 'desc', limit: 10 })).length;
}

describe('a replay shares the process', () => {
  it('lets /healthz answer while it runs, then finishes', async () => {
    const healthAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    const replayAgent = new Agent({ keepAlive: false });
    try {
      expect(await get(healthAgent, '/healthz')).toBe(200);
      const order: string[] = [];
      const underWay = replayUnderWay();
      const replayed = new Promise<{ decisions: number; stopped_by: unknown }>((resolve, reject) => {
        const req = replayRequest(replayAgent);
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => {
            body += chunk;
          });
          res.on('end', () => {
            order.push('replay');
            resolve(JSON.parse(body));
          });
        });
        req.on('error', reject);
        req.end(JSON.stringify({ policy: BUDGET_POLICY, examples: 0 }));
      });
      await underWay;
      const health = get(healthAgent, '/healthz').then((status) => {
        order.push('healthz');
        return status;
      });
      const [report, status] = await Promise.all([replayed, health]);
      expect(status).toBe(200);
      expect(order).toEqual(['healthz', 'replay']);
      expect(report).toMatchObject({ decisions: DECISIONS, stopped_by: null });
      expect(await replayedEvents()).toBe(1);
    } finally {
      healthAgent.destroy();
      replayAgent.destroy();
    }
  });

  it.each([
    ['the node:http listener', () => server.url],
    ["@hono/node-server's listener", () => honoUrl],
  ])('stops when its client disconnects, and records nothing (%s)', async (face, url) => {
    const before = await replayedEvents();
    const agent = new Agent({ keepAlive: false });
    const body = JSON.stringify({ policy: BUDGET_POLICY, examples: 1 });
    const idempotencyKey = `gone-${face}`;
    try {
      const underWay = replayUnderWay();
      const answered = new Promise<number>((resolve) => {
        onReplayAnswered = resolve;
      });
      const req = replayRequest(agent, url());
      req.setHeader('idempotency-key', idempotencyKey);
      req.on('error', () => {}); // the socket this test destroys
      req.end(body);
      await underWay;
      req.destroy();
      // 499: the operation ended on its aborted signal rather than with a report.
      expect(await answered).toBe(499);
      expect(await replayedEvents()).toBe(before);

      // A retry with the same Idempotency-Key runs the replay: nothing was kept for the first.
      const retry = await fetch(`${url()}/v1/policy/replay`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${admin}`,
          'content-type': 'application/json',
          'idempotency-key': idempotencyKey,
        },
        body,
      });
      expect(retry.status).toBe(200);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      expect(await retry.json()).toMatchObject({ decisions: DECISIONS });
      expect(await replayedEvents()).toBe(before + 1);
    } finally {
      onReplayAnswered = () => {};
      agent.destroy();
    }
  });
});

describe('a replay within a time budget', () => {
  it('stops after a decision past its budget, says so, and the rest continues from there', async () => {
    const candidate = compilePolicy(BUDGET_POLICY);
    // A clock that moves 1 ms per reading: the budget runs out after a few dozen decisions.
    let now = 0;
    const timer = () => now++;
    const first = await replayDecisions({ store, tenantId: 'default', candidate, timeBudgetMs: 100, timer });
    expect(first).toMatchObject({ stopped_by: 'time_budget', next_after_seq: expect.any(Number) });
    expect(first.decisions).toBeGreaterThan(0);
    expect(first.decisions).toBeLessThan(DECISIONS);
    const rest = await replayDecisions({
      store,
      tenantId: 'default',
      candidate,
      afterSeq: first.next_after_seq!,
    });
    expect(rest).toMatchObject({ stopped_by: null, next_after_seq: null });
    expect(first.decisions + rest.decisions).toBe(DECISIONS);
  });

  it('rejects with the abort reason once its signal aborts, and the core records nothing', async () => {
    const before = await replayedEvents();
    const controller = new AbortController();
    let seen = 0;
    await expect(
      replayDecisions({
        store,
        tenantId: 'default',
        candidate: compilePolicy(BUDGET_POLICY),
        signal: controller.signal,
        onDecision: () => {
          if (++seen === 10) controller.abort();
        },
      }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    // It stopped at its next step, not at the end of its slice or of the history.
    expect(seen).toBe(10);
    const aborted = new AbortController();
    aborted.abort();
    await expect(
      gatehouse.replayPolicy({ policy: BUDGET_POLICY }, { signal: aborted.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(await replayedEvents()).toBe(before);
  });
});
