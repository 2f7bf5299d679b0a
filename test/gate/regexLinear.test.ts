/**
 * `matches()` patterns run on V8's backtracking RegExp; the CLI turns on V8's fallback to its
 * linear-time engine, which refuses lookaround, backreferences and large repetition bounds: such
 * a pattern backtracks without end on an agent's params, fallback or not
 * (`^(?=.{1,254}$)([a-z0-9]+\.?)+@corp\.com$` took 0.8 s on 28 characters, `^(a{1,20})+$` 13 s).
 * A pattern that engine cannot run does not load.
 */
import { setFlagsFromString } from 'node:v8';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findNonLinearPattern, MAX_REPLICATION } from '../../src/gate/linearPattern.js';
import { compilePolicy, GatehouseError } from '../../src/index.js';

function policyWith(when: string): string {
  return `version: 1\ndefault_verdict: Allow\nrules:\n  - name: r\n    when: ${JSON.stringify(when)}\n    verdict: Block\n`;
}

function loadProblem(pattern: string): string | undefined {
  // A CEL string literal in single quotes: backslashes doubled, as a policy author writes them.
  const literal = `'${pattern.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
  try {
    compilePolicy(policyWith(`has(params.s) && params.s.matches(${literal})`));
    return undefined;
  } catch (error) {
    if (error instanceof GatehouseError) return error.errors.map((e) => e.message).join('\n');
    throw error;
  }
}

describe('matches() patterns the linear-time engine cannot run', () => {
  it.each([
    ['a lookahead', '^(?=.{1,254}$)([a-z0-9]+\\.?)+@corp\\.com$', /lookaround/],
    ['a negative lookahead', '^(?!admin)(a+)+$', /lookaround/],
    ['a lookbehind', '(?<=(a+)+)b', /lookaround/],
    ['a backreference', '^(a+)+\\1$', /backreference/],
    ['a named backreference', '^(?<x>a+)+\\k<x>$', /backreference/],
    ['a bound above 16', '^(a{1,20})+$', /repetition bound above 16/],
    ['a large minimum', '^(?:a+){1,100}$', /repetition bound above 16/],
    ['nested repetitions past 16', '^(?:(?:a{0,8}){0,3})$', /multiply past 16/],
    ['five nested +', '^(((((a+)+)+)+)+)$', /multiply past 16/],
  ])('refuses %s at load', (_what, pattern, message) => {
    expect(loadProblem(pattern)).toMatch(message);
    expect(loadProblem(pattern)).toMatch(/cannot run in linear time/);
  });

  it.each([
    '^[a-z]+$',
    '^(a+)+$',
    '^[A-Z]{2}[0-9]{2}[A-Z0-9]{1,16}$',
    '^(?<user>[a-z0-9._-]+)@corp\\.com$',
    '^\\d{3}-\\d{4}$',
    '[(?=]\\{1,99}',
    '^(?:a+){8}$',
    'a{,500}',
  ])('loads %s', (pattern) => {
    expect(loadProblem(pattern)).toBeUndefined();
  });
});

describe('the check agrees with V8', () => {
  // V8 says whether its linear-time engine can run a pattern when asked for the `l` flag.
  setFlagsFromString('--enable-experimental-regexp-engine');
  function v8Linear(pattern: string): boolean {
    try {
      new RegExp(pattern, 'l');
      return true;
    } catch {
      return false;
    }
  }
  function valid(pattern: string): boolean {
    try {
      new RegExp(pattern);
      return true;
    } catch {
      return false;
    }
  }

  const bound = fc.integer({ min: 0, max: 20 });
  const quantifier = fc.oneof(
    fc.constantFrom('', '', '*', '+', '?', '*?', '+?'),
    bound.map((n) => `{${n}}`),
    bound.map((n) => `{${n},}`),
    fc.tuple(bound, bound).map(([a, b]) => `{${Math.min(a, b)},${Math.max(a, b)}}`),
  );
  const { pattern: anyPattern } = fc.letrec((tie) => ({
    atom: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom('a', 'b', '.', '[ab]', '[^(]', '\\d', '\\.', '^', '$', '{', 'x{2'),
      tie('pattern').map((p) => `(${p})`),
      tie('pattern').map((p) => `(?:${p})`),
      tie('pattern').map((p) => `(?=${p})`),
      tie('pattern').map((p) => `(?<!${p})`),
      fc.constantFrom('\\1', '(b)\\1'),
    ),
    piece: fc.tuple(tie('atom'), quantifier).map(([a, q]) => `${a}${q}`),
    sequence: fc.array(tie('piece'), { minLength: 1, maxLength: 3 }).map((pieces) => pieces.join('')),
    pattern: fc.oneof(
      tie('sequence'),
      fc.tuple(tie('sequence'), tie('sequence')).map(([a, b]) => `${a}|${b}`),
    ),
  }));

  const pattern = anyPattern as fc.Arbitrary<string>;

  // Node 20's V8 counts an open bound `{n,}` as n + 1 copies, later ones as n: the check keeps the
  // stricter count, so a policy loads alike on every supported Node.
  const countsOpenBoundsAsCheck = !v8Linear(`a{${MAX_REPLICATION},}`);

  it('refuses every pattern V8 cannot run in linear time, and no other save degenerate ones', () => {
    fc.assert(
      fc.property(pattern.filter(valid), (p) => {
        const ours = findNonLinearPattern(p) === undefined;
        // Refused here, run by V8 on its own terms: `\1` read as an octal escape when no group
        // precedes it, and parts V8 drops or simplifies (repeated lookaround or `^`/`$`, `{0}`).
        const degenerate = /\(\?[=!<]|\\1|\{0(,0)?\}|[$^]/.test(p);
        // Whatever loads, this V8 runs in linear time.
        if (ours) expect(v8Linear(p), p).toBe(true);
        // And nothing else is refused, where this V8 counts as the check does.
        else if (countsOpenBoundsAsCheck && !degenerate) expect(v8Linear(p), p).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });
});
