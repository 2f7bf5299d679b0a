/**
 * A timestamp method given a time zone (`now.getHours('Europe/Paris')`) converts through
 * `toLocaleString`, which builds a formatter on every call: 100–300 µs, while the evaluation
 * budget charged it like any operation (a few units of 500,000). A rule over a list of 2,700
 * zones in an agent's params took 0.7 s per evaluation; one over list literals 11 s before its
 * budget ran out. Each such call now costs what it takes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COST_LIMIT_REASON, input, intListLiteral, oneRulePolicy } from './gateFixtures.js';

// Counts the time-zone conversions an evaluation makes (cel-js converts with toLocaleString).
const original = Date.prototype.toLocaleString;
let conversions = 0;
beforeEach(() => {
  conversions = 0;
  Date.prototype.toLocaleString = function counted(this: Date, ...args: Parameters<Date['toLocaleString']>) {
    conversions += 1;
    return original.apply(this, args);
  } as Date['toLocaleString'];
});
afterEach(() => {
  Date.prototype.toLocaleString = original;
});

describe('time-zone conversions within the evaluation budget', () => {
  it('stops a rule converting once per element of an agent-sized list: policy_error', () => {
    const policy = oneRulePolicy('params.tz.exists(z, now.getHours(z) == 3)');
    const tz = Array.from({ length: 2700 }, () => 'UTC');
    const result = policy.evaluate(input('x', { params: { tz } }));
    expect(result.reasons).toEqual([COST_LIMIT_REASON]);
    expect(conversions).toBeLessThanOrEqual(250);
  });

  it('stops a nest over literals converting on every iteration: policy_error', () => {
    const policy = oneRulePolicy(
      `${intListLiteral(1000)}.all(a, ${intListLiteral(100)}.all(b, now.getHours('America/New_York') >= 0))`,
    );
    expect(policy.evaluate(input('x')).reasons).toEqual([COST_LIMIT_REASON]);
    expect(conversions).toBeLessThanOrEqual(250);
  });

  it('charges zones that do not exist too', () => {
    const policy = oneRulePolicy('params.tz.exists(z, now.getHours(z) == 3)');
    const tz = Array.from({ length: 1500 }, (_, i) => `Bad/${i}`);
    expect(policy.evaluate(input('x', { params: { tz } })).reasons).toHaveLength(1);
    expect(conversions).toBeLessThanOrEqual(250);
  });

  it('still answers rules that convert a few times, and right', () => {
    // 2025-01-03T10:00:00Z (the fixtures' NOW) is 11:00 in Paris, 05:00 in New York, on a Friday.
    const policy = oneRulePolicy(
      "now.getHours('Europe/Paris') == 11 && now.getHours('America/New_York') == 5 && now.getDayOfWeek('Europe/Paris') == 5 && ['Asia/Tokyo', 'UTC'].all(z, now.getFullYear(z) == 2025)",
    );
    expect(policy.evaluate(input('x')).reasons.map((r) => r.rule)).toEqual(['r']);
  });
});
