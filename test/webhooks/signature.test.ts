import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { GatehouseError } from '../../src/errors.js';
import {
  buildWebhookPayload,
  decodeWebhookSecret,
  generateWebhookSecret,
  signWebhook,
  webhookSignatureHeader,
} from '../../src/webhooks/index.js';

const counting = (n: number) => Uint8Array.from({ length: n }, (_, i) => i);
const SECRET = generateWebhookSecret(counting);
const OTHER = generateWebhookSecret((n) => counting(n).map((b) => 255 - b));

function thrown(fn: () => unknown): GatehouseError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    return error as GatehouseError;
  }
  throw new Error('expected a GatehouseError');
}

describe('generateWebhookSecret', () => {
  it('is whsec_ + base64 of 32 bytes from the injected source', () => {
    const requested: number[] = [];
    const secret = generateWebhookSecret((n) => {
      requested.push(n);
      return counting(n);
    });
    expect(requested).toEqual([32]);
    expect(secret).toBe(`whsec_${Buffer.from(counting(32)).toString('base64')}`);
    expect(decodeWebhookSecret(secret)).toEqual(Buffer.from(counting(32)));
  });

  it('refuses a random source that returns too few bytes', () => {
    expect(thrown(() => generateWebhookSecret(() => new Uint8Array(8))).code).toBe('internal');
  });
});

describe('decodeWebhookSecret', () => {
  it('accepts the secret with or without the whsec_ prefix', () => {
    const bare = SECRET.slice('whsec_'.length);
    expect(decodeWebhookSecret(bare)).toEqual(decodeWebhookSecret(SECRET));
  });

  it.each(['', 'whsec_', 'whsec_not base64!', `whsec_${Buffer.alloc(8).toString('base64')}`])(
    'rejects %j',
    (secret) => {
      const error = thrown(() => decodeWebhookSecret(secret));
      expect(error.code).toBe('invalid_request');
      expect(error.errors[0]?.path).toBe('secret');
    },
  );
});

describe('signWebhook', () => {
  const body = buildWebhookPayload({
    event_id: 'evt_01J',
    type: 'gate_evaluation',
    occurred_at: '2025-01-01T00:00:00.000Z',
    session_id: 's1',
    data: { verdict: 'Block', note: 'naïve ✓' },
  });

  it('is byte-identical to the standardwebhooks package and verifies with it', () => {
    const ts = Math.floor(Date.now() / 1000);
    const signature = signWebhook(SECRET, 'evt_01J', ts, body);
    const reference = new Webhook(SECRET);
    expect(signature).toBe(reference.sign('evt_01J', new Date(ts * 1000), body));
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    const verified = reference.verify(body, {
      'webhook-id': 'evt_01J',
      'webhook-timestamp': String(ts),
      'webhook-signature': signature,
    });
    expect(verified).toEqual(JSON.parse(body));
  });

  it('signs bytes and the equivalent string identically', () => {
    expect(signWebhook(SECRET, 'm', 1, new TextEncoder().encode(body))).toBe(
      signWebhook(SECRET, 'm', 1, body),
    );
  });

  it('property: matches the reference for any key, id, timestamp and body', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 24, maxLength: 64 }),
        fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
        fc.integer({ min: 0, max: 4_102_444_800 }),
        fc.string({ unit: 'grapheme', maxLength: 200 }),
        (key, id, ts, payload) => {
          const secret = `whsec_${Buffer.from(key).toString('base64')}`;
          expect(signWebhook(secret, id, ts, payload)).toBe(
            new Webhook(secret).sign(id, new Date(ts * 1000), payload),
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses bytes that are not UTF-8 (the library signs text)', () => {
    const error = thrown(() => signWebhook(SECRET, 'm', 1, Uint8Array.from([0x7b, 0xff, 0x7d])));
    expect(error.errors[0]?.path).toBe('body');
  });

  it.each([
    ['msgId', () => signWebhook(SECRET, 'a.b', 1, '{}')],
    ['msgId', () => signWebhook(SECRET, '', 1, '{}')],
    ['timestampSeconds', () => signWebhook(SECRET, 'm', -1, '{}')],
    ['timestampSeconds', () => signWebhook(SECRET, 'm', 1.5, '{}')],
    ['secret', () => signWebhook('whsec_!!', 'm', 1, '{}')],
  ])('rejects a bad %s', (path, fn) => {
    const error = thrown(fn);
    expect(error.code).toBe('invalid_request');
    expect(error.errors[0]?.path).toBe(path);
  });
});

describe('webhookSignatureHeader', () => {
  it('carries one signature per active secret, so either verifies during rotation', () => {
    const ts = Math.floor(Date.now() / 1000);
    const header = webhookSignatureHeader([SECRET, OTHER], 'evt_2', ts, '{"a":1}');
    expect(header).toBe(
      `${signWebhook(SECRET, 'evt_2', ts, '{"a":1}')} ${signWebhook(OTHER, 'evt_2', ts, '{"a":1}')}`,
    );
    const headers = { 'webhook-id': 'evt_2', 'webhook-timestamp': String(ts), 'webhook-signature': header };
    expect(new Webhook(SECRET).verify('{"a":1}', headers)).toEqual({ a: 1 });
    expect(new Webhook(OTHER).verify('{"a":1}', headers)).toEqual({ a: 1 });
  });

  it('needs at least one secret', () => {
    expect(thrown(() => webhookSignatureHeader([], 'm', 1, '')).errors[0]?.path).toBe('secrets');
  });
});
