import { createHmac, randomUUID } from 'node:crypto';
import KeyvRedis from '@keyv/redis';
import Keyv from 'keyv';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createDeduper } from '../../../adapters/webhooks/deduper.js';
import {
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from '../../../adapters/webhooks/receiver.js';
import { GatehouseError } from '../../../src/errors.js';
import {
  buildWebhookPayload,
  decodeWebhookSecret,
  generateWebhookSecret,
  signWebhook,
  webhookSignatureHeader,
} from '../../../src/webhooks/index.js';

const SECRET = generateWebhookSecret((n) => Uint8Array.from({ length: n }, (_, i) => i * 7));
const OLD_SECRET = generateWebhookSecret((n) => Uint8Array.from({ length: n }, (_, i) => 255 - i));
const TS = 1_750_000_000;
const now = () => new Date(TS * 1000);
const BODY = buildWebhookPayload({
  event_id: 'evt_01J',
  type: 'gate_evaluation',
  occurred_at: '2025-06-15T15:06:40.000Z',
  session_id: 'sess_1',
  data: { verdict: 'Block', reasons: ['amount over limit'] },
});
const EVENT = JSON.parse(BODY);

function headersFor(body: string, options: { id?: string; ts?: number; secrets?: string[] } = {}) {
  const id = options.id ?? 'evt_01J';
  const ts = options.ts ?? TS;
  return {
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': webhookSignatureHeader(options.secrets ?? [SECRET], id, ts, body),
  };
}

function rejection(fn: () => unknown): WebhookVerificationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error('expected a WebhookVerificationError');
}

function expectReason(fn: () => unknown, reason: WebhookVerificationReason): void {
  expect(rejection(fn).reason).toBe(reason);
}

describe('verifyWebhook', () => {
  it('returns the event for a correctly signed delivery (Node-style header record)', () => {
    expect(verifyWebhook(SECRET, headersFor(BODY), BODY, { now })).toEqual(EVENT);
  });

  it('accepts Fetch Headers, mixed-case header names and a byte body', () => {
    expect(
      verifyWebhook(SECRET, new Headers(headersFor(BODY)), new TextEncoder().encode(BODY), { now }),
    ).toEqual(EVENT);
    const shouted = Object.fromEntries(
      Object.entries(headersFor(BODY)).map(([k, v]) => [k.toUpperCase(), v]),
    );
    expect(verifyWebhook(SECRET, shouted, BODY, { now })).toEqual(EVENT);
  });

  it('verifies a signature made by the standardwebhooks package', () => {
    const signature = new Webhook(SECRET).sign('evt_01J', new Date(TS * 1000), BODY);
    const headers = {
      'webhook-id': 'evt_01J',
      'webhook-timestamp': String(TS),
      'webhook-signature': signature,
    };
    expect(verifyWebhook(SECRET, headers, BODY, { now })).toEqual(EVENT);
  });

  it('is verified by the standardwebhooks package in turn (same contract both ways)', () => {
    const ts = Math.floor(Date.now() / 1000);
    expect(new Webhook(SECRET).verify(BODY, headersFor(BODY, { ts }))).toEqual(EVENT);
  });

  it('accepts any of several secrets and any of several signatures (rotation)', () => {
    const both = headersFor(BODY, { secrets: [SECRET, OLD_SECRET] });
    expect(verifyWebhook(SECRET, both, BODY, { now }).id).toBe('evt_01J');
    expect(verifyWebhook(OLD_SECRET, both, BODY, { now }).id).toBe('evt_01J');
    const oldOnly = headersFor(BODY, { secrets: [OLD_SECRET] });
    expect(verifyWebhook([SECRET, OLD_SECRET], oldOnly, BODY, { now }).id).toBe('evt_01J');
  });

  it('skips other versions, garbage and repeated header lines', () => {
    const good = signWebhook(SECRET, 'evt_01J', TS, BODY);
    const base = { 'webhook-id': 'evt_01J', 'webhook-timestamp': String(TS) };
    const lists = [
      `v1a,${'A'.repeat(86)}== v2,xyz nonsense v1, ${good}`,
      // Node joins a repeated header with ", ".
      `v1,AAAA, ${good}`,
    ];
    for (const list of lists) {
      expect(verifyWebhook(SECRET, { ...base, 'webhook-signature': list }, BODY, { now }).id).toBe('evt_01J');
    }
    const repeated = { ...base, 'webhook-signature': ['v1,AAAA', good] };
    expect(verifyWebhook(SECRET, repeated, BODY, { now }).id).toBe('evt_01J');
  });

  it.each(['webhook-id', 'webhook-timestamp', 'webhook-signature'])(
    'rejects a delivery without %s',
    (name) => {
      const headers: Record<string, string | undefined> = { ...headersFor(BODY), [name]: undefined };
      expectReason(() => verifyWebhook(SECRET, headers, BODY, { now }), 'missing_headers');
      expectReason(() => verifyWebhook(SECRET, { ...headers, [name]: '' }, BODY, { now }), 'missing_headers');
    },
  );

  it('enforces the timestamp tolerance (default 300 s) both ways', () => {
    const at = (offset: number) => () => new Date((TS + offset) * 1000);
    expect(verifyWebhook(SECRET, headersFor(BODY), BODY, { now: at(300) }).id).toBe('evt_01J');
    expect(verifyWebhook(SECRET, headersFor(BODY), BODY, { now: at(-300) }).id).toBe('evt_01J');
    expectReason(() => verifyWebhook(SECRET, headersFor(BODY), BODY, { now: at(301) }), 'timestamp');
    expectReason(() => verifyWebhook(SECRET, headersFor(BODY), BODY, { now: at(-301) }), 'timestamp');
    expectReason(
      () => verifyWebhook(SECRET, headersFor(BODY), BODY, { now: at(61), toleranceSeconds: 60 }),
      'timestamp',
    );
  });

  it.each(['1750000000.5', '1.75e9', 'yesterday', '-1'])('rejects the timestamp %j', (ts) => {
    expectReason(
      () => verifyWebhook(SECRET, { ...headersFor(BODY), 'webhook-timestamp': ts }, BODY, { now }),
      'timestamp',
    );
  });

  it('rejects a tampered body, id or timestamp, and a wrong secret', () => {
    const headers = headersFor(BODY);
    expectReason(() => verifyWebhook(SECRET, headers, BODY.replace('Block', 'Allow'), { now }), 'signature');
    expectReason(
      () => verifyWebhook(SECRET, { ...headers, 'webhook-id': 'evt_02' }, BODY, { now }),
      'signature',
    );
    expectReason(
      () => verifyWebhook(SECRET, { ...headers, 'webhook-timestamp': String(TS + 1) }, BODY, { now }),
      'signature',
    );
    expectReason(() => verifyWebhook(OLD_SECRET, headers, BODY, { now }), 'signature');
    expectReason(
      () => verifyWebhook(SECRET, { ...headers, 'webhook-id': 'evt.01J' }, BODY, { now }),
      'signature',
    );
    // Re-serialised JSON is not the body that was signed.
    expectReason(() => verifyWebhook(SECRET, headers, JSON.stringify(EVENT, null, 2), { now }), 'signature');
  });

  it('rejects a correctly signed body that is not a Gatehouse event', () => {
    for (const body of [
      'not json',
      '[]',
      '{"id":"evt_01J"}',
      '{"id":"x","type":"t","occurred_at":"o","session_id":"s"}',
    ]) {
      expectReason(() => verifyWebhook(SECRET, headersFor(body), body, { now }), 'payload');
    }
    const invalidUtf8 = Uint8Array.from([0x7b, 0xff, 0x7d]);
    const headers = {
      'webhook-id': 'evt_01J',
      'webhook-timestamp': String(TS),
      // A correct HMAC over the exact bytes, computed by hand: signWebhook signs text only.
      'webhook-signature': `v1,${createHmac('sha256', decodeWebhookSecret(SECRET))
        .update(Buffer.concat([Buffer.from(`evt_01J.${TS}.`), invalidUtf8]))
        .digest('base64')}`,
    };
    expectReason(() => verifyWebhook(SECRET, headers, invalidUtf8, { now }), 'payload');
  });

  it('fails loudly on a misconfigured secret instead of reporting a bad signature', () => {
    expect(() => verifyWebhook('whsec_short', headersFor(BODY), BODY, { now })).toThrow(GatehouseError);
    expect(() => verifyWebhook([], headersFor(BODY), BODY, { now })).toThrow(GatehouseError);
  });
});

// ---------------------------------------------------------------------------------------------

describe('createDeduper', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('claims an id once; release lets a redelivery be processed again', async () => {
    const deduper = createDeduper();
    expect(await deduper.claim('evt_1')).toBe(true);
    expect(await deduper.claim('evt_1')).toBe(false);
    expect(await deduper.claim('evt_2')).toBe(true);
    await deduper.release('evt_1');
    expect(await deduper.claim('evt_1')).toBe(true);
    expect(await deduper.claim('evt_1')).toBe(false);
  });

  it('gives exactly one of many concurrent claims of the same id', async () => {
    const deduper = createDeduper();
    const results = await Promise.all(Array.from({ length: 20 }, () => deduper.claim('evt_same')));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await deduper.claim('evt_same')).toBe(false);
  });

  it('forgets ids after the TTL (keyv expiry, clock moved forward)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2025-01-01T00:00:00Z'));
    const deduper = createDeduper({ ttlMs: 1000 });
    expect(await deduper.claim('evt_ttl')).toBe(true);
    vi.setSystemTime(new Date('2025-01-01T00:00:00.999Z'));
    expect(await deduper.claim('evt_ttl')).toBe(false);
    vi.setSystemTime(new Date('2025-01-01T00:00:01.001Z'));
    expect(await deduper.claim('evt_ttl')).toBe(true);
  });

  it('defaults to a 24 h TTL', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2025-01-01T00:00:00Z'));
    const deduper = createDeduper();
    expect(await deduper.claim('evt_day')).toBe(true);
    vi.setSystemTime(new Date('2025-01-01T23:59:59Z'));
    expect(await deduper.claim('evt_day')).toBe(false);
    vi.setSystemTime(new Date('2025-01-02T00:00:01Z'));
    expect(await deduper.claim('evt_day')).toBe(true);
  });

  it('uses the given store, and ids are shared by every deduper on it', async () => {
    const map = new Map();
    const store = new Keyv({ store: map, namespace: 'hooks' });
    const a = createDeduper({ store });
    const b = createDeduper({ store });
    expect(await a.claim('evt_shared')).toBe(true);
    expect(await b.claim('evt_shared')).toBe(false);
    expect([...map.keys()]).toEqual(['hooks:evt_shared']);
  });

  it('reports a store that did not record the id as unavailable, and does not keep it in flight', async () => {
    let accept = false;
    const store = {
      get: async () => undefined,
      set: async () => accept,
      delete: async () => true,
    } as unknown as Keyv;
    const deduper = createDeduper({ store });
    await expect(deduper.claim('evt_x')).rejects.toMatchObject({ code: 'unavailable' });
    accept = true;
    expect(await deduper.claim('evt_x')).toBe(true);
  });
});

const redisUrl = process.env.GATEHOUSE_TEST_REDIS_URL;

describe.skipIf(!redisUrl)('createDeduper on Redis (@keyv/redis)', () => {
  const stores: Keyv[] = [];
  const redisStore = () => {
    const store = new Keyv({ store: new KeyvRedis(redisUrl), namespace: `gatehouse-test-${randomUUID()}` });
    stores.push(store);
    return store;
  };

  afterAll(async () => {
    await Promise.all(
      stores.map(async (s) => {
        await s.clear();
        await s.disconnect();
      }),
    );
  });

  it('claims once, across dedupers sharing the store, and releases', async () => {
    const store = redisStore();
    const a = createDeduper({ store });
    const b = createDeduper({ store });
    const id = `evt_${randomUUID()}`;
    const results = await Promise.all([a.claim(id), a.claim(id), a.claim(id)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await b.claim(id)).toBe(false);
    await b.release(id);
    expect(await a.claim(id)).toBe(true);
  });

  it("claims with keyv's own key and value, so plain keyv calls see the claim", async () => {
    const store = redisStore();
    const id = `evt_${randomUUID()}`;
    expect(await createDeduper({ store }).claim(id)).toBe(true);
    expect(await store.get(id)).toBe(true);
    await store.delete(id);
    expect(await createDeduper({ store }).claim(id)).toBe(true);
  });

  it('lets Redis expire ids after the TTL', async () => {
    const deduper = createDeduper({ store: redisStore(), ttlMs: 30 });
    const id = `evt_${randomUUID()}`;
    expect(await deduper.claim(id)).toBe(true);
    expect(await deduper.claim(id)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await deduper.claim(id)).toBe(true);
  });
});
