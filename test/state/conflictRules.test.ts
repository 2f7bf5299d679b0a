/**
 * The conflict rule over every pair of default sources: equal or higher trust supersedes, lower
 * trust conflicts, the same value never changes anything.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideWrite, defaultPolicy } from '../../src/index.js';

const sources = Object.entries(defaultPolicy().sources);

describe('decideWrite', () => {
  it('a first write creates', () => {
    expect(decideWrite(null, { value: 'v', type: 'fact', trust: 0 })).toBe('created');
  });

  for (const [current, currentTrust] of sources) {
    for (const [incoming, incomingTrust] of sources) {
      const expected = incomingTrust >= currentTrust ? 'superseded' : 'conflict';
      it(`${incoming} (${incomingTrust}) over ${current} (${currentTrust}): ${expected}`, () => {
        const cur = { value: '5000', type: 'fact', trust: currentTrust };
        expect(decideWrite(cur, { value: '9999', type: 'fact', trust: incomingTrust })).toBe(expected);
        expect(decideWrite(cur, { value: '5000', type: 'fact', trust: incomingTrust })).toBe('unchanged');
        expect(decideWrite(cur, { value: '5000', type: 'assumption', trust: incomingTrust })).toBe(expected);
      });
    }
  }

  it('never lets a lower trust replace a value (property)', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.nat(5), fc.nat(5), (a, b, ta, tb) => {
        const outcome = decideWrite(
          { value: a, type: 'fact', trust: ta },
          { value: b, type: 'fact', trust: tb },
        );
        if (a === b) expect(outcome).toBe('unchanged');
        else expect(outcome).toBe(tb >= ta ? 'superseded' : 'conflict');
      }),
    );
  });
});
