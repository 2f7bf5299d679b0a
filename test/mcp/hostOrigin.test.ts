/**
 * DNS-rebinding protection of `/mcp` over real loopback HTTP: a browser page on a name that
 * resolves to 127.0.0.1 (Host `evil.example.com`) or any other site (Origin) is refused with 403
 * before MCP runs, even with a valid key; loopback names and clients that send no Origin pass.
 * Hostile headers are sent with undici's `request`, which sends Host as given (fetch would not).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import {
  createHostOriginCheck,
  createMcpHttpHandler,
  defaultAllowedHosts,
  type HostOriginCheckOptions,
  isWildcardAddress,
} from '../../adapters/mcp/index.js';
import { createApiKey, createIdGenerator, type Gatehouse, systemRandomBytes } from '../../src/index.js';
import { budgetGatehouse } from './fixtures.js';

let gh: Gatehouse;
let key: string;
const servers: RunningServer[] = [];

/** A loopback server whose /mcp has these allow-lists. */
async function serve(options: HostOriginCheckOptions = {}): Promise<RunningServer> {
  const app = createHttpApp({
    gatehouse: gh,
    mcp: createMcpHttpHandler({ gatehouse: gh, ...options }),
    rateLimit: false,
  });
  const server = await startHttpServer(app.fetch, { host: '127.0.0.1', port: 0 });
  servers.push(server);
  return server;
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** POSTs `initialize` to /mcp with these Host and Origin headers (undefined: not sent / the real host). */
async function post(
  server: RunningServer,
  headers: { host?: string; origin?: string; method?: 'POST' | 'GET' },
): Promise<{ status: number; body: any }> {
  const res = await request(`${server.url}/mcp`, {
    method: headers.method ?? 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(headers.host === undefined ? {} : { host: headers.host }),
      ...(headers.origin === undefined ? {} : { origin: headers.origin }),
    },
    ...(headers.method === 'GET' ? {} : { body: INITIALIZE }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

function refusal(message: string) {
  return { status: 403, body: { jsonrpc: '2.0', error: { code: -32000, message }, id: null } };
}

beforeAll(async () => {
  gh = budgetGatehouse();
  const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
  key = (await createApiKey(gh.store, deps, { scopes: ['admin'] })).secret;
});

afterAll(async () => {
  for (const server of servers) await server.close();
  await gh.store.close();
});

describe('/mcp with the default allow-lists (loopback)', () => {
  let server: RunningServer;
  let port: string;
  beforeAll(async () => {
    server = await serve();
    port = new URL(server.url).port;
  });

  it('the SDK client on 127.0.0.1 and on localhost connects and calls a tool', async () => {
    for (const url of [`${server.url}/mcp`, `http://localhost:${port}/mcp`]) {
      const client = new Client({ name: 'host-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: `Bearer ${key}` } },
        }),
      );
      const result = await client.callTool({ name: 'list_state', arguments: { session_id: 'h' } });
      expect(result.isError, url).toBeFalsy();
      await client.close();
    }
  });

  it('refuses a rebinding Host (with or without port) with 403, even with a valid key', async () => {
    expect(await post(server, { host: 'evil.example.com' })).toEqual(
      refusal('Invalid Host: evil.example.com'),
    );
    expect(await post(server, { host: `evil.example.com:${port}` })).toEqual(
      refusal('Invalid Host: evil.example.com'),
    );
    // The conformance suite's attack: Host and Origin both on the rebinding name.
    expect(await post(server, { host: 'evil.example.com', origin: 'http://evil.example.com' })).toMatchObject(
      {
        status: 403,
      },
    );
    // Checked before the method: a GET is refused too, not answered 405.
    expect((await post(server, { host: 'evil.example.com', method: 'GET' })).status).toBe(403);
  });

  it('refuses a Host that a URL parser could read another host out of', async () => {
    const check = createHostOriginCheck();
    for (const host of [
      'localhost@evil.example.com',
      'evil.example.com#localhost',
      'localhost/x',
      '127.0.0.1 x',
    ]) {
      // The HTTP server may refuse such a Host itself (400) before the handler sees it.
      expect([400, 403], host).toContain((await post(server, { host })).status);
      const refused = check(new Request('http://127.0.0.1/mcp', { method: 'POST', headers: { host } }));
      expect(refused?.status, host).toBe(403);
      expect(((await refused!.json()) as any).error.message, host).toBe(`Invalid Host header: ${host}`);
    }
  });

  it('refuses a foreign, opaque or non-http Origin on a loopback Host', async () => {
    expect(await post(server, { origin: 'http://evil.example.com' })).toEqual(
      refusal('Invalid Origin: http://evil.example.com'),
    );
    expect(await post(server, { origin: 'https://localhost.evil.example.com' })).toMatchObject({
      status: 403,
    });
    expect(await post(server, { origin: 'null' })).toEqual(refusal('Invalid Origin header: null'));
    expect(await post(server, { origin: 'file:///etc/passwd' })).toMatchObject({ status: 403 });
  });

  it('accepts loopback Hosts and Origins on any port, and a request without Origin', async () => {
    const ok = [
      {},
      { host: `localhost:${port}` },
      { host: `[::1]:${port}` },
      { host: 'LOCALHOST' },
      { origin: `http://127.0.0.1:${port}` },
      { origin: 'http://localhost:6274' },
      { host: `localhost:${port}`, origin: 'https://[::1]' },
    ];
    for (const headers of ok) {
      const answer = await post(server, headers);
      expect(answer.status, JSON.stringify(headers)).toBe(200);
      expect(answer.body.result.serverInfo.name).toBe('gatehouse');
    }
  });

  it('the SDK client sending a foreign Origin fails to connect with 403', async () => {
    const client = new Client({ name: 'host-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}`, origin: 'http://evil.example.com' } },
    });
    await expect(client.connect(transport)).rejects.toMatchObject({ code: 403 });
  });
});

describe('/mcp with configured allow-lists', () => {
  it('allowedHosts replaces the loopback names; a port in an entry pins it', async () => {
    const server = await serve({ allowedHosts: ['mcp.example.test', 'pinned.example.test:8443'] });
    expect((await post(server, { host: 'mcp.example.test' })).status).toBe(200);
    expect((await post(server, { host: 'mcp.example.test:1234' })).status).toBe(200);
    expect((await post(server, { host: 'pinned.example.test:8443' })).status).toBe(200);
    expect(await post(server, { host: 'pinned.example.test:8444' })).toEqual(
      refusal('Invalid Host: pinned.example.test'),
    );
    expect(await post(server, {})).toEqual(refusal('Invalid Host: 127.0.0.1'));
    // The default Origins follow the Host list.
    expect(
      (await post(server, { host: 'mcp.example.test', origin: 'https://mcp.example.test' })).status,
    ).toBe(200);
    expect((await post(server, { host: 'mcp.example.test', origin: 'http://localhost' })).status).toBe(403);
  });

  it('allowedOrigins lists the only Origins accepted', async () => {
    const server = await serve({ allowedOrigins: ['https://app.example.test'] });
    expect((await post(server, { origin: 'https://app.example.test' })).status).toBe(200);
    expect((await post(server, { origin: 'https://app.example.test:443' })).status).toBe(200);
    expect((await post(server, { origin: 'http://app.example.test' })).status).toBe(403);
    expect((await post(server, { origin: 'http://localhost' })).status).toBe(403);
    expect((await post(server, {})).status).toBe(200);
  });

  it('* turns a check off', async () => {
    const server = await serve({ allowedHosts: ['*'], allowedOrigins: ['*'] });
    expect((await post(server, { host: 'evil.example.com', origin: 'http://evil.example.com' })).status).toBe(
      200,
    );
  });

  it('an entry that is not a host or an origin is refused when the handler is built', () => {
    expect(() => createMcpHttpHandler({ gatehouse: gh, allowedHosts: ['http://x.test'] })).toThrow(
      /Not a host name or host:port/,
    );
    expect(() => createMcpHttpHandler({ gatehouse: gh, allowedHosts: ['::1'] })).toThrow(/IPv6 in brackets/);
    expect(() => createMcpHttpHandler({ gatehouse: gh, allowedOrigins: ['app.example.test'] })).toThrow(
      /Not an origin/,
    );
  });
});

describe('defaultAllowedHosts', () => {
  it('fits the bind address', () => {
    const loopback = ['localhost', '127.0.0.1', '[::1]'];
    expect(defaultAllowedHosts('127.0.0.1')).toEqual(loopback);
    expect(defaultAllowedHosts('::1')).toEqual(loopback);
    expect(defaultAllowedHosts('localhost')).toEqual(loopback);
    // Every interface: no name is known to be ours, so only loopback until the operator lists names.
    expect(defaultAllowedHosts('0.0.0.0')).toEqual(loopback);
    expect(defaultAllowedHosts('::')).toEqual(loopback);
    expect(isWildcardAddress('0.0.0.0') && isWildcardAddress('::')).toBe(true);
    expect(defaultAllowedHosts('10.0.0.5')).toEqual([...loopback, '10.0.0.5']);
    expect(defaultAllowedHosts('fd00::5')).toEqual([...loopback, '[fd00::5]']);
    expect(defaultAllowedHosts('gatehouse.internal')).toEqual([...loopback, 'gatehouse.internal']);
  });
});
