/**
 * The params every face gates and records: a tool's parsed input in its JSON form. What a schema
 * makes that JSON has no form for is gated as what it holds (test/langchain/parsedArguments.test.ts
 * runs it through a real agent).
 */
import { describe, expect, it } from 'vitest';
import { jsonParams } from '../../adapters/toolgate/index.js';

describe('jsonParams', () => {
  it('gives a Set its members, a Map its entries, a bigint its digits, a Date its ISO time', () => {
    expect(
      jsonParams({
        to: new Set(['a@x.example', 'b@x.example', 'c@x.example']),
        headers: new Map([['x-team', 'ops']]),
        pairs: new Map<unknown, unknown>([[1, 'one']]),
        amount: 12345678901234567890n,
        at: new Date('2026-11-27T00:00:00.000Z'),
        left: undefined,
      }),
    ).toEqual({
      to: ['a@x.example', 'b@x.example', 'c@x.example'],
      headers: { 'x-team': 'ops' },
      pairs: [[1, 'one']],
      amount: '12345678901234567890',
      at: '2026-11-27T00:00:00.000Z',
    });
  });

  it('wraps what is not an object, and fails on a circular structure', () => {
    expect(jsonParams('ls -la')).toEqual({ input: 'ls -la' });
    expect(jsonParams(undefined)).toEqual({});
    const loop: Record<string, unknown> = {};
    loop['self'] = loop;
    expect(() => jsonParams(loop)).toThrow(TypeError);
  });
});
