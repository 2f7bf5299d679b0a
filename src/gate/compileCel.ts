/**
 * Compiling a CEL expression of a policy: parse, type-check against the gate's environment, and
 * the checks of our own (a condition yields a bool, `matches()` patterns are literals, and valid
 * ones, as are `timestamp()` and `duration()` literals; the tree nests at most
 * {@link MAX_CEL_DEPTH} deep).
 */
import type { Environment } from '@marcbachmann/cel-js';
import type { CelActivation } from './celActivation.js';
import {
  collectStringLiterals,
  findDynamicPattern,
  findLiteralCalls,
  findTooDeepNode,
  hasComprehension,
  readsVariable,
} from './celAstChecks.js';
import { celEnvironment } from './celEnvironment.js';
import { celErrorSummary } from './celMessages.js';

/**
 * How deep an expression's syntax tree may nest. The library checks and evaluates recursively, so
 * a deeper one could overflow the stack (at load as a baffling type error, or later on a deeper
 * stack); a policy's conditions come nowhere near it.
 */
const MAX_CEL_DEPTH = 200;

/** A compiled CEL expression. */
export interface CelProgram {
  /** The expression's text. */
  readonly source: string;
  /** Every string literal in the expression (candidates for state keys read). */
  readonly stringLiterals: readonly string[];
  /**
   * True when the expression has a comprehension (`all`, `exists`, `exists_one`, `map`,
   * `filter`): the only way CEL repeats work, so the only programs run on a metered activation.
   */
  readonly iterates: boolean;
  /**
   * True when the expression names `state`: only such programs can read state items, so only
   * their evaluations watch which items they read (see `stateReads.ts`).
   */
  readonly readsState: boolean;
  /** Evaluates the expression; throws on evaluation errors. */
  run(activation: CelActivation): unknown;
}

/** The result of compiling an expression: a program, or a message and a 0-based offset in the text. */
export type CelCompileResult =
  | { ok: true; program: CelProgram }
  | { ok: false; message: string; offset: number };

/**
 * Parses and type-checks a CEL expression against the gate's variables. With `bool: true` the
 * expression must be able to yield a bool (`dyn` passes and is checked at evaluation).
 */
export function compileCel(source: string, options: { bool: boolean }): CelCompileResult {
  let parsed: ReturnType<Environment['parse']>;
  try {
    parsed = celEnvironment().parse(source);
  } catch (error) {
    return { ok: false, message: `CEL syntax error: ${celErrorSummary(error)}`, offset: errorOffset(error) };
  }
  const tooDeep = findTooDeepNode(parsed.ast, MAX_CEL_DEPTH);
  if (tooDeep !== undefined) {
    return {
      ok: false,
      message: `The expression nests too deeply (at most ${MAX_CEL_DEPTH} levels; each operator of a chain such as a && b && c adds one)`,
      offset: tooDeep,
    };
  }
  // check() also marks the AST as checked, which lets evaluation skip its runtime type pass.
  const checked = parsed.check();
  if (!checked.valid) {
    return {
      ok: false,
      message: `CEL type error: ${celErrorSummary(checked.error)}`,
      offset: errorOffset(checked.error),
    };
  }
  const type = checked.type ?? 'dyn';
  if (options.bool && type !== 'bool' && !type.startsWith('dyn')) {
    return { ok: false, message: `A condition must be a bool expression; this one is ${type}`, offset: 0 };
  }
  const dynamicPattern = findDynamicPattern(parsed.ast);
  if (dynamicPattern !== undefined) {
    return {
      ok: false,
      message:
        'matches() needs a literal pattern: a pattern read from params, context or state would let ' +
        'callers choose a regular expression, and a backtracking one can stall the service',
      offset: dynamicPattern,
    };
  }
  for (const call of findLiteralCalls(parsed.ast)) {
    try {
      celEnvironment().evaluate(call.expression);
    } catch (error) {
      return {
        ok: false,
        message: `${celErrorSummary(error)}; this would fail on every evaluation`,
        offset: call.offset,
      };
    }
  }
  return {
    ok: true,
    program: {
      source,
      stringLiterals: collectStringLiterals(parsed.ast),
      iterates: hasComprehension(parsed.ast),
      readsState: readsVariable(parsed.ast, 'state'),
      run: parsed,
    },
  };
}

/** The 0-based offset of a CEL error in the expression's text (0 when it has none). */
function errorOffset(error: unknown): number {
  const range = (error as { range?: { start?: unknown } } | undefined)?.range;
  return typeof range?.start === 'number' ? range.start : 0;
}
