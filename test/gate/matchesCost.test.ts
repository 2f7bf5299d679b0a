/**
 * `matches()` runs on V8's backtracking engine, which retries the pattern from every position of
 * the subject: ordinary patterns (`[a-z]+@corp`, `.*password.*`) take time quadratic in the
 * subject's length, about 200 ms on the 16 KiB an agent may send, fallback to the linear-time
 * engine or not (its backtracking counter does not see these loops). The budget charged the
 * subject's length / 64: one rule spent 200 ms per evaluation, a loop over a list literal minutes.
 * A call now costs the square of its subject's length (/ 256), charged before it runs.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COST_LIMIT_REASON, input, intListLiteral, oneRulePolicy } from './gateFixtures.js';

// Counts the runs of a policy's patterns over long subjects (cel-js matches with RegExp#test).
const original = RegExp.prototype.test;
let runs = 0;
beforeEach(() => {
  runs = 0;
  RegExp.prototype.test = function counted(this: RegExp, text: string) {
    if (typeof text === 'string' && text.length >= 4000) runs += 1;
    return original.call(this, text);
  };
});
afterEach(() => {
  RegExp.prototype.test = original;
});

describe('matches() over long subjects', () => {
  it.each(['[a-z]+@corp\\.com', '.*password.*'])(
    'fails closed, without running it, on a pattern that is quadratic over 16 KiB: %s',
    (pattern) => {
      const policy = oneRulePolicy(`params.s.matches('${pattern.replaceAll('\\', '\\\\')}')`);
      const result = policy.evaluate(input('x', { params: { s: 'x'.repeat(16_000) } }));
      expect(result.reasons).toEqual([COST_LIMIT_REASON]);
      expect(runs).toBe(0);
    },
  );

  it('stops a loop of matches() over a long subject within the budget', () => {
    const policy = oneRulePolicy(`${intListLiteral(100)}.exists(i, params.s.matches('.*y'))`);
    const result = policy.evaluate(input('x', { params: { s: 'x'.repeat(4000) } }));
    expect(result.reasons).toEqual([COST_LIMIT_REASON]);
    expect(runs).toBeLessThan(10);
  });

  it('still decides on ordinary subjects, and right', () => {
    const policy = oneRulePolicy(
      "params.to.matches('^[a-z.]+@corp\\\\.com$') && params.body.matches('secret')",
    );
    const body = `${'lorem ipsum '.repeat(300)} secret`;
    expect(
      policy.evaluate(input('x', { params: { to: 'ann@corp.com', body } })).reasons.map((r) => r.rule),
    ).toEqual(['r']);
    expect(policy.evaluate(input('x', { params: { to: 'eve@evil.com', body } })).reasons).toEqual([]);
  });
});
