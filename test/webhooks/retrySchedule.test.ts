import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GatehouseError } from '../../src/errors.js';
import {
  classifyDeliveryResponse,
  MAX_RETRY_AFTER_SECONDS,
  nextRetryDelay,
  parseRetryAfter,
  RETRY_DELAYS_MS,
} from '../../src/webhooks/index.js';

const mid = () => 0.5;

describe('RETRY_DELAYS_MS', () => {
  it('is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    const s = 1000;
    const h = 3600 * s;
    expect(RETRY_DELAYS_MS).toEqual([5 * s, 300 * s, 1800 * s, 2 * h, 5 * h, 10 * h, 10 * h]);
  });
});

describe('nextRetryDelay', () => {
  it('waits about 5 s after the first failed attempt, with ±20 % jitter', () => {
    expect(nextRetryDelay(1, { random: mid })).toBe(5000);
    expect(nextRetryDelay(1, { random: () => 0 })).toBe(4000);
    expect(nextRetryDelay(1, { random: () => 0.999999 })).toBe(6000);
  });

  it('follows the schedule, then gives up (the delivery becomes failed)', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((n) => nextRetryDelay(n, { random: mid }));
    expect(delays).toEqual([...RETRY_DELAYS_MS]);
    expect(nextRetryDelay(8, { random: mid })).toBeNull();
    expect(nextRetryDelay(100, { random: mid, retryAfterSeconds: 5 })).toBeNull();
  });

  it('honours Retry-After as a lower bound, capped at 24 h', () => {
    expect(nextRetryDelay(1, { random: mid, retryAfterSeconds: 60 })).toBe(60_000);
    expect(nextRetryDelay(2, { random: mid, retryAfterSeconds: 1 })).toBe(300_000);
    expect(nextRetryDelay(1, { random: mid, retryAfterSeconds: 10 * 86_400 })).toBe(86_400_000);
    expect(nextRetryDelay(1, { random: mid, retryAfterSeconds: 0.5 })).toBe(5000);
  });

  it('ignores a nonsensical Retry-After or random value', () => {
    expect(nextRetryDelay(1, { random: mid, retryAfterSeconds: Number.NaN })).toBe(5000);
    expect(nextRetryDelay(1, { random: mid, retryAfterSeconds: -30 })).toBe(5000);
    expect(nextRetryDelay(1, { random: () => Number.NaN })).toBe(5000);
    expect(nextRetryDelay(1, { random: () => 7 })).toBe(6000);
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects attemptsSoFar = %s', (n) => {
    expect(() => nextRetryDelay(n, { random: mid })).toThrow(GatehouseError);
  });

  it('property: every delay stays within ±20 % of the schedule, raised only by Retry-After', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.option(fc.double({ min: 0, max: 1e7, noNaN: true }), { nil: undefined }),
        (attempts, r, retryAfterSeconds) => {
          const delay = nextRetryDelay(attempts, { random: () => r, retryAfterSeconds });
          const base = RETRY_DELAYS_MS[attempts - 1];
          if (base === undefined) return delay === null;
          if (delay === null || !Number.isInteger(delay)) return false;
          const floor = retryAfterSeconds
            ? Math.ceil(Math.min(retryAfterSeconds, MAX_RETRY_AFTER_SECONDS) * 1000)
            : 0;
          return delay >= Math.max(base * 0.8, floor) && delay <= Math.max(base * 1.2, floor);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('classifyDeliveryResponse', () => {
  it.each([
    [200, 'delivered'],
    [201, 'delivered'],
    [204, 'delivered'],
    [299, 'delivered'],
    [410, 'disable'],
    [100, 'retry'],
    [301, 'retry'],
    [302, 'retry'],
    [304, 'retry'],
    [400, 'retry'],
    [401, 'retry'],
    [404, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [503, 'retry'],
  ] as const)('%i → %s', (status, outcome) => {
    expect(classifyDeliveryResponse(status)).toBe(outcome);
  });
});

describe('parseRetryAfter', () => {
  const now = new Date('2015-10-21T07:27:00Z');

  it.each<[string | undefined, number | undefined]>([
    [undefined, undefined],
    ['120', 120],
    [' 0 ', 0],
    ['Wed, 21 Oct 2015 07:28:00 GMT', 60],
    ['Wed, 21 Oct 2015 07:28:00.5 GMT', undefined],
    ['Wednesday, 21-Oct-15 07:28:30 GMT', 90],
    ['Wed Oct 21 07:29:00 2015', 120],
    ['Wed Oct  1 07:29:00 2015', 0],
    ['Tue, 20 Oct 2015 07:28:00 GMT', 0],
    ['Sat, 31 Feb 2015 07:28:00 GMT', undefined],
    ['Wed, 21 Oct 2015 25:28:00 GMT', undefined],
    ['-5', undefined],
    ['1.5', undefined],
    ['soon', undefined],
    ['', undefined],
  ])('%j → %j', (header, expected) => {
    expect(parseRetryAfter(header, now)).toBe(expected);
  });
});
