/**
 * What a policy learns from a compiled expression's syntax tree: the string literals (state keys
 * it may read), whether it reads a variable, whether a `matches()` pattern is computed, how deep
 * it nests, whether its comprehensions can meet the evaluation budget, and which calls on literals
 * to try at load.
 *
 * cel-js nodes are `{op, args, pos}`; a call is `op: 'call'` (`f(x)`, args `[name, [x]]`) or
 * `op: 'rcall'` (`x.f(y)`, args `[name, x, [y]]`), a literal `op: 'value'` with the value in `args`.
 */
import { type ASTNode, serialize } from '@marcbachmann/cel-js';
import { CostedAs } from './celCostLimit.js';

interface CelAstNode {
  op: unknown;
  args: unknown;
  pos?: unknown;
}

/**
 * Visits every node depth-first, parents before children, in source order; `visit` returns
 * `false` to end the walk.
 */
function walkCelAst(ast: ASTNode, visit: (node: CelAstNode) => boolean | undefined): void {
  let stopped = false;
  const go = (node: unknown): void => {
    if (stopped) return;
    if (Array.isArray(node)) {
      for (const child of node) go(child);
      return;
    }
    if (typeof node !== 'object' || node === null || !('op' in node) || !('args' in node)) return;
    if (visit(node as CelAstNode) === false) {
      stopped = true;
      return;
    }
    go((node as CelAstNode).args);
  };
  go(ast);
}

/** The function a call node calls, or undefined for any other node. */
function calledFunction(node: CelAstNode): unknown {
  return (node.op === 'rcall' || node.op === 'call') && Array.isArray(node.args) ? node.args[0] : undefined;
}

/** The pattern argument of a `matches()` call node (`x.matches(p)` or `matches(x, p)`). */
function patternOf(node: CelAstNode): unknown {
  const args = node.args as unknown[];
  return node.op === 'rcall'
    ? (args[2] as unknown[] | undefined)?.[0]
    : (args[1] as unknown[] | undefined)?.[1];
}

function isStringLiteral(node: unknown): node is CelAstNode & { args: string } {
  return isAstNode(node) && node.op === 'value' && typeof node.args === 'string';
}

function isAstNode(value: unknown): value is CelAstNode {
  return typeof value === 'object' && value !== null && 'op' in value && 'args' in value;
}

function offsetOf(node: CelAstNode): number {
  return typeof node.pos === 'number' ? node.pos : 0;
}

/**
 * The offset of the first `matches()` whose pattern is not a string literal. cel-js runs patterns
 * on the backtracking `RegExp`; a literal is the policy author's choice (the CLI also turns on
 * V8's linear-time fallback for runaway backtracking), a computed one would be the caller's.
 */
export function findDynamicPattern(ast: ASTNode): number | undefined {
  let found: number | undefined;
  walkCelAst(ast, (node) => {
    if (calledFunction(node) !== 'matches') return true;
    const pattern = patternOf(node);
    if (isStringLiteral(pattern)) return true;
    found = offsetOf(isAstNode(pattern) && typeof pattern.pos === 'number' ? pattern : node);
    return false;
  });
  return found;
}

/**
 * The offset of a node nested deeper than `limit`, or undefined. Iterative, since its purpose is
 * to stop an expression that the library's recursive checker and evaluator (and the walks here)
 * would overflow the stack on: cel-js parses a chain of `&&` in a loop, so 5,000 of them parse
 * fine and nest 5,000 deep.
 */
export function findTooDeepNode(ast: ASTNode, limit: number): number | undefined {
  const pending: [unknown, number][] = [[ast, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [node, depth] = next;
    if (Array.isArray(node)) {
      for (const child of node) pending.push([child, depth]);
    } else if (isAstNode(node)) {
      if (depth >= limit) return offsetOf(node);
      pending.push([node.args, depth + 1]);
    }
  }
  return undefined;
}

/** A call that a string literal decides, made the same way on every evaluation. */
export interface LiteralCall {
  /** A CEL expression making the same call on the literal alone (`''.matches('(')`, `timestamp('nope')`). */
  readonly expression: string;
  /** The offset of the literal in the expression it was found in. */
  readonly offset: number;
  /** The pattern, for a `matches()` call. */
  readonly pattern?: string;
}

const LITERAL_CONVERSIONS = new Set(['timestamp', 'duration']);

/**
 * The calls whose outcome a string literal decides: the pattern of `matches()`, and
 * `timestamp('…')`, `duration('…')`. The caller runs each through the library once at load, with
 * the library's own semantics: a literal that fails there would fail on every evaluation.
 */
export function findLiteralCalls(ast: ASTNode): LiteralCall[] {
  const calls: LiteralCall[] = [];
  walkCelAst(ast, (node) => {
    const name = calledFunction(node);
    if (name === 'matches') {
      const pattern = patternOf(node);
      if (isStringLiteral(pattern)) {
        calls.push({
          expression: `''.matches(${literalSource(pattern)})`,
          offset: offsetOf(pattern),
          pattern: pattern.args,
        });
      }
    } else if (node.op === 'call' && typeof name === 'string' && LITERAL_CONVERSIONS.has(name)) {
      const callArgs = (node.args as unknown[])[1];
      const argument = Array.isArray(callArgs) && callArgs.length === 1 ? callArgs[0] : undefined;
      if (isStringLiteral(argument)) {
        calls.push({ expression: `${name}(${literalSource(argument)})`, offset: offsetOf(argument) });
      }
    }
    return true;
  });
  return calls;
}

/** A string literal node written back as CEL source, escaped by the library's own serializer. */
function literalSource(node: CelAstNode): string {
  return serialize(node as unknown as ASTNode);
}

const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/** Where a comprehension nest is refused, and why. */
export interface CostlyComprehension {
  readonly offset: number;
  readonly message: string;
}

/**
 * The first comprehension that cannot meet the evaluation budget: one nested more than
 * `maxNesting` deep (in another's predicate or transform; `l.map(…).exists(…)` is a chain, not a
 * nest), or a nest over list and map literals whose sizes multiply past `maxIterations`, which
 * every evaluation pays unless an `exists` stops early. A list from caller data or a function
 * counts as one element here: its size is known only at evaluation, where the budget applies.
 * Recursive: the tree was first checked not to nest deeper than {@link findTooDeepNode} allows.
 */
export function findCostlyComprehension(
  ast: ASTNode,
  limits: { maxNesting: number; maxIterations: number },
): CostlyComprehension | undefined {
  const visit = (node: unknown, nesting: number, iterations: number): CostlyComprehension | undefined => {
    if (Array.isArray(node)) {
      for (const child of node) {
        const found = visit(child, nesting, iterations);
        if (found) return found;
      }
      return undefined;
    }
    if (!isAstNode(node)) return undefined;
    const args = node.args as unknown[];
    const macroArgs = node.op === 'rcall' ? args[2] : undefined;
    if (
      !COMPREHENSIONS.has(calledFunction(node) as string) ||
      !Array.isArray(macroArgs) ||
      macroArgs.length < 2
    ) {
      return visit(node.args, nesting, iterations);
    }
    const receiver = args[1];
    const inReceiver = visit(receiver, nesting, iterations);
    if (inReceiver) return inReceiver;
    const depth = nesting + 1;
    if (depth > limits.maxNesting) {
      return {
        offset: offsetOf(node),
        message: `Comprehensions (all, exists, exists_one, map, filter) nest ${depth} deep here; at most ${limits.maxNesting} may nest, since each level multiplies the work`,
      };
    }
    const total = iterations * literalSize(receiver);
    if (total > limits.maxIterations) {
      return {
        offset: offsetOf(node),
        message: `These nested comprehensions over literals iterate up to ${total.toLocaleString('en-US')} times on every evaluation, more than the evaluation cost limit (${limits.maxIterations.toLocaleString('en-US')}) allows`,
      };
    }
    return visit(macroArgs, depth, total);
  };
  return visit(ast, 0, 1);
}

/** The element count of a list or map literal; 1 for anything else (unknown until evaluation). */
function literalSize(node: unknown): number {
  if (isAstNode(node) && (node.op === 'list' || node.op === 'map') && Array.isArray(node.args)) {
    return node.args.length;
  }
  return 1;
}

/** The timestamp methods that take a time zone, and convert to it on every call. */
const ZONED_METHODS = new Set([
  'getDate',
  'getDayOfMonth',
  'getDayOfWeek',
  'getDayOfYear',
  'getFullYear',
  'getHours',
  'getMinutes',
  'getMonth',
  'getSeconds',
]);

/** Binary operators that go through their operands (deep equality, ordering, concatenation). */
const SCANNING_OPERATORS = new Set(['==', '!=', '<', '<=', '>', '>=', '+']);

/**
 * The nodes whose values an evaluation must pay for beyond the operation itself, with their
 * {@link CostedAs} flags: operands scanned by an operator or a function, comprehension ranges,
 * the right side of `in`, the argument of `size()`, what functions and `+` build, timestamp
 * methods given a time zone and the subject of `matches()`. Field access, indexing, `has()`, `cel.bind()` and logic read a value
 * without going through it.
 */
export function findCostedNodes(ast: ASTNode): [object, number][] {
  const found: [object, number][] = [];
  walkCelAst(ast, (node) => {
    const args = node.args as unknown[];
    if (typeof node.op === 'string' && SCANNING_OPERATORS.has(node.op)) {
      for (const operand of args) if (isAstNode(operand)) found.push([operand, CostedAs.scanned]);
      if (node.op === '+') found.push([node, CostedAs.built]);
    } else if (node.op === 'in') {
      if (isAstNode(args[0])) found.push([args[0], CostedAs.scanned]);
      if (isAstNode(args[1])) found.push([args[1], CostedAs.membership]);
    } else if (node.op === 'call' || node.op === 'rcall') {
      const name = args[0];
      const receiver = node.op === 'rcall' ? args[1] : undefined;
      const callArgs = (node.op === 'rcall' ? args[2] : args[1]) as unknown[];
      if (COMPREHENSIONS.has(name as string) && callArgs.length >= 2) {
        if (isAstNode(receiver)) found.push([receiver, CostedAs.range]);
        if (name === 'map' || name === 'filter') found.push([node, CostedAs.built]);
      } else if (name === 'size') {
        for (const operand of [receiver, ...callArgs])
          if (isAstNode(operand)) found.push([operand, CostedAs.sized]);
      } else if (!(name === 'has' && node.op === 'call') && !(name === 'bind' && isCelNamespace(receiver))) {
        for (const operand of [receiver, ...callArgs])
          if (isAstNode(operand)) found.push([operand, CostedAs.scanned]);
        found.push([node, CostedAs.built]);
        if (node.op === 'rcall' && callArgs.length === 1 && ZONED_METHODS.has(name as string)) {
          found.push([node, CostedAs.zoned]);
        }
        // `s.matches(p)` or `matches(s, p)`: the subject is charged before the pattern runs.
        const subject = name !== 'matches' ? undefined : node.op === 'rcall' ? receiver : callArgs[0];
        if (isAstNode(subject)) found.push([subject, CostedAs.matched]);
      }
    }
    return true;
  });
  return found;
}

/**
 * True when the expression names the variable `name`. A comprehension variable of that name
 * counts too: an overestimate, which only costs the caller a read it did not need to watch.
 */
export function readsVariable(ast: ASTNode, name: string): boolean {
  let found = false;
  walkCelAst(ast, (node) => {
    found = node.op === 'id' && node.args === name;
    return !found;
  });
  return found;
}

function isCelNamespace(node: unknown): boolean {
  return isAstNode(node) && node.op === 'id' && node.args === 'cel';
}

/** Every string literal in the expression, once each, in source order. */
export function collectStringLiterals(ast: ASTNode): string[] {
  const found = new Set<string>();
  walkCelAst(ast, (node) => {
    if (node.op === 'value' && typeof node.args === 'string') found.add(node.args);
    return true;
  });
  return [...found];
}
