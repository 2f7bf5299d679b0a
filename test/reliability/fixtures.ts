/**
 * Shared by the reliability suite: the /v1 route table, an in-process app with keys for every
 * auth case, the real `gatehouse serve` process, and loopback webhook receivers.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { createHttpApp, type HttpAppOptions } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type CompiledPolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type Scope,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';

export const root = join(import.meta.dirname, '../..');
export const cli = join(root, 'dist/adapters/cli/main.js');

// ---- the route table --------------------------------------------------------------------------

/** Path parameters a route reads; filled from real objects or fuzzed. */
export type PathParam =
  | 'key'
  | 'version'
  | 'conflict'
  | 'decision'
  | 'webhook'
  | 'delivery'
  | 'approval'
  | 'revision'
  | 'hold';

/** One /v1 route: how to call it and the scope it needs. */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Hono's pattern, as `app.routes` lists it. */
  pattern: string;
  /** `null`: any valid key (`GET /v1/me`). */
  scope: Scope | null;
  /** Other scopes that also grant the route (any one of them will do). */
  anyOf?: readonly Scope[];
  params: readonly PathParam[];
  /** Required query (the route answers 422 without it). */
  query?: Record<string, string>;
  /** A body the route accepts, for the valid request of each case. */
  body?: () => unknown;
}

/** Every authenticated /v1 route (the route-table test pins it against `app.routes`). */
export const ROUTES: readonly Route[] = [
  {
    method: 'POST',
    pattern: '/v1/state/items',
    scope: 'state:write',
    params: [],
    body: () => ({ session_id: 's1', key: 'budget.note', value: 'x', type: 'fact', source: 'user_input' }),
  },
  { method: 'GET', pattern: '/v1/state/items', scope: 'state:read', params: [], query: { session_id: 's1' } },
  {
    method: 'GET',
    pattern: '/v1/state/items/:key',
    scope: 'state:read',
    params: ['key'],
    query: { session_id: 's1' },
  },
  {
    method: 'GET',
    pattern: '/v1/state/items/:key/versions',
    scope: 'state:read',
    params: ['key'],
    query: { session_id: 's1' },
  },
  {
    method: 'GET',
    pattern: '/v1/state/items/:key/versions/:version',
    scope: 'state:read',
    params: ['key', 'version'],
    query: { session_id: 's1' },
  },
  { method: 'GET', pattern: '/v1/state/conflicts', scope: 'state:read', params: [] },
  { method: 'GET', pattern: '/v1/state/conflicts/:id', scope: 'state:read', params: ['conflict'] },
  {
    method: 'POST',
    pattern: '/v1/state/conflicts/:id/resolve',
    scope: 'state:write',
    params: ['conflict'],
    body: () => ({ resolution: 'keep_current' }),
  },
  {
    method: 'POST',
    pattern: '/v1/gates/evaluate',
    scope: 'gate:evaluate',
    params: [],
    body: () => ({ session_id: 's1', action: 'payments.transfer', params: { amount: 10 } }),
  },
  { method: 'GET', pattern: '/v1/decisions/:id', scope: 'history:read', params: ['decision'] },
  {
    method: 'POST',
    pattern: '/v1/decisions/:id/outcome',
    scope: 'gate:evaluate',
    params: ['decision'],
    body: () => ({ outcome: 'succeeded' }),
  },
  { method: 'GET', pattern: '/v1/history/events', scope: 'history:read', params: [] },
  { method: 'GET', pattern: '/v1/history/verify', scope: 'history:read', params: [] },
  {
    method: 'POST',
    pattern: '/v1/erasures',
    scope: 'data:erase',
    params: [],
    // A dry run: the matrix calls every route many times, and the world's sessions must stay.
    body: () => ({ session_id: 's1', dry_run: true }),
  },
  {
    method: 'POST',
    pattern: '/v1/erasures/subject',
    scope: 'data:erase',
    params: [],
    body: () => ({ subject: 'p-1', dry_run: true }),
  },
  {
    method: 'POST',
    pattern: '/v1/subject-tags',
    scope: 'state:write',
    params: [],
    body: () => ({ session_id: 's1', subject: 'p-1' }),
  },
  { method: 'GET', pattern: '/v1/retention', scope: 'admin', params: [] },
  {
    method: 'PUT',
    pattern: '/v1/retention',
    scope: 'admin',
    params: [],
    body: () => ({ values_after: '400d' }),
  },
  {
    method: 'POST',
    pattern: '/v1/legal-holds',
    scope: 'admin',
    params: [],
    // A session nothing else in the world uses, so the holds never refuse another route's call.
    body: () => ({ session_id: 'held-only', reference: 'CASE-1' }),
  },
  { method: 'GET', pattern: '/v1/legal-holds', scope: 'admin', params: [] },
  { method: 'DELETE', pattern: '/v1/legal-holds/:id', scope: 'admin', params: ['hold'] },
  { method: 'GET', pattern: '/v1/me', scope: null, params: [] },
  {
    method: 'POST',
    pattern: '/v1/webhooks',
    scope: 'webhooks:manage',
    params: [],
    body: () => ({ url: 'https://hooks.example.com/x', events: ['*'] }),
  },
  { method: 'GET', pattern: '/v1/webhooks', scope: 'webhooks:manage', params: [] },
  { method: 'GET', pattern: '/v1/webhooks/:id', scope: 'webhooks:manage', params: ['webhook'] },
  { method: 'DELETE', pattern: '/v1/webhooks/:id', scope: 'webhooks:manage', params: ['webhook'] },
  {
    method: 'POST',
    pattern: '/v1/webhooks/:id/rotate-secret',
    scope: 'webhooks:manage',
    params: ['webhook'],
    body: () => ({ overlap_seconds: 0 }),
  },
  { method: 'POST', pattern: '/v1/webhooks/:id/enable', scope: 'webhooks:manage', params: ['webhook'] },
  {
    method: 'GET',
    pattern: '/v1/webhooks/:id/deliveries',
    scope: 'webhooks:manage',
    params: ['webhook'],
  },
  {
    method: 'POST',
    pattern: '/v1/webhooks/:id/deliveries/:delivery_id/redeliver',
    scope: 'webhooks:manage',
    params: ['webhook', 'delivery'],
  },
  { method: 'GET', pattern: '/v1/approvals', scope: 'approvals:decide', params: [] },
  {
    method: 'GET',
    pattern: '/v1/approvals/:id',
    scope: 'gate:evaluate',
    anyOf: ['approvals:decide'],
    params: ['approval'],
  },
  {
    method: 'POST',
    pattern: '/v1/approvals/:id/approve',
    scope: 'approvals:decide',
    params: ['approval'],
    body: () => ({ comment: 'ok' }),
  },
  {
    method: 'POST',
    pattern: '/v1/approvals/:id/deny',
    scope: 'approvals:decide',
    params: ['approval'],
    body: () => ({}),
  },
  { method: 'GET', pattern: '/v1/policy', scope: 'history:read', params: [] },
  {
    method: 'PUT',
    pattern: '/v1/policy',
    scope: 'policy:write',
    params: [],
    // Without If-Match: 428 for the right scope (the fuzzing sends every header).
    body: () => ({ policy: 'version: 1\n' }),
  },
  { method: 'GET', pattern: '/v1/policy/revisions', scope: 'history:read', params: [] },
  { method: 'GET', pattern: '/v1/policy/revisions/:id', scope: 'history:read', params: ['revision'] },
  {
    method: 'POST',
    pattern: '/v1/policy/replay',
    scope: 'policy:write',
    params: [],
    body: () => ({ policy: 'version: 1\ndefault_verdict: Block\n', examples: 2 }),
  },
];

/** The route's path with its parameters filled in (each percent-encoded). */
export function pathOf(route: Route, values: Partial<Record<PathParam, string>>): string {
  let i = 0;
  return route.pattern.replace(/:[a-z_]+/g, () => {
    const name = route.params[i++]!;
    return encodeURIComponent(values[name] ?? '');
  });
}

/** Path and query of the route's valid request. */
export function urlOf(route: Route, values: Partial<Record<PathParam, string>>): string {
  const query = route.query ? `?${new URLSearchParams(route.query)}` : '';
  return pathOf(route, values) + query;
}

// ---- an in-process service with a key for each case --------------------------------------------

export const POLICY = `
version: 1
actions:
  "payments.*":
    requires:
      - key: budget.limit
        min_trust: user_input
    rules:
      - name: over_budget
        when: "has(params.amount) && double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}"
  "refunds.*":
    rules:
      - name: refund_review
        when: "true"
        verdict: Block
        approval: { expires_in: 1h }
`;

/** A pino logger writing JSON lines into memory, at `debug`. */
export function memoryLogger(): { logger: Logger; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), text: () => chunks.join('') };
}

export interface World {
  store: Store;
  gh: Gatehouse;
  app: ReturnType<typeof createHttpApp>;
  /** Secrets of the keys, by case. */
  keys: {
    admin: string;
    revoked: string;
    otherTenant: string;
    /** A key holding only this scope. */
    scoped: Record<Scope, string>;
  };
  /** Objects of the default tenant that exist. */
  ids: Record<PathParam, string>;
}

/** A key with one scope cannot do anything else: `noScope` holds a scope no route needs alone. */
export async function createWorld(
  options: { policy?: CompiledPolicy; app?: Omit<HttpAppOptions, 'gatehouse'>; store?: Store } = {},
): Promise<World> {
  const store = options.store ?? openSqliteStore();
  const gh = createGatehouse({ store, ...(options.policy ? { policy: options.policy } : {}) });
  const app = createHttpApp({ gatehouse: gh, rateLimit: false, ...options.app });
  const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
  const make = async (scopes: Scope[], tenantId = 'default') =>
    createApiKey(store, deps, { scopes, tenantId, sources: ['user_input', 'tool_output'] });
  const admin = (await make(['admin'])).secret;
  const revokedKey = await make(['admin']);
  await store.revokeApiKey(revokedKey.key.id, new Date().toISOString());
  const otherTenant = (await make(['admin'], 'other')).secret;
  const scoped = {} as Record<Scope, string>;
  for (const scope of [
    'state:write',
    'state:read',
    'gate:evaluate',
    'history:read',
    'webhooks:manage',
    'approvals:decide',
    'policy:write',
    'data:erase',
    'admin',
  ] as const) {
    scoped[scope] = (await make([scope])).secret;
  }

  const budget = { session_id: 's1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' };
  await gh.recordState(budget);
  const { conflict } = await gh.recordState({ ...budget, value: '1', source: 'tool_output' });
  const decision = await gh.evaluate({
    session_id: 's1',
    action: 'payments.transfer',
    params: { amount: 10 },
  });
  const webhook = await gh.createWebhook({ url: 'https://hooks.example.com/x', events: ['*'] });
  await gh.recordState({ ...budget, key: 'budget.currency', value: 'EUR' });
  const [delivery] = await gh.listDeliveries(webhook.id);
  const held = await gh.evaluate({ session_id: 's1', action: 'refunds.issue', params: { order: 'o-1' } });
  const active = await gh.activatePolicy({
    // The world's own policy plus an entry nothing uses: a stored revision that decides the same.
    policy: `${gh.policy.source.trimEnd()}\n  "world.unused":\n    rules: []\n`,
    expected_revision: gh.policy.revision,
  });
  const hold = await gh.placeHold({ session_id: 'held-only', reference: 'CASE-0' });
  return {
    store,
    gh,
    app,
    keys: { admin, revoked: revokedKey.secret, otherTenant, scoped },
    ids: {
      key: 'budget.limit',
      version: '1',
      conflict: conflict!.conflict_id,
      decision: decision.decision_id,
      webhook: webhook.id,
      delivery: delivery!.delivery_id,
      approval: held.approval!.id,
      revision: active.revision,
      hold: hold.hold_id,
    },
  };
}

/** A parsed response. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Calls the in-process app (no socket). */
export async function call(
  app: World['app'],
  method: string,
  path: string,
  options: { key?: string | null; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers['authorization'] = `Bearer ${options.key}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  return answer(await app.request(path, { method, headers, ...(body === undefined ? {} : { body }) }));
}

// ---- the real process ---------------------------------------------------------------------------

/** A running `gatehouse serve`. */
export interface ServeProcess {
  proc: ChildProcess;
  url: string;
  /** The bootstrap admin key, on a first start. */
  key: string | undefined;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
}

/** Starts `gatehouse serve --port 0 …args` and resolves once it listens. */
export async function startServe(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [cli, 'serve', '--port', '0', ...args], {
    cwd: options.cwd ?? root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, GATEHOUSE_LOG_LEVEL: 'warn', ...options.env },
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => {
    out += d;
  });
  proc.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | string>((resolve) =>
    proc.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`serve did not start:\n${out}\n${err}`)),
      options.timeoutMs ?? 20_000,
    );
    const check = () => {
      if (/Stop with Ctrl-C/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited ${code}:\n${out}\n${err}`));
    });
  });
  return {
    proc,
    url: /listening on (http:\/\/\S+)/.exec(out)![1]!,
    key: /export GATEHOUSE_KEY=(\S+)/.exec(out)?.[1],
    stdout: () => out,
    stderr: () => err,
    exited,
  };
}

/** SIGTERM (or `signal`) and wait for the exit. */
export async function stopServe(serve: ServeProcess, signal: NodeJS.Signals = 'SIGTERM') {
  if (serve.proc.exitCode === null && serve.proc.signalCode === null) serve.proc.kill(signal);
  return serve.exited;
}

// ---- loopback webhook receivers -----------------------------------------------------------------

export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  /** What the receiver answered. */
  status: number;
}

/** A receiver on 127.0.0.1 whose status is decided per request; `close()` frees the port. */
export async function startReceiver(status: (n: number, req: IncomingMessage) => number) {
  const received: Received[] = [];
  const server: Server = createServer((req, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const answer = status(received.length + 1, req);
      received.push({ headers: req.headers, body, status: answer });
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Polls `check` every 50 ms until it returns true, or fails after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string) {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
