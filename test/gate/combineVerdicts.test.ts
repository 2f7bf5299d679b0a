import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { combineVerdicts, type Verdict } from '../../src/gate/index.js';

const RANK: Record<Verdict, number> = { Allow: 0, Warn: 1, Block: 2 };
const verdict = fc.constantFrom<Verdict>('Allow', 'Warn', 'Block');

describe('combineVerdicts', () => {
  it('allows when there is nothing to combine', () => {
    expect(combineVerdicts([])).toBe('Allow');
  });

  it('lets the strictest verdict win', () => {
    expect(combineVerdicts(['Allow', 'Allow'])).toBe('Allow');
    expect(combineVerdicts(['Allow', 'Warn'])).toBe('Warn');
    expect(combineVerdicts(['Warn', 'Block', 'Allow'])).toBe('Block');
  });

  it('returns the maximum verdict of any list', () => {
    fc.assert(
      fc.property(fc.array(verdict), (verdicts) => {
        const expected = verdicts.reduce<Verdict>((max, v) => (RANK[v] > RANK[max] ? v : max), 'Allow');
        expect(combineVerdicts(verdicts)).toBe(expected);
      }),
    );
  });

  it('does not depend on the order of the verdicts', () => {
    fc.assert(
      fc.property(
        fc
          .array(verdict)
          .chain((verdicts) =>
            fc.tuple(fc.constant(verdicts), fc.shuffledSubarray(verdicts, { minLength: verdicts.length })),
          ),
        ([verdicts, shuffled]) => {
          expect(combineVerdicts(shuffled)).toBe(combineVerdicts(verdicts));
        },
      ),
    );
  });

  it('is never more permissive than any verdict it combines', () => {
    fc.assert(
      fc.property(fc.array(verdict), fc.array(verdict), (left, right) => {
        const combined = combineVerdicts([...left, ...right]);
        expect(RANK[combined]).toBeGreaterThanOrEqual(RANK[combineVerdicts(left)]);
        expect(combined).toBe(combineVerdicts([combineVerdicts(left), combineVerdicts(right)]));
      }),
    );
  });
});
