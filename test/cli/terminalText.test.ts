/**
 * The terminal escape every human-readable CLI line goes through: controls, line breaks and bidi
 * controls come out as visible escapes, everything else as it was, and escaping twice changes
 * nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { terminalLines, terminalSafe, terminalText } from '../../adapters/cli/terminalText.js';

/** What must never reach the terminal raw from a value. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Strings rich in what the escape handles, mixed with ordinary letters. */
const hostile = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0, max: 0xa0 }).map((c) => String.fromCharCode(c)),
    fc.constantFrom('\u061c', '\u200e', '\u200f', '\u2028', '\u2029', '\u202a', '\u202e', '\u2066', '\u2069'),
    fc.constantFrom('a', 'ü', 'ש', '✓', '—', '\\', '"'),
  ),
  maxLength: 40,
});

describe('terminalSafe', () => {
  it.each([
    ['\u001b[5A\r\u001b[2K', '\\x1b[5A\\r\\x1b[2K'],
    ['a\nb\tc', 'a\\nb\\tc'],
    ['\u0000\u0007\u007f', '\\x00\\x07\\x7f'],
    ['\u009b2J\u0085', '\\x9b2J\\x85'],
    ['\u202eevil\u202c \u2066x\u2069', '\\u202eevil\\u202c \\u2066x\\u2069'],
    ['\u200e\u200f\u061c\u2028\u2029', '\\u200e\\u200f\\u061c\\u2028\\u2029'],
  ])('escapes %j as %j', (raw, shown) => {
    expect(terminalSafe(raw)).toBe(shown);
  });

  it('leaves ordinary text in any script unchanged', () => {
    for (const text of ['payments.transfer {"amount":9000}', 'Zürich — ✓ שלום مرحبا 日本', 'C:\\path "q"']) {
      expect(terminalSafe(text)).toBe(text);
    }
  });

  it('never lets an unsafe character through, and is idempotent', () => {
    fc.assert(
      fc.property(hostile, (raw) => {
        const safe = terminalSafe(raw);
        expect(safe).not.toMatch(UNSAFE);
        expect(terminalSafe(safe)).toBe(safe);
      }),
    );
  });

  it('changes nothing but the characters it escapes (decoding gives the value back)', () => {
    const named: Record<string, string> = { n: '\n', r: '\r', t: '\t' };
    const decode = (text: string) =>
      text.replace(/\\(x[0-9a-f]{2}|u[0-9a-f]{4}|[nrt])/g, (_, e: string) =>
        e.length === 1 ? named[e]! : String.fromCharCode(Number.parseInt(e.slice(1), 16)),
      );
    // Without a backslash of its own, a value's escapes are the only ones in the output.
    fc.assert(
      fc.property(
        hostile.filter((raw) => !raw.includes('\\')),
        (raw) => {
          expect(decode(terminalSafe(raw))).toBe(raw);
        },
      ),
    );
  });
});

describe('terminalText and terminalLines', () => {
  it("keep the CLI's own layout and escape only the values", () => {
    expect(terminalText`${'a\tb'}\t${'c\nd'}\n`).toBe('a\\tb\tc\\nd\n');
    expect(terminalText`seq ${7} ${null}`).toBe('seq 7 null');
    expect(terminalLines('Invalid policy:\n  - rules[0]: \u001b[2J')).toBe(
      'Invalid policy:\n  - rules[0]: \\x1b[2J',
    );
  });
});
