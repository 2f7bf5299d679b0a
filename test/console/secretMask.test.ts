import { describe, expect, it } from 'vitest';
import * as consoleMask from '../../console/secretMask.js';
import { maskValue } from '../../src/index.js';
import { MASKED_SECRET } from '../../src/state/classify.js';

describe('the console masks secrets as the server does', () => {
  it('the same placeholder, and only for secret items', () => {
    expect(consoleMask.MASKED_SECRET).toBe(MASKED_SECRET);
    for (const sensitivity of ['secret', 'pii', 'public'] as const) {
      for (const value of ['sk_live_51H8abcdEFGHijklMNOP', 'hunter2', '']) {
        expect(consoleMask.maskValue(value, sensitivity)).toBe(maskValue(value, sensitivity));
      }
    }
  });
});
