/**
 * YAML aliases repeat a part of the policy without its text: the yaml library stops exponential
 * "billion laughs" nests, but lets each anchor be used 100 times, and each use is validated,
 * compiled and hashed again. A 45 KiB `PUT /v1/policy` whose 100 rules share one message of
 * 13,000 placeholders took 2.9 s of the event loop to compile (and its decisions 0.5 s each).
 * Aliases may not expand a policy to more than twice its text; a policy without them is never
 * affected.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDocument, stringify } from 'yaml';
import { aliasExpansionProblem } from '../../src/gate/yamlDocumentProblems.js';
import { compilePolicy, GatehouseError } from '../../src/index.js';

const head = 'version: 1\ndefault_verdict: Allow\n';

function problems(text: string): string[] {
  try {
    compilePolicy(text);
  } catch (error) {
    if (error instanceof GatehouseError) return error.errors.map((e) => e.message);
    throw error;
  }
  return [];
}

describe('YAML aliases in a policy', () => {
  it('refuses aliases that repeat one long message in 100 rules', () => {
    const message = '{1}'.repeat(13_000);
    const rules = Array.from(
      { length: 99 },
      (_, i) => `  - {name: r${i + 1}, when: "true", verdict: Block, message: *m}`,
    ).join('\n');
    const text = `${head}rules:\n  - {name: r0, when: "true", verdict: Block, message: &m "${message}"}\n${rules}\n`;
    expect(text.length).toBeLessThan(48 * 1024);
    expect(problems(text)).toEqual([expect.stringMatching(/aliases expand the policy to more than twice/)]);
  });

  it('refuses aliases that repeat a long condition in 100 entries, valid or not', () => {
    const when = `params.x in [${Array.from({ length: 999 }, (_, i) => i).join(', ')}]`;
    const entries = Array.from({ length: 99 }, (_, i) => `  a${i + 1}.*: {rules: *r}`).join('\n');
    const valid = `${head}actions:\n  a0.*: {rules: &r [{name: r, when: "${when}", verdict: Block}]}\n${entries}\n`;
    expect(problems(valid)).toEqual([expect.stringMatching(/aliases expand the policy/)]);
    expect(problems(`${valid}bogus: 1\n`)).toEqual([expect.stringMatching(/aliases expand the policy/)]);
  });

  it('loads a policy that uses an anchor a few times, as a policy author does', () => {
    const text = `${head}actions:
  payments.*:
    requires: &budget [{key: budget.limit, min_trust: 3}]
    rules:
      - &over {name: over_budget, when: "double(params.amount) > state['budget.limit'].number", verdict: Block}
  refunds.*:
    requires: *budget
    rules: [*over]
  invoices.*:
    requires: *budget
    rules: [*over]
`;
    expect(problems(text)).toEqual([]);
  });

  it('never refuses a document without aliases', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, flow) => {
        const text = stringify(value, {
          collectionStyle: flow ? 'flow' : 'block',
          aliasDuplicateObjects: false,
        });
        const raw = parseDocument(text).toJS();
        expect(aliasExpansionProblem(raw, text.length)).toBeUndefined();
      }),
      { numRuns: 100 },
    );
    // Short keys without values weigh the most for their text.
    const keys = `{${Array.from({ length: 10_000 }, (_, i) => i.toString(36)).join(',')}}`;
    expect(aliasExpansionProblem(parseDocument(keys).toJS(), keys.length)).toBeUndefined();
  });
});
