import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GatehouseError } from '../../src/errors.js';
import { canonicalKey, keyCategory, MAX_KEY_LENGTH } from '../../src/state/canonicalKey.js';

const GRAMMAR = /^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/;

function rejection(raw: unknown): GatehouseError {
  try {
    canonicalKey(raw as string);
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    return error as GatehouseError;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be rejected`);
}

describe('canonicalKey', () => {
  it.each([
    ['user.email', 'user.email'],
    ['  User.Email \n', 'user.email'],
    ['\tBILLING.Card.Last_4-digits ', 'billing.card.last_4-digits'],
    ['a.b', 'a.b'],
    ['0.9', '0.9'],
    ['-._', '-._'],
  ])('canonicalises %j to %j', (raw, expected) => {
    expect(canonicalKey(raw)).toBe(expected);
  });

  it('accepts exactly 128 characters and rejects 129, counted after trimming', () => {
    const key = `a.${'b'.repeat(MAX_KEY_LENGTH - 2)}`;
    expect(canonicalKey(`   ${key}   `)).toBe(key);
    const error = rejection(`${key}b`);
    expect(error.message).toContain('129 characters long; the maximum is 128');
  });

  it.each([
    ['', 'Key is empty'],
    ['   ', 'Key is empty'],
    ['email', 'has one segment; expected at least two'],
    ['user..email', 'empty segment at position 2'],
    ['.user', 'empty segment at position 1'],
    ['user.', 'empty segment at position 2'],
    ['user.e mail', 'contains " " in segment "e mail"'],
    ['user/email.x', 'contains "/" in segment "user/email"'],
    ['user.émail', 'contains "é" (U+00E9)'],
    // The Kelvin sign lower-cases to an ASCII k with toLowerCase; it must not alias "user.key".
    ['user.\u212Aey', 'contains "\u212A" (U+212A)'],
    ['user.İd', 'contains "İ" (U+0130)'],
    ['user.\u{1F600}', 'contains "\u{1F600}" (U+1F600)'],
    ['user.a\u0000', 'contains "\\u0000" (U+0000)'],
  ])('rejects %j with the rule that failed', (raw, rule) => {
    const error = rejection(raw);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain(rule);
    expect(error.errors).toEqual([{ path: 'key', message: error.message }]);
  });

  it('quotes the offending key in the message, truncated when long', () => {
    expect(rejection('Email').message).toContain('"email"');
    const long = rejection(`x${'y'.repeat(300)}`);
    expect(long.message).toContain(`"x${'y'.repeat(79)}…"`);
    expect(long.message.length).toBeLessThan(200);
  });

  it('rejects non-strings with a GatehouseError rather than a TypeError', () => {
    expect(rejection(undefined).message).toBe('Key must be a string, got undefined.');
    expect(rejection(null).message).toBe('Key must be a string, got null.');
    expect(rejection(42).code).toBe('invalid_request');
  });

  const segment = fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/);
  const keyLike = fc.array(segment, { minLength: 1, maxLength: 6 }).map((s) => s.join('.'));
  const whitespace = fc.constantFrom('', ' ', '  ', '\t', '\n', ' \r\n ', '\u00a0', '\ufeff');
  const anyInput = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.tuple(whitespace, keyLike, whitespace).map(([a, k, b]) => a + k + b),
    fc.stringMatching(/^[ a-zA-Z0-9_.-]{0,140}$/),
  );

  it('property: every accepted output matches the grammar, fits 128 chars and is a fixed point', () => {
    fc.assert(
      fc.property(anyInput, (raw) => {
        let key: string;
        try {
          key = canonicalKey(raw);
        } catch (error) {
          return error instanceof GatehouseError && error.code === 'invalid_request';
        }
        return GRAMMAR.test(key) && key.length <= MAX_KEY_LENGTH && canonicalKey(key) === key;
      }),
      { numRuns: 2000 },
    );
  });

  it('property: case and surrounding whitespace do not change the result', () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z0-9_-]{1,12}$/), { minLength: 2, maxLength: 6 }),
        whitespace,
        whitespace,
        fc.infiniteStream(fc.boolean()),
        (segments, before, after, upper) => {
          const key = segments.join('.');
          fc.pre(key.length <= MAX_KEY_LENGTH);
          const shouted = [...key].map((c) => (upper.next().value ? c.toUpperCase() : c)).join('');
          expect(canonicalKey(before + shouted + after)).toBe(key);
          expect(canonicalKey(key)).toBe(key);
        },
      ),
    );
  });
});

describe('keyCategory', () => {
  it('is the first segment, trimmed and lower-cased', () => {
    expect(keyCategory('user.email')).toBe('user');
    expect(keyCategory(' Billing.Card.Number')).toBe('billing');
  });

  it('never throws, so it also works on field names that are not state keys', () => {
    expect(keyCategory('params')).toBe('params');
    expect(keyCategory('')).toBe('');
    expect(keyCategory('Params.API Key')).toBe('params');
  });
});
