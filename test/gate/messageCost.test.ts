/**
 * A rule message is rendered on every decision that fires it and kept in the history: what one
 * evaluation renders is bounded, however many placeholders a policy writes and however large the
 * values they print. (A 44 KiB policy of `{params}` placeholders made each evaluation over 15 KiB
 * of params take 3.6 s and record an 85 MB reason, twice.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatCelValue } from '../../src/gate/celMessages.js';
import { compilePolicy } from '../../src/gate/index.js';
import { MESSAGE_TEXT_LIMIT } from '../../src/gate/messageTemplate.js';
import { input } from './gateFixtures.js';

const head = 'version: 1\ndefault_verdict: Allow\n';
/** About 15 KiB of JSON: the params limit is 16 KiB. */
const params = { items: Array.from({ length: 1500 }, (_, i) => ({ a: i })) };

function messageText(result: { reasons: readonly { message: string }[] }): number {
  return result.reasons.reduce((sum, reason) => sum + reason.message.length, 0);
}

describe('rendering rule messages', () => {
  it('bounds what one message with many placeholders renders', () => {
    const message = '{params}'.repeat(5500);
    const policy = compilePolicy(
      `${head}rules:\n  - {name: r, when: "true", verdict: Block, message: "${message}"}\n`,
    );
    const result = policy.evaluate(input('x', { params }));
    expect(result.verdict).toBe('Block');
    expect(result.reasons.map((r) => r.rule)).toEqual(['r']);
    expect(result.reason.length).toBeLessThanOrEqual(MESSAGE_TEXT_LIMIT + 1);
    expect(result.reason.endsWith('…')).toBe(true);
  });

  it('bounds the messages of one evaluation over many rules', () => {
    const rules = Array.from(
      { length: 600 },
      (_, i) => `  - {name: r${i}, when: "true", verdict: Block, message: "{params}"}`,
    ).join('\n');
    const policy = compilePolicy(`${head}rules:\n${rules}\n`);
    const result = policy.evaluate(input('x', { params }));
    expect(result.verdict).toBe('Block');
    // Every rule still fires and is named: only the text is cut.
    expect(result.reasons).toHaveLength(600);
    expect(messageText(result)).toBeLessThanOrEqual(MESSAGE_TEXT_LIMIT + 600);
  });

  it('stops printing a value built of many references to the params once it is too long', () => {
    // Building the list costs an operation per element; printing it, 20,000 copies of the params
    // (300 MB), ran 11 s before this.
    const list = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(', ')}]`;
    const policy = compilePolicy(
      `${head}rules:\n  - {name: r, when: "true", verdict: Block, message: "Refused {${list(1000)}.map(a, ${list(20)}.map(b, params))}"}\n`,
    );
    let formatted = 0;
    const entries = Object.entries;
    Object.entries = ((o: object) => {
      formatted += 1;
      return entries(o);
    }) as typeof Object.entries;
    try {
      const result = policy.evaluate(input('x', { params }));
      expect(result.reason).toBe('Refused …');
    } finally {
      Object.entries = entries;
    }
    // Each copy of the params prints 1,501 objects: a few copies at most are printed.
    expect(formatted).toBeLessThan(10 * 1501);
  });

  it('never prints part of a value: a value that does not fit is left out whole', () => {
    const secretish = 'k'.repeat(MESSAGE_TEXT_LIMIT - 10);
    const policy = compilePolicy(
      `${head}rules:\n  - {name: r, when: "true", verdict: Block, message: "head {params.a} tail {params.b}"}\n`,
    );
    const result = policy.evaluate(input('x', { params: { a: 'short', b: secretish } }));
    expect(result.reason).toBe('head short tail …');
  });

  it('renders an ordinary message whole, a large value included', () => {
    const policy = compilePolicy(
      `${head}rules:\n  - {name: r, when: "true", verdict: Block, message: "Refused {params}"}\n`,
    );
    const result = policy.evaluate(input('x', { params: { a: 1, b: 'x'.repeat(15_000) } }));
    expect(result.reason).toBe(`Refused {a: 1, b: ${'x'.repeat(15_000)}}`);
  });

  it('prints values as before when they fit', () => {
    // The printing of values before it was bounded.
    const reference = (value: unknown): string => {
      if (typeof value === 'string') return value;
      if (value === null || value === undefined) return 'null';
      if (Array.isArray(value)) return `[${value.map(reference).join(', ')}]`;
      if (typeof value === 'object') {
        return `{${Object.entries(value)
          .map(([k, v]) => `${k}: ${reference(v)}`)
          .join(', ')}}`;
      }
      return String(value);
    };
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(formatCelValue(value)).toBe(reference(value));
        const text = reference(value);
        expect(formatCelValue(value, text.length)).toBe(text);
      }),
      { numRuns: 300 },
    );
  });
});
