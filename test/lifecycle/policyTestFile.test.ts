/**
 * Parsing a policy test file: a case's params and context are what the file says, keys and all.
 */
import { describe, expect, it } from 'vitest';
import { parsePolicyTestFile } from '../../src/index.js';

describe('policy test file', () => {
  it("keeps a case's __proto__ params key, which the case's evaluation must see", () => {
    const file = parsePolicyTestFile(
      [
        'cases:',
        '  - name: prototype keys are data',
        '    action: payments.transfer',
        '    params: { amount: 5, __proto__: { amount: 99999 } }',
        '    context: { __proto__: 1 }',
        '    expect: { verdict: Allow }',
      ].join('\n'),
      { path: 'cases.test.yaml' },
    );
    const [testCase] = file.cases;
    expect(Object.keys(testCase!.params)).toEqual(['amount', '__proto__']);
    expect(JSON.stringify(testCase!.params)).toBe('{"amount":5,"__proto__":{"amount":99999}}');
    expect(JSON.stringify(testCase!.context)).toBe('{"__proto__":1}');
  });

  it('names a case whose params are not an object', () => {
    expect(() =>
      parsePolicyTestFile('cases:\n  - { name: n, action: a.b, params: [1], expect: { verdict: Allow } }\n', {
        path: 'cases.test.yaml',
      }),
    ).toThrow(/cases\[0\]\.params: .*object/);
  });
});
