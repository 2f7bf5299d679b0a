/**
 * `POST /v1/webhooks` with the resolving SSRF check that `gatehouse serve` injects, over the
 * in-process HTTP app. Names are resolved by injected resolvers only: no real DNS.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../../adapters/http/index.js';
import { openSqliteStore } from '../../../adapters/sqlite/index.js';
import { assertWebhookUrlAllowed, type Resolver } from '../../../adapters/webhooks/index.js';
import {
  createApiKey,
  createGatehouse,
  createIdGenerator,
  systemRandomBytes,
  WebhookWithSecretSchema,
} from '../../../src/index.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const fail =
  (code: string): Resolver =>
  async (hostname) => {
    throw Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), { code });
  };
const answer =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

async function register(resolve: Resolver, url = 'https://hooks.example.com/gatehouse') {
  const store = openSqliteStore();
  const gatehouse = createGatehouse({
    store,
    checkWebhookUrl: (u) => assertWebhookUrlAllowed(u, { policy: { allowInsecureLoopback: false }, resolve }),
  });
  closers.push(() => store.close());
  const { secret: key } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['webhooks:manage'] },
  );
  const app = createHttpApp({ gatehouse, rateLimit: false });
  const res = await app.request('/v1/webhooks', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, events: ['gate_evaluation'] }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, gatehouse };
}

describe('POST /v1/webhooks and DNS', () => {
  it.each([
    ['NXDOMAIN', fail('ENOTFOUND'), 'ENOTFOUND'],
    ['SERVFAIL', fail('EAI_AGAIN'), 'EAI_AGAIN'],
  ])('registers a host that does not resolve now (%s), with a warning', async (_, resolve, code) => {
    const { status, body, gatehouse } = await register(resolve);
    expect(status).toBe(201);
    expect(WebhookWithSecretSchema.parse(body)).toEqual(body);
    expect(body).toMatchObject({
      url: 'https://hooks.example.com/gatehouse',
      secret: expect.stringMatching(/^whsec_/),
      warnings: [{ code: 'url_not_resolved', message: expect.stringContaining(`(${code})`) }],
    });
    expect((await gatehouse.listWebhooks()).map((w) => w.url)).toEqual([
      'https://hooks.example.com/gatehouse',
    ]);
  });

  it('registers a host that resolves to a public address, without warnings', async () => {
    const { status, body } = await register(answer('93.184.216.34'));
    expect(status).toBe(201);
    expect(body).not.toHaveProperty('warnings');
  });

  it('refuses a host that resolves to 10.0.0.1 with a 422 naming the rule', async () => {
    const { status, body, gatehouse } = await register(answer('93.184.216.34', '10.0.0.1'));
    expect(status).toBe(422);
    expect(body).toMatchObject({
      code: 'invalid_request',
      errors: [
        {
          path: 'url',
          message: 'Webhook URL host hooks.example.com resolves to blocked address 10.0.0.1 (private).',
        },
      ],
    });
    expect(await gatehouse.listWebhooks()).toEqual([]);
  });

  it('refuses an IPv4-mapped IPv6 literal of a private address without resolving', async () => {
    const { status, body } = await register(fail('SHOULD_NOT_BE_CALLED'), 'https://[::ffff:a00:1]/x');
    expect(status).toBe(422);
    expect(JSON.stringify(body)).toContain('is a blocked address (private)');
  });
});
