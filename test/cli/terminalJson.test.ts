/**
 * The JSON the CLI prints for a person to keep (a checkpoint whose file could not be written):
 * still JSON that parses to the same value, with nothing a terminal would act on left raw.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { terminalJson } from '../../adapters/cli/terminalText.js';

const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

const hostile = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0, max: 0xa0 }).map((c) => String.fromCharCode(c)),
    fc.constantFrom('\u061c', '\u200e', '\u2028', '\u202e', '\u2066', '\u2069'),
    fc.constantFrom('a', 'ü', '✓', '\\', '"'),
  ),
});

describe('terminalJson', () => {
  it('parses back to the same value and holds no raw control, bidi or line separator', () => {
    fc.assert(
      fc.property(fc.dictionary(hostile, hostile), fc.constantFrom(undefined, 2), (value, indent) => {
        const text = terminalJson(value, indent);
        expect(JSON.parse(text)).toEqual(value);
        expect(text).not.toMatch(UNSAFE);
      }),
    );
  });

  it('keeps the layout of an indented document', () => {
    expect(terminalJson({ tenant_id: 'a\u202eb', seq: 3 }, 2)).toBe(
      '{\n  "tenant_id": "a\\u202eb",\n  "seq": 3\n}',
    );
  });
});
