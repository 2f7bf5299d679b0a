import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTime } from '../src/runtime.js';

describe('isoTime', () => {
  it('is toISOString for any date, asked in any order, repeats included', () => {
    const ms = fc.integer({ min: -8.64e15, max: 8.64e15 });
    fc.assert(
      fc.property(fc.array(ms, { minLength: 1, maxLength: 20 }), (times) => {
        for (const t of [...times, ...times.reverse()]) {
          expect(isoTime(new Date(t))).toBe(new Date(t).toISOString());
        }
      }),
    );
  });

  it('refuses an invalid date, as toISOString does', () => {
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError);
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});
