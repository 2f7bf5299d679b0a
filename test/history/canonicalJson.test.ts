import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/canonicalJson.js';
import { hashEvent } from '../../src/history/hashChain.js';

// The RFC 8785 reference package, kept as a dev dependency to pin the serialiser against it.
const canonicalize = canonicalizeModule as unknown as (input: unknown) => string | undefined;

describe('canonicalJson', () => {
  it('is RFC 8785 canonical JSON: byte for byte what the reference package gives, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        expect(canonicalJson(value)).toBe(canonicalize(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees on the awkward parts: key order by UTF-16 code units, escapes, lone surrogates, number spelling', () => {
    const value = {
      '\u20ac': 1,
      '\r': 2,
      '\ud83d\ude00': 3,
      a: [1.0, 1e21, 1e-7, -0, 0.1 + 0.2, 2 ** 53],
      s: 'line\nbreak "quoted" \\ \u0001 \ud800 é',
      '': null,
      nested: { z: true, y: false, x: { b: [], a: {} } },
    };
    expect(canonicalJson(value)).toBe(canonicalize(value));
    // RFC 8785 §3.2.3's own sorting example.
    expect(
      canonicalJson({
        '\u20ac': 0,
        '\r': 0,
        '\ufb33': 0,
        '1': 0,
        '\ud83d\ude00': 0,
        '\u0080': 0,
        '\u00f6': 0,
      }),
    ).toBe('{"\\r":0,"1":0,"\u0080":0,"\u00f6":0,"\u20ac":0,"\ud83d\ude00":0,"\ufb33":0}');
  });

  it('refuses a circular structure instead of hashing a placeholder', () => {
    const loop: Record<string, unknown> = { a: 1 };
    loop['self'] = loop;
    expect(() => canonicalJson(loop)).toThrow();
  });
});

describe('hashEvent', () => {
  it('hashes the RFC 8785 canonical JSON of all its fields and the format version', () => {
    const field = fc.string({ maxLength: 40 });
    fc.assert(
      fc.property(
        fc.record({
          tenant_id: field,
          seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
          event_id: field,
          type: field,
          session_id: field,
          occurred_at: field,
          data: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 })),
          prev_hash: field,
        }),
        (fields) => {
          const reference = createHash('sha256')
            .update(canonicalize({ ...fields, v: 2 })!)
            .digest('hex');
          expect(hashEvent(fields)).toBe(reference);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
