/**
 * Compiling a CEL expression of a policy: parse, type-check against the gate's environment, and
 * the checks of our own (a condition yields a bool, `matches()` patterns are literals, and valid
 * ones, as are `timestamp()` and `duration()` literals; the tree nests at most
 * {@link MAX_CEL_DEPTH} deep; comprehensions nest at most {@link MAX_COMPREHENSION_NESTING} deep
 * and can meet the evaluation budget). Programs run within the evaluation's cost budget
 * ({@link CEL_COST_LIMIT}).
 */
import type { Environment } from '@marcbachmann/cel-js';
import type { CelActivation } from './celActivation.js';
import {
  collectStringLiterals,
  findCostedNodes,
  findCostlyComprehension,
  findDynamicPattern,
  findLiteralCalls,
  findTooDeepNode,
  readsVariable,
} from './celAstChecks.js';
import { CEL_COST_LIMIT, markCostedNodes, runMetered } from './celCostLimit.js';
import { celEnvironment } from './celEnvironment.js';
import { celErrorSummary } from './celMessages.js';
import { findNonLinearPattern } from './linearPattern.js';

/**
 * How deep an expression's syntax tree may nest. The library checks and evaluates recursively, so
 * a deeper one could overflow the stack (at load as a baffling type error, or later on a deeper
 * stack); a policy's conditions come nowhere near it.
 */
const MAX_CEL_DEPTH = 200;

/**
 * How deep comprehensions may nest (`a.exists(x, b.exists(y, c.exists(z, …)))` is 3). Each level
 * multiplies the work; the budget stops a nest at evaluation, but one deeper than this is refused
 * at load: no policy needs it, and it could only ever spend the budget.
 */
export const MAX_COMPREHENSION_NESTING = 3;

/** A compiled CEL expression. */
export interface CelProgram {
  /** The expression's text. */
  readonly source: string;
  /** Every string literal in the expression (candidates for state keys read). */
  readonly stringLiterals: readonly string[];
  /**
   * Evaluates the expression; throws on evaluation errors. On a metered activation (see
   * `meteredActivation`), its work is charged to that evaluation's budget and throws
   * `CelCostLimitError` once the budget is spent.
   */
  /**
   * True when the expression names `state`: only such programs can read state items, so only
   * their evaluations watch which items they read (see `stateReads.ts`).
   */
  readonly readsState: boolean;
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
    const limit = limitMessage(error);
    if (limit !== undefined) return { ok: false, message: limit, offset: errorOffset(error) };
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
  const costly = findCostlyComprehension(parsed.ast, {
    maxNesting: MAX_COMPREHENSION_NESTING,
    maxIterations: CEL_COST_LIMIT,
  });
  if (costly !== undefined) return { ok: false, message: costly.message, offset: costly.offset };
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
    const nonLinear = call.pattern === undefined ? undefined : findNonLinearPattern(call.pattern);
    if (nonLinear !== undefined) {
      return {
        ok: false,
        message: `This matches() pattern cannot run in linear time: ${nonLinear.message}; backtracking on it could stall the service`,
        offset: call.offset,
      };
    }
  }
  markCostedNodes(findCostedNodes(parsed.ast));
  return {
    ok: true,
    program: {
      source,
      stringLiterals: collectStringLiterals(parsed.ast),
      readsState: readsVariable(parsed.ast, 'state'),
      run: (activation) => runMetered(activation, () => parsed(activation)),
    },
  };
}

const LIMIT_MESSAGES: Record<string, (limit: string) => string> = {
  maxListElements: (n) => `A list literal may have at most ${n} elements`,
  maxMapEntries: (n) => `A map literal may have at most ${n} entries`,
  maxAstNodes: (n) => `An expression may have at most ${n} operations and values`,
  maxDepth: (n) => `The expression nests too deeply (at most ${n} levels)`,
  maxCallArguments: (n) => `A call may have at most ${n} arguments`,
};

/** A parser limit (see `CEL_PARSER_LIMITS`) said in the policy's terms, or undefined for other errors. */
function limitMessage(error: unknown): string | undefined {
  const match = /^Exceeded (\w+) \((\d+)\)/.exec(celErrorSummary(error));
  const say = match ? LIMIT_MESSAGES[match[1]!] : undefined;
  return say?.(match![2]!);
}

/** The 0-based offset of a CEL error in the expression's text (0 when it has none). */
function errorOffset(error: unknown): number {
  const range = (error as { range?: { start?: unknown } } | undefined)?.range;
  return typeof range?.start === 'number' ? range.start : 0;
}
