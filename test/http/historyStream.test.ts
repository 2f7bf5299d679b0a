/**
 * `GET /v1/history/stream` through both faces (the web handler and a real node:http server on
 * loopback), `GET /v1/me`, and the console's routes and security headers.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readServeConfig } from '../../adapters/cli/config.js';
import {
  createHttpApp,
  type HttpApp,
  type RunningServer,
  startHttpServer,
} from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  GatehouseError,
  type Scope,
  type Store,
  systemRandomBytes,
  type TokenAuthenticator,
} from '../../src/index.js';

let store: Store;
let gh: Gatehouse;
let app: HttpApp;
let admin: string;

async function key(scopes: Scope[], name = 'key', tenantId = 'default') {
  const { secret } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes, name, tenantId },
  );
  return secret;
}

function build(options: Parameters<typeof createHttpApp>[0]['historyStream'] = {}) {
  // A long poll interval: an event that shows up at once was woken by the write, not polled.
  app = createHttpApp({ gatehouse: gh, rateLimit: false, historyStream: { pollMs: 60_000, ...options } });
}

beforeEach(async () => {
  store = openSqliteStore();
  gh = createGatehouse({ store });
  admin = await key(['admin'], 'ops');
  build();
});

afterEach(async () => {
  app.close();
  await store.close();
});

const auth = (k = admin, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${k}`, ...extra });

/** Records `budget.limit` = `value` in `session` through `via`, with key `as`. */
const writeWith = (via: HttpApp, as: string, session: string, value: string) =>
  via.request('/v1/state/items', {
    method: 'POST',
    headers: auth(as, { 'content-type': 'application/json' }),
    body: JSON.stringify({
      session_id: session,
      key: 'budget.limit',
      value,
      type: 'fact',
      source: 'user_input',
    }),
  });

const write = (session: string, value: string) => writeWith(app, admin, session, value);

/** Reads SSE messages from a body until `count` data messages (or a comment matching `until`). */
function sseReader(body: ReadableStream<Uint8Array>) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const comments: string[] = [];
  return {
    comments,
    async next(count: number, until?: RegExp): Promise<Array<{ id: string; data: any }>> {
      const out: Array<{ id: string; data: any }> = [];
      for (;;) {
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
          const id = /^id: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          for (const line of block.split('\n')) if (line.startsWith(':')) comments.push(line);
          if (data !== undefined) out.push({ id: id!, data: JSON.parse(data) });
          if (out.length >= count) return out;
          if (until && comments.some((c) => until.test(c))) return out;
        }
        const { done, value } = await reader.read();
        if (done) return out;
        buffer += value;
      }
    },
    cancel: () => reader.cancel(),
  };
}

describe('GET /v1/history/stream (web face)', () => {
  it('sends events written after it opened, woken by the write', async () => {
    await write('s0', '1');
    const res = await app.request('/v1/history/stream', { headers: auth() });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const sse = sseReader(res.body!);
    await write('s1', '100');
    const [message] = await sse.next(1);
    expect(message!.id).toBe('2');
    expect(message!.data).toMatchObject({ seq: 2, type: 'state_change', session_id: 's1' });
    await sse.cancel();
  });

  it('resumes after Last-Event-ID, and after_seq does the same', async () => {
    for (const v of ['1', '2', '3']) await write('s1', v);
    const res = await app.request('/v1/history/stream', { headers: auth(admin, { 'last-event-id': '1' }) });
    const sse = sseReader(res.body!);
    expect((await sse.next(2)).map((m) => m.data.seq)).toEqual([2, 3]);
    await sse.cancel();
    const again = sseReader((await app.request('/v1/history/stream?after_seq=2', { headers: auth() })).body!);
    expect((await again.next(1)).map((m) => m.data.seq)).toEqual([3]);
    await again.cancel();
  });

  it('filters by session, type and verdict', async () => {
    const res = await app.request('/v1/history/stream?session_id=s2&verdict=Allow&after_seq=0', {
      headers: auth(),
    });
    const sse = sseReader(res.body!);
    await write('s2', '5');
    const evaluate = (session: string) =>
      app.request('/v1/gates/evaluate', {
        method: 'POST',
        headers: auth(admin, { 'content-type': 'application/json' }),
        body: JSON.stringify({ session_id: session, action: 'email.send' }),
      });
    await evaluate('other');
    await evaluate('s2');
    const [message] = await sse.next(1);
    expect(message!.data).toMatchObject({
      type: 'gate_evaluation',
      session_id: 's2',
      data: { verdict: 'Allow' },
    });
    await sse.cancel();
    const typed = sseReader(
      (await app.request('/v1/history/stream?type=state_change&after_seq=0', { headers: auth() })).body!,
    );
    expect((await typed.next(1))[0]!.data).toMatchObject({ type: 'state_change', session_id: 's2' });
    await typed.cancel();
  });

  it('sends a heartbeat comment while nothing happens', async () => {
    build({ heartbeatMs: 30 });
    const sse = sseReader((await app.request('/v1/history/stream', { headers: auth() })).body!);
    expect(await sse.next(1, /heartbeat/)).toEqual([]);
    expect(sse.comments).toContain(': heartbeat');
    await sse.cancel();
  });

  it('is bounded: past the limit 503, and a cancelled stream frees its place', async () => {
    build({ maxStreams: 1 });
    const first = await app.request('/v1/history/stream', { headers: auth() });
    const sse = sseReader(first.body!);
    await sse.next(0);
    const refused = await app.request('/v1/history/stream', { headers: auth() });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    await sse.cancel();
    const second = await app.request('/v1/history/stream', { headers: auth() });
    expect(second.status).toBe(200);
    await second.body!.cancel();
  });

  it('limits open streams per key and per tenant (429 naming the limit), so another tenant still gets one', async () => {
    build({ maxStreamsPerKey: 1, maxStreamsPerTenant: 2, maxStreams: 3 });
    const [a1, a2, a3] = [admin, await key(['history:read'], 'a2'), await key(['history:read'], 'a3')];
    const [b1, b2] = [await key(['admin'], 'b1', 'b'), await key(['admin'], 'b2', 'b')];
    const open = (k: string) => app.request('/v1/history/stream', { headers: auth(k) });
    const held = [await open(a1)];
    const perKey = await open(a1);
    expect(perKey.status).toBe(429);
    expect(perKey.headers.get('retry-after')).toBe('5');
    expect(await perKey.json()).toMatchObject({
      code: 'rate_limited',
      detail: expect.stringContaining('This API key'),
    });
    held.push(await open(a2));
    const perTenant = await open(a3);
    expect(perTenant.status).toBe(429);
    expect(await perTenant.json()).toMatchObject({
      code: 'rate_limited',
      detail: expect.stringContaining('This tenant'),
    });
    const other = await open(b1);
    expect(other.status).toBe(200);
    held.push(other);
    // The server's own bound still holds past that.
    expect((await open(b2)).status).toBe(503);
    for (const res of held) {
      expect(res.status).toBe(200);
      await res.body!.cancel();
    }
    // Every place was given back.
    const again = await open(a1);
    expect(again.status).toBe(200);
    await again.body!.cancel();
  });

  it('ends after its maximum lifetime with a comment saying so', async () => {
    build({ maxLifetimeMs: 20 });
    const sse = sseReader((await app.request('/v1/history/stream', { headers: auth() })).body!);
    expect(await sse.next(1)).toEqual([]);
    expect(sse.comments).toContain(
      ': closed: the stream reached its maximum lifetime; reconnect with Last-Event-ID',
    );
  });

  it('ends open streams when the app closes', async () => {
    const sse = sseReader((await app.request('/v1/history/stream', { headers: auth() })).body!);
    await sse.next(0);
    app.close();
    expect(await sse.next(1)).toEqual([]);
  });

  it('ends when its key is revoked, before sending another event', async () => {
    const reader = await key(['history:read'], 'reader');
    const sse = sseReader((await app.request('/v1/history/stream', { headers: auth(reader) })).body!);
    await write('s1', '1');
    expect((await sse.next(1))[0]!.data).toMatchObject({ seq: 1 });
    const [stored] = (await store.listApiKeys()).filter((k) => k.name === 'reader');
    expect(await store.revokeApiKey(stored!.id, new Date().toISOString())).toBe(true);
    await write('s1', '2');
    expect(await sse.next(1)).toEqual([]);
    expect(sse.comments).toContain(': closed: the API key was revoked');
    expect((await app.request('/v1/history/stream', { headers: auth(reader) })).status).toBe(401);
  });

  /**
   * Serves `app` with bearer tokens that `refusal` may turn away (none: a token holder with
   * `history:read`), opens a stream with one, and reads the first event written after it.
   */
  async function tokenStream(refusal: () => GatehouseError | undefined) {
    const tokens: TokenAuthenticator = {
      issuers: ['https://idp.test'],
      scopesSupported: [],
      scopesGranting: () => [],
      async authenticate() {
        const refused = refusal();
        if (refused) throw refused;
        return {
          tenantId: 'default',
          keyId: 'sub_0123456789abcdef',
          scopes: ['history:read'],
          sources: [],
          labels: [],
          record: { kind: 'oidc', iss: 'https://idp.test', sub: 'user-1' },
        };
      },
    };
    app.close();
    app = createHttpApp({
      gatehouse: gh,
      rateLimit: false,
      historyStream: { pollMs: 60_000 },
      identity: { tokens, publicUrl: 'http://gatehouse.test' },
    });
    const sse = sseReader(
      (await app.request('/v1/history/stream', { headers: auth('header.payload.sig') })).body!,
    );
    await write('s1', '1');
    expect((await sse.next(1))[0]!.data).toMatchObject({ seq: 1 });
    return sse;
  }

  it('ends, saying why, when a token can no longer be checked because its issuer is down', async () => {
    let down = false;
    const sse = await tokenStream(() =>
      down
        ? new GatehouseError('unavailable', 'The key set of https://idp.test answered HTTP 503.')
        : undefined,
    );
    down = true;
    await write('s1', '2');
    expect(await sse.next(1)).toEqual([]);
    expect(sse.comments).toContain(
      ': closed: the token cannot be checked now (its identity provider is unavailable); reconnect with Last-Event-ID',
    );
    expect((await app.request('/v1/history/stream', { headers: auth('header.payload.sig') })).status).toBe(
      503,
    );
  });

  it('ends, saying why, when its token is no longer accepted (it expired)', async () => {
    let expired = false;
    const sse = await tokenStream(() =>
      expired ? new GatehouseError('unauthorized', 'The token has expired.') : undefined,
    );
    expired = true;
    await write('s1', '2');
    expect(await sse.next(1)).toEqual([]);
    expect(sse.comments).toContain(': closed: the token is no longer accepted (The token has expired.)');
  });

  it('ends when another process revokes its key (`gatehouse keys revoke` on the same database file)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-revoke-'));
    const filename = join(dir, 'gatehouse.db');
    const served = openSqliteStore({ filename });
    const cli = openSqliteStore({ filename });
    try {
      const made = await createApiKey(
        served,
        { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
        { scopes: ['admin'], name: 'file' },
      );
      const fileApp = createHttpApp({ gatehouse: createGatehouse({ store: served }), rateLimit: false });
      const sse = sseReader(
        (await fileApp.request('/v1/history/stream', { headers: auth(made.secret) })).body!,
      );
      await sse.next(0);
      expect(await cli.revokeApiKey(made.key.id, new Date().toISOString())).toBe(true);
      const written = await writeWith(fileApp, made.secret, 'f', '1');
      expect(written.status).toBe(401);
      // A write by a key that still works wakes the stream: it checks its own key and ends.
      const other = await createApiKey(
        cli,
        { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
        { scopes: ['admin'], name: 'other' },
      );
      const ok = await writeWith(fileApp, other.secret, 'f', '2');
      expect(ok.status).toBe(201);
      expect(await sse.next(1)).toEqual([]);
      expect(sse.comments).toContain(': closed: the API key was revoked');
      fileApp.close();
    } finally {
      await served.close();
      await cli.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a bad Last-Event-ID, a missing key and a key without history:read', async () => {
    const bad = await app.request('/v1/history/stream', { headers: auth(admin, { 'last-event-id': 'x' }) });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as any).code).toBe('invalid_request');
    expect((await app.request('/v1/history/stream')).status).toBe(401);
    const writer = await key(['state:write']);
    expect((await app.request('/v1/history/stream', { headers: auth(writer) })).status).toBe(403);
    const unknown = await app.request('/v1/history/stream?verdict=Maybe', { headers: auth() });
    expect(unknown.status).toBe(422);
  });
});

describe('GET /v1/history/stream (node:http face)', () => {
  let server: RunningServer;
  afterEach(async () => {
    app.close();
    await server?.close(100);
  });

  it('streams over a real socket and frees the stream when the client goes away', async () => {
    build({ maxStreams: 1 });
    server = await startHttpServer(app, { port: 0 });
    const abort = new AbortController();
    const res = await fetch(`${server.url}/v1/history/stream`, { headers: auth(), signal: abort.signal });
    expect(res.status).toBe(200);
    const sse = sseReader(res.body!);
    await sse.next(0);
    await fetch(`${server.url}/v1/state/items`, {
      method: 'POST',
      headers: auth(admin, { 'content-type': 'application/json' }),
      body: JSON.stringify({
        session_id: 'n1',
        key: 'budget.limit',
        value: '7',
        type: 'fact',
        source: 'user_input',
      }),
    });
    expect((await sse.next(1))[0]!.data).toMatchObject({ session_id: 'n1', seq: 1 });
    abort.abort();
    // The server notices the closed socket and gives the place back.
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      const again = await fetch(`${server.url}/v1/history/stream`, { headers: auth() });
      status = again.status;
      await again.body?.cancel();
      if (status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(200);
  });

  it('disconnects a client that stops reading, and gives its place back', async () => {
    build({ maxStreams: 1, stallMs: 40 });
    server = await startHttpServer(app, { port: 0 });
    // A raw socket that sends the request and never reads: once its buffers are full, the
    // server's writes wait for a drain that never comes.
    const socket = connect(server.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause();
    socket.write(
      `GET /v1/history/stream?after_seq=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${admin}\r\n\r\n`,
    );
    const closed = new Promise((resolve) => socket.once('close', resolve));
    const big = 'lorem ipsum '.repeat(1300);
    let status = 0;
    // ~16 KB per event: a few hundred fill the loopback buffers; then the stall bound runs out.
    for (let i = 0; i < 2000 && status !== 200; i++) {
      expect((await writeWith(app, admin, 'big', `${big}${i}`)).status).toBe(201);
      if (i % 20 !== 19) continue;
      const again = await fetch(`${server.url}/v1/history/stream`, { headers: auth() });
      status = again.status;
      await again.body?.cancel();
      if (i >= 600) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(200);
    // The connection is closed: what was buffered is readable, then the end.
    socket.resume();
    await closed;
  });
});

describe('GET /v1/me', () => {
  it('describes the calling key, for any valid key', async () => {
    const evaluator = await key(['gate:evaluate'], 'agent');
    const res = await app.request('/v1/me', { headers: auth(evaluator) });
    expect(res.status).toBe(200);
    const me = (await res.json()) as any;
    expect(me).toMatchObject({ name: 'agent', tenant_id: 'default', scopes: ['gate:evaluate'] });
    expect(me.key_id).toMatch(/^key_/);
    expect(JSON.stringify(me)).not.toContain(evaluator);
    expect((await app.request('/v1/me')).status).toBe(401);
  });
});

describe('the console routes', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-ui-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('are off unless asked for', async () => {
    expect((await app.request('/ui/')).status).toBe(404);
  });

  it('serve the shell, the stylesheet and the modules with a strict CSP', async () => {
    const assets = join(dir, 'console');
    mkdirSync(assets);
    writeFileSync(join(assets, 'main.js'), 'export {};\n');
    app = createHttpApp({ gatehouse: gh, rateLimit: false, console: { assetsDir: assets } });
    const redirect = await app.request('/ui');
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get('location')).toBe('ui/');
    const shell = await app.request('/ui/');
    expect(shell.status).toBe(200);
    const csp = shell.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(shell.headers.get('x-content-type-options')).toBe('nosniff');
    expect(shell.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await shell.text();
    expect(html).toContain('<script type="module" src="assets/main.js"></script>');
    expect(html).not.toMatch(/<script>|<style>|https?:\/\//);
    const js = await app.request('/ui/assets/main.js');
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await js.text()).toBe('export {};\n');
    const css = await app.request('/ui/assets/console.css');
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).not.toMatch(/@import|url\(/);
    // The shell names its icon, so a browser does not ask for /favicon.ico (a 404 on every load).
    expect(html).toContain('<link rel="icon" href="assets/favicon.svg" type="image/svg+xml">');
    const icon = await app.request('/ui/assets/favicon.svg');
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await icon.text()).toMatch(
      /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>\n$/,
    );
    expect((await app.request('/ui/assets/nope.js')).status).toBe(404);
    expect((await app.request('/ui/assets/..%2Fmain.js')).status).toBe(404);
  });

  it('answer 503 with what to do when the console is not built', async () => {
    app = createHttpApp({ gatehouse: gh, rateLimit: false, console: { assetsDir: join(dir, 'missing') } });
    const res = await app.request('/ui/');
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).detail).toContain('npm run build');
  });

  it('`serve --no-ui` (or GATEHOUSE_UI=0) turns the console off', () => {
    expect(readServeConfig({}).ui).toBe(true);
    expect(readServeConfig({ ui: false }).ui).toBe(false);
  });
});
