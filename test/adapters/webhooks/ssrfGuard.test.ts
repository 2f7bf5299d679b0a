import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { buildConnector } from 'undici';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  assertWebhookUrlAllowed,
  createGuardedConnector,
  createWebhookAgent,
  isBlockedAddress,
  type Resolver,
  SSRF_BLOCKED_CODE,
  SsrfBlockedError,
  type WebhookUrlPolicy,
} from '../../../adapters/webhooks/index.js';
import { GatehouseError } from '../../../src/errors.js';

// These tests never dial a non-loopback address: names are resolved by injected resolvers,
// and wherever the guard would let a non-loopback address through, the socket opener is a spy.

const STRICT: WebhookUrlPolicy = { allowInsecureLoopback: false };
const DEV: WebhookUrlPolicy = { allowInsecureLoopback: true };

function resolverFor(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (addresses === undefined) {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    }
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

const NAMES = resolverFor({
  'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'evil.example': ['10.0.0.1'],
  'mixed.example': ['93.184.216.34', '169.254.169.254'],
  'metadata.example': ['fd00:ec2::254'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'nat64.example': ['64:ff9b::a9fe:a9fe'],
  localhost: ['127.0.0.1', '::1'],
  'empty.example': [],
});

describe('isBlockedAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback, bracketed'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'unique local'],
    ['fd12:3456::1', 'unique local'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'zone-scoped'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.1', 'IETF protocol assignments'],
    ['192.0.2.1', 'documentation'],
    ['2001:db8::1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['169.254.169.254', 'cloud metadata'],
    ['fd00:ec2::254', 'cloud metadata (AWS IPv6)'],
    ['168.63.129.16', 'Azure WireServer'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['0:0:0:0:0:ffff:7f00:1', 'IPv4-mapped loopback, long'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:0:7f00:1', 'IPv4-translated'],
    ['::127.0.0.1', 'IPv4-compatible'],
    ['::8.8.8.8', 'IPv4-compatible, dotted (ipaddr.js alone reads it as IPv4-mapped)'],
    ['::808:808', 'IPv4-compatible, hex'],
    ['64:ff9b::10.0.0.1', 'NAT64 of private'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2002:808:808::1', '6to4 (all of it)'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['100::1', 'discard-only'],
    ['fec0::1', 'site-local'],
    ['2130706433', 'decimal 127.0.0.1'],
    ['0177.0.0.1', 'octal 127.0.0.1'],
    ['0x7f.1', 'hex short 127.0.0.1'],
    ['0x7f000001', 'hex 127.0.0.1'],
    ['127.1', 'short 127.0.0.1'],
    ['012.0.0.1', 'octal 10.0.0.1'],
    ['2852039166', 'decimal 169.254.169.254'],
    ['example.com', 'a name, not an address'],
    ['', 'empty'],
    ['1.2.3.4.5', 'malformed'],
    ['8.8.8.8/24', 'not a bare address'],
  ])('blocks %s (%s)', (ip) => {
    expect(isBlockedAddress(ip)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '223.255.255.255',
    '134744072',
    '2606:4700:4700::1111',
    '[2606:4700:4700::1111]',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ])('allows public %s', (ip) => {
    expect(isBlockedAddress(ip)).toBe(false);
  });

  it.each([
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://0x7f.1/',
    'http://127.1/',
    'https://0x7f.0x0.0.1/',
    'http://[::ffff:127.0.0.1]/',
    'http://[0:0:0:0:0:ffff:7f00:1]/',
    'http://[64:ff9b::127.0.0.1]/',
    'https://2852039166/latest/meta-data/',
  ])('blocks the host of %s as the URL parser normalises it', (url) => {
    expect(isBlockedAddress(new URL(url).hostname)).toBe(true);
  });
});

async function refusal(promise: Promise<unknown>): Promise<GatehouseError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatehouseError);
  const gatehouseError = error as GatehouseError;
  expect(gatehouseError.code).toBe('invalid_request');
  expect(gatehouseError.errors).toEqual([{ path: 'url', message: gatehouseError.message }]);
  return gatehouseError;
}

describe('assertWebhookUrlAllowed', () => {
  it('accepts an https URL whose addresses are all public, and returns it parsed', async () => {
    const { url, warnings } = await assertWebhookUrlAllowed('https://hooks.example.com/gatehouse?x=1', {
      policy: STRICT,
      resolve: NAMES,
    });
    expect(url.href).toBe('https://hooks.example.com/gatehouse?x=1');
    expect(warnings).toEqual([]);
  });

  it.each([
    ['not a url', 'not a valid absolute URL'],
    ['/relative/path', 'not a valid absolute URL'],
    ['ftp://hooks.example.com/', 'must use https://, not ftp://'],
    ['http://hooks.example.com/', 'must use https://'],
    ['https://user:pass@hooks.example.com/', 'must not contain a user name or password'],
    ['https://token@hooks.example.com/', 'must not contain a user name or password'],
    ['https://hooks.example.com:0/', 'port 0 cannot be connected to'],
    ['https://evil.example/', 'evil.example resolves to blocked address 10.0.0.1 (private)'],
    ['https://mixed.example/', 'resolves to blocked address 169.254.169.254 (cloud metadata)'],
    ['https://metadata.example/', 'resolves to blocked address fd00:ec2::254 (cloud metadata)'],
    ['https://mapped.example/', 'resolves to blocked address ::ffff:127.0.0.1 (loopback)'],
    ['https://nat64.example/', 'NAT64 of a cloud metadata address'],
    ['https://localhost/', 'resolves to blocked address 127.0.0.1 (loopback)'],
    ['https://127.0.0.1/', 'host 127.0.0.1 is a blocked address (loopback)'],
    ['https://[::1]/', 'host ::1 is a blocked address (loopback)'],
    ['https://2130706433/', 'host 127.0.0.1 is a blocked address (loopback)'],
    ['https://0x7f.1/', 'host 127.0.0.1 is a blocked address (loopback)'],
    ['https://[::ffff:7f00:1]/', 'is a blocked address (loopback)'],
    ['https://169.254.169.254/latest/meta-data/', 'is a blocked address (cloud metadata)'],
    ['https://[fe80::1]/', 'is a blocked address (link-local)'],
  ])('refuses %s (%s)', async (url, rule) => {
    const error = await refusal(assertWebhookUrlAllowed(url, { policy: STRICT, resolve: NAMES }));
    expect(error.message).toContain(rule);
  });

  describe('a name that does not resolve now: registered, with a url_not_resolved warning', () => {
    const failing = (code: string): Resolver => {
      return async (hostname) => {
        throw Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), { code });
      };
    };

    it.each([
      ['NXDOMAIN', failing('ENOTFOUND'), 'ENOTFOUND'],
      ['SERVFAIL, as getaddrinfo reports it', failing('EAI_AGAIN'), 'EAI_AGAIN'],
      ['an empty answer', NAMES, 'no address'],
    ])('%s', async (_, resolve, why) => {
      const host = resolve === NAMES ? 'empty.example' : 'hooks.example.com';
      const { url, warnings } = await assertWebhookUrlAllowed(`https://${host}/gatehouse`, {
        policy: STRICT,
        resolve,
      });
      expect(url.hostname).toBe(host);
      expect(warnings).toEqual([
        {
          code: 'url_not_resolved',
          message: `Webhook URL host ${host} could not be resolved now (${why}). The webhook is registered: every delivery resolves the name again, refuses blocked addresses and retries on failure.`,
        },
      ]);
    });

    it('a resolver that does not answer in resolveTimeoutMs', async () => {
      const silent: Resolver = () => new Promise(() => {});
      const { warnings } = await assertWebhookUrlAllowed('https://hooks.example.com/', {
        policy: STRICT,
        resolve: silent,
        resolveTimeoutMs: 20,
      });
      expect(warnings.map((w) => w.message)).toEqual([
        expect.stringContaining('could not be resolved now (no answer within 20 ms)'),
      ]);
    });

    it('names only the resolver error code, never its message', async () => {
      const leaky: Resolver = async () => {
        throw Object.assign(new Error('internal resolver 10.1.2.3 said no'), { code: 'weird code!' });
      };
      const { warnings } = await assertWebhookUrlAllowed('https://hooks.example.com/', {
        policy: STRICT,
        resolve: leaky,
      });
      expect(warnings[0]?.message).toContain('(resolver error)');
      expect(warnings[0]?.message).not.toContain('10.1.2.3');
    });

    it('still refuses a name that resolves, to any blocked address (10.0.0.1)', async () => {
      const error = await refusal(
        assertWebhookUrlAllowed('https://evil.example/', { policy: STRICT, resolve: NAMES }),
      );
      expect(error.message).toBe(
        'Webhook URL host evil.example resolves to blocked address 10.0.0.1 (private).',
      );
    });
  });

  it('does not resolve IP literals', async () => {
    const resolve = resolverFor({});
    await refusal(assertWebhookUrlAllowed('https://10.1.2.3/', { policy: STRICT, resolve }));
    await assertWebhookUrlAllowed('https://8.8.8.8/', { policy: STRICT, resolve });
    expect(resolve.calls).toEqual([]);
  });

  describe('with allowInsecureLoopback (development)', () => {
    it.each([
      'http://localhost:8080/hook',
      'http://127.0.0.1:8080/hook',
      'http://[::1]:8080/hook',
      'https://localhost/hook',
      'http://mapped.example/',
    ])('allows loopback %s', async (url) => {
      await expect(assertWebhookUrlAllowed(url, { policy: DEV, resolve: NAMES })).resolves.toEqual({
        url: new URL(url),
        warnings: [],
      });
    });

    it.each([
      ['http://hooks.example.com/', 'resolves to 93.184.216.34, which is not loopback'],
      ['http://8.8.8.8/', 'is not loopback; plain http:// is allowed only to loopback'],
      ['http://10.0.0.1/', 'is a blocked address (private)'],
      ['https://evil.example/', 'resolves to blocked address 10.0.0.1 (private)'],
      ['http://[64:ff9b::7f00:1]/', 'NAT64 of a loopback address'],
      ['https://[::ffff:10.0.0.1]/', 'is a blocked address (private)'],
      ['http://unknown.example/', 'could not be resolved (ENOTFOUND) to show it is loopback'],
    ])('still refuses %s', async (url, rule) => {
      const error = await refusal(assertWebhookUrlAllowed(url, { policy: DEV, resolve: NAMES }));
      expect(error.message).toContain(rule);
    });

    it('keeps the resolver error as the cause of an http:// refusal', async () => {
      const error = await refusal(
        assertWebhookUrlAllowed('http://unknown.example/', { policy: DEV, resolve: NAMES }),
      );
      expect((error.cause as { code?: string }).code).toBe('ENOTFOUND');
    });
  });
});

// ---------------------------------------------------------------------------------------------

interface Dialled {
  options: buildConnector.Options;
}

/** A socket opener that records what it was asked to dial and never dials. */
function spyOpener(): buildConnector.connector & { dialled: Dialled[] } {
  const dialled: Dialled[] = [];
  const open: buildConnector.connector = (options, callback) => {
    dialled.push({ options });
    callback(Object.assign(new Error('spy: not dialled'), { code: 'SPY_NOT_DIALLED' }), null);
  };
  return Object.assign(open, { dialled });
}

function connectOnce(
  connector: buildConnector.connector,
  options: buildConnector.Options,
): Promise<{ error: (Error & { code?: string }) | null }> {
  return new Promise((resolve) => connector(options, (...args) => resolve({ error: args[0] })));
}

describe('createGuardedConnector', () => {
  it('refuses a name that resolves to a private address before any socket is opened', async () => {
    const open = spyOpener();
    const connector = createGuardedConnector({ policy: STRICT, resolve: NAMES, connect: open });
    const { error } = await connectOnce(connector, {
      hostname: 'evil.example',
      host: 'evil.example',
      protocol: 'https:',
      port: '',
    });
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect(error?.code).toBe(SSRF_BLOCKED_CODE);
    expect(error?.message).toBe(
      'Refused to connect to evil.example: resolves to blocked address 10.0.0.1 (private).',
    );
    expect(open.dialled).toEqual([]);
  });

  it('dials the vetted IP with the original name as TLS servername, resolving only once', async () => {
    const open = spyOpener();
    const resolve = resolverFor({ 'api.example': ['93.184.216.34'] });
    const connector = createGuardedConnector({ policy: STRICT, resolve, connect: open });
    const { error } = await connectOnce(connector, {
      hostname: 'api.example',
      host: 'api.example',
      protocol: 'https:',
      port: '',
    });
    expect(error?.code).toBe('SPY_NOT_DIALLED');
    expect(resolve.calls).toEqual(['api.example']);
    expect(open.dialled).toHaveLength(1);
    expect(open.dialled[0]?.options).toMatchObject({
      hostname: '93.184.216.34',
      host: 'api.example',
      servername: 'api.example',
    });
  });

  it('checks IP literals directly (brackets stripped) and sends no servername for them', async () => {
    const open = spyOpener();
    const resolve = resolverFor({});
    const connector = createGuardedConnector({ policy: STRICT, resolve, connect: open });
    const blocked = await connectOnce(connector, {
      hostname: '[::1]',
      host: '[::1]',
      protocol: 'https:',
      port: '',
    });
    expect(blocked.error?.code).toBe(SSRF_BLOCKED_CODE);
    expect(blocked.error?.message).toBe('Refused to connect to ::1: is a blocked address (loopback).');
    await connectOnce(connector, {
      hostname: '[2606:4700::1]',
      host: '[2606:4700::1]',
      protocol: 'https:',
      port: '',
    });
    expect(open.dialled).toHaveLength(1);
    expect(open.dialled[0]?.options.hostname).toBe('2606:4700::1');
    expect(open.dialled[0]?.options.servername).toBeUndefined();
    expect(resolve.calls).toEqual([]);
  });

  it('refuses plain http unless the development setting allows it for loopback', async () => {
    const open = spyOpener();
    const strict = createGuardedConnector({ policy: STRICT, resolve: NAMES, connect: open });
    const dev = createGuardedConnector({ policy: DEV, resolve: NAMES, connect: open });
    const toPublic = {
      hostname: 'hooks.example.com',
      host: 'hooks.example.com',
      protocol: 'http:',
      port: '',
    };
    expect((await connectOnce(strict, toPublic)).error?.message).toBe(
      'Refused to connect to hooks.example.com: plain http:// is not allowed, use https://.',
    );
    expect((await connectOnce(dev, toPublic)).error?.code).toBe(SSRF_BLOCKED_CODE);
    const toLoopback = { hostname: 'localhost', host: 'localhost:8080', protocol: 'http:', port: '8080' };
    expect((await connectOnce(dev, toLoopback)).error?.code).toBe('SPY_NOT_DIALLED');
    expect(open.dialled.map((d) => d.options.hostname)).toEqual(['127.0.0.1', '::1']);
  });

  it('vets every new connection, so a DNS answer that turns private (rebinding) is refused', async () => {
    const open = spyOpener();
    const answers = [['93.184.216.34'], ['10.0.0.1']];
    const resolve: Resolver = async () => (answers.shift() ?? []).map((address) => ({ address, family: 4 }));
    const connector = createGuardedConnector({ policy: STRICT, resolve, connect: open });
    const options = { hostname: 'rebind.example', host: 'rebind.example', protocol: 'https:', port: '' };
    expect((await connectOnce(connector, options)).error?.code).toBe('SPY_NOT_DIALLED');
    expect((await connectOnce(connector, options)).error?.code).toBe(SSRF_BLOCKED_CODE);
    expect(open.dialled.map((d) => d.options.hostname)).toEqual(['93.184.216.34']);
  });

  it('falls back once to the other IP family, never to more addresses', async () => {
    const open = spyOpener();
    const resolve = resolverFor({
      'dual.example': ['2606:2800:220:1::1', '2606:2800:220:1::2', '93.184.216.34', '93.184.216.35'],
    });
    const connector = createGuardedConnector({ policy: STRICT, resolve, connect: open });
    const options = { hostname: 'dual.example', host: 'dual.example', protocol: 'https:', port: '' };
    expect((await connectOnce(connector, options)).error?.code).toBe('SPY_NOT_DIALLED');
    expect(open.dialled.map((d) => d.options.hostname)).toEqual(['2606:2800:220:1::1', '93.184.216.34']);
    expect(open.dialled.every((d) => d.options.servername === 'dual.example')).toBe(true);
  });

  it('passes resolver errors through unchanged', async () => {
    const connector = createGuardedConnector({ policy: STRICT, resolve: NAMES, connect: spyOpener() });
    const { error } = await connectOnce(connector, {
      hostname: 'unknown.example',
      host: 'unknown.example',
      protocol: 'https:',
      port: '',
    });
    expect(error?.code).toBe('ENOTFOUND');
  });
});

// ---------------------------------------------------------------------------------------------

interface Received {
  method: string | undefined;
  url: string | undefined;
  host: string | undefined;
  body: string;
}

describe('createWebhookAgent', () => {
  let server: Server;
  let port: number;
  let connections: number;
  let received: Received[];
  let respond: (req: IncomingMessage) => { status: number; headers?: Record<string, string> };
  const agents: Array<{ close(): Promise<void> }> = [];

  beforeEach(async () => {
    connections = 0;
    received = [];
    respond = () => ({ status: 204 });
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => {
        body += chunk;
      });
      req.on('end', () => {
        received.push({ method: req.method, url: req.url, host: req.headers.host, body });
        const { status, headers } = respond(req);
        res.writeHead(status, headers).end();
      });
    });
    server.on('connection', () => {
      connections++;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.close()));
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function agentWith(options: Parameters<typeof createWebhookAgent>[0]) {
    const agent = createWebhookAgent(options);
    agents.push(agent);
    return agent;
  }

  async function refusedCode(promise: Promise<unknown>): Promise<string | undefined> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    return error?.code;
  }

  it('refuses https://evil.example (resolving to 10.0.0.1) before dialling anything', async () => {
    const open = spyOpener();
    const resolve = resolverFor({ 'evil.example': ['10.0.0.1'] });
    const agent = agentWith({ policy: STRICT, resolve, connect: open });
    const code = await refusedCode(
      request('https://evil.example/', { method: 'POST', body: '{}', dispatcher: agent }),
    );
    expect(code).toBe(SSRF_BLOCKED_CODE);
    expect(resolve.calls).toEqual(['evil.example']);
    expect(open.dialled).toEqual([]);
  });

  it('with the real socket opener, a refused loopback destination receives no connection', async () => {
    const agent = agentWith({ policy: STRICT, resolve: NAMES });
    for (const url of [
      `http://localhost:${port}/`,
      `http://127.0.0.1:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://2130706433:${port}/`,
    ]) {
      expect(await refusedCode(request(url, { dispatcher: agent }))).toBe(SSRF_BLOCKED_CODE);
    }
    expect(connections).toBe(0);
    expect(received).toEqual([]);
  });

  it('delivers to a loopback server in development, by name (injected resolver) and by IP', async () => {
    const resolve = vi.fn(NAMES);
    const agent = agentWith({ policy: DEV, resolve });
    const byName = await request(`http://localhost:${port}/hook`, {
      method: 'POST',
      body: '{"id":"evt_1"}',
      headers: { 'content-type': 'application/json' },
      dispatcher: agent,
    });
    await byName.body.dump();
    const byIp = await request(`http://127.0.0.1:${port}/hook2`, {
      method: 'POST',
      body: 'x',
      dispatcher: agent,
    });
    await byIp.body.dump();
    expect([byName.statusCode, byIp.statusCode]).toEqual([204, 204]);
    expect(received).toEqual([
      { method: 'POST', url: '/hook', host: `localhost:${port}`, body: '{"id":"evt_1"}' },
      { method: 'POST', url: '/hook2', host: `127.0.0.1:${port}`, body: 'x' },
    ]);
    expect(resolve).toHaveBeenCalledTimes(1);
  });

  it('reaches an IPv4-only loopback server when the name resolves to ::1 first', async () => {
    const agent = agentWith({ policy: DEV, resolve: resolverFor({ localhost: ['::1', '127.0.0.1'] }) });
    const res = await request(`http://localhost:${port}/v4`, {
      method: 'POST',
      body: '{}',
      dispatcher: agent,
    });
    await res.body.dump();
    expect(res.statusCode).toBe(204);
    expect(received.map((r) => r.url)).toEqual(['/v4']);
  });

  it('keeps connections alive between deliveries', async () => {
    const agent = agentWith({ policy: DEV, resolve: NAMES });
    for (let i = 0; i < 6; i++) {
      const res = await request(`http://localhost:${port}/k`, {
        method: 'POST',
        body: String(i),
        dispatcher: agent,
      });
      await res.body.dump();
    }
    expect(received).toHaveLength(6);
    // The pool may open a second socket while the first is still being released; never one each.
    expect(connections).toBeLessThanOrEqual(2);
  });

  it('does not follow redirects: a 3xx is returned as is', async () => {
    respond = (req) =>
      req.url === '/moved'
        ? { status: 302, headers: { location: `http://localhost:${port}/target` } }
        : { status: 200 };
    const agent = agentWith({ policy: DEV, resolve: NAMES });
    const res = await request(`http://localhost:${port}/moved`, {
      method: 'POST',
      body: '{}',
      dispatcher: agent,
    });
    await res.body.dump();
    expect(res.statusCode).toBe(302);
    expect(received.map((r) => r.url)).toEqual(['/moved']);
  });
});
