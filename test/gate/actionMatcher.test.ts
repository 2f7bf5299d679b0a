/**
 * Action patterns: the linear matcher agrees with picomatch (which it replaced) on the documented
 * glob subset, answers a pattern that made picomatch backtrack for half a minute, and refuses at
 * load what it does not support.
 */
import fc from 'fast-check';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { GatehouseError } from '../../src/errors.js';
import { compileActionPattern, MAX_PATTERN_ALTERNATIVES } from '../../src/gate/actionMatcher.js';
import { compilePolicy } from '../../src/gate/index.js';

/** The matcher before: picomatch over `/`-separated paths, exact names compared as strings. */
function picomatchReference(pattern: string): (action: string) => boolean {
  const scan = picomatch.scan(pattern);
  if (!scan.isGlob && !scan.negated) return (action) => action === pattern;
  const toPath = (name: string) => name.replaceAll('.', '/');
  const isMatch = picomatch(toPath(pattern), { dot: true });
  return (action) => isMatch(toPath(action));
}

const char = fc.constantFrom('a', 'b', 'c');
/** Well-formed action names: 1 to 4 non-empty segments, separated by `.` (sometimes `/`). */
const actionName = fc
  .tuple(
    fc.array(fc.string({ unit: char, minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 4 }),
    fc.constantFrom('.', '.', '/'),
  )
  .map(([segments, separator]) => segments.join(separator));

const atom = fc.constantFrom('a', 'b', 'c', '*', '?');
/** Literals, `?` and `*` (star runs such as `a**b` or `***` are picomatch quirks, tested by example). */
const plainSegment = fc
  .array(atom, { minLength: 1, maxLength: 3 })
  .map((atoms) => atoms.join('').replace(/\*+/g, '*'));
/**
 * A brace alternative: a segment holding one character at least (picomatch lets a `*` alone in
 * braces match an empty segment, `a.**.{b,*}` matching `a`; here `*` stays within one segment, as
 * documented), or two segments.
 */
const braceChoice = plainSegment.filter((text) => /[^*]/.test(text));
/** A segment of the documented subset: literals, `*`, `?`, `**`, and `{x,y}`. */
const segment: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: plainSegment },
  { weight: 1, arbitrary: fc.constant('**') },
  {
    weight: 1,
    arbitrary: fc
      .array(
        fc.oneof(
          braceChoice,
          fc.tuple(braceChoice, braceChoice).map((p) => p.join('.')),
        ),
        {
          minLength: 2,
          maxLength: 3,
        },
      )
      .map((choices) => `{${choices.join(',')}}`),
  },
);
const globPattern = fc
  .tuple(fc.boolean(), fc.array(segment, { minLength: 1, maxLength: 4 }))
  .map(([negated, segments]) => `${negated ? '!' : ''}${segments.join('.')}`)
  // picomatch lets a final `.**` match no segment except after a `*` (`a.**` matches `a`, but
  // `a*.**` does not match `ab`), against its documentation, which this matcher follows.
  .filter((pattern) => !/[*}]\.\*\*$/.test(pattern))
  // At most 27 alternatives: more than 64 is refused.
  .filter((pattern) => pattern.split('{').length <= 4);

describe('action patterns', () => {
  it('agree with picomatch on the documented subset (well-formed action names)', () => {
    fc.assert(
      fc.property(globPattern, fc.array(actionName, { minLength: 1, maxLength: 8 }), (pattern, actions) => {
        const ours = compileActionPattern(pattern);
        const reference = picomatchReference(pattern);
        for (const action of actions)
          expect([pattern, action, ours(action)]).toEqual([pattern, action, reference(action)]);
      }),
      { numRuns: 3000 },
    );
  });

  it.each([
    ['payments.transfer', 'payments.transfer', true],
    ['payments.transfer', 'payments/transfer', false],
    ['payments.*', 'payments.refund', true],
    ['payments.*', 'payments.refund.bulk', false],
    ['payments.*', 'payments/refund', true],
    ['payments.**', 'payments', true],
    ['payments.**', 'payments.refund.bulk', true],
    ['payments.**', 'paymentsX.refund', false],
    ['a.**.b', 'a.b', true],
    ['a.**.b', 'a.x.y.b', true],
    ['a**b', 'axyb', true],
    ['a**b', 'ax.yb', false],
    ['{refund*,transfer}.bulk', 'refunds.bulk', true],
    ['{refunds,chargebacks}.create', 'chargebacks.create', true],
    ['{a.b,c}.d', 'a.b.d', true],
    ['{a}', '{a}', true],
    ['tool.?', 'tool.x', true],
    ['tool.?', 'tool.xy', false],
    ['!payments.**', 'email.send', true],
    ['!payments.**', 'payments.refund', false],
    ['!!a.*', 'a.b', true],
  ])('%s against %s: %s', (pattern, action, expected) => {
    expect(compileActionPattern(pattern)(action)).toBe(expected);
    expect(picomatchReference(pattern)(action)).toBe(expected);
  });

  it('answers a pattern that makes a backtracking matcher run for a minute, and answers right', () => {
    // picomatch compiled this to a backtracking regular expression: a minute on this 40-character
    // action (34 s with one `*a` less), every event loop turn of it blocked.
    const matches = compileActionPattern(`${'*a'.repeat(10)}*b`);
    expect(matches('a'.repeat(40))).toBe(false);
    expect(matches(`${'a'.repeat(40)}b`)).toBe(true);
    expect(matches(`${'a'.repeat(9)}b`)).toBe(false);
    expect(matches(`${'ab'.repeat(10)}b`)).toBe(true);
  });

  it.each([
    ['tool[12]', /"\[" at character 5: character classes/],
    ['@(a|b).x', /groups and extglobs/],
    ['a\\*', /backslash escapes/],
    ['{a,b', /unbalanced "\{" at character 1/],
    ['a,b}', /unbalanced "\}" at character 4/],
    ['{a,b}'.repeat(7), new RegExp(`more than ${MAX_PATTERN_ALTERNATIVES} alternatives`)],
    ['a.{**,b}.c', /\*\* inside \{…\} is not supported/],
  ])('refuses %s at load, saying why', (pattern, message) => {
    expect(() => compileActionPattern(pattern)).toThrow(message);
    let error: unknown;
    try {
      compilePolicy(`version: 1\nactions:\n  ${JSON.stringify(pattern)}: {}\n`);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(GatehouseError);
    expect((error as GatehouseError).errors?.[0]).toMatchObject({
      path: `actions[${JSON.stringify(pattern)}]`,
      message: expect.stringMatching(/^3:3: Invalid action pattern: /),
    });
  });
});
