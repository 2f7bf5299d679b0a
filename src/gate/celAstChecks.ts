/**
 * What a policy learns from a compiled expression's syntax tree: the string literals (state keys
 * it may read), whether it iterates, and whether a `matches()` pattern is computed.
 *
 * cel-js nodes are `{op, args, pos}`; a call is `op: 'call'` (`f(x)`, args `[name, [x]]`) or
 * `op: 'rcall'` (`x.f(y)`, args `[name, x, [y]]`), a literal `op: 'value'` with the value in `args`.
 */
import type { ASTNode } from '@marcbachmann/cel-js';

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

/**
 * The offset of the first `matches()` whose pattern is not a string literal. cel-js runs patterns
 * on the backtracking `RegExp`; a literal is the policy author's choice (the CLI also turns on
 * V8's linear-time fallback for runaway backtracking), a computed one would be the caller's.
 */
export function findDynamicPattern(ast: ASTNode): number | undefined {
  let found: number | undefined;
  walkCelAst(ast, (node) => {
    if (calledFunction(node) !== 'matches') return true;
    const args = node.args as unknown[];
    const pattern =
      node.op === 'rcall' ? (args[2] as unknown[] | undefined)?.[0] : (args[1] as unknown[] | undefined)?.[1];
    const literal =
      typeof pattern === 'object' &&
      pattern !== null &&
      (pattern as { op?: unknown }).op === 'value' &&
      typeof (pattern as { args?: unknown }).args === 'string';
    if (literal) return true;
    const pos = (pattern as { pos?: unknown } | undefined)?.pos ?? node.pos;
    found = typeof pos === 'number' ? pos : 0;
    return false;
  });
  return found;
}

const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/** True when the expression has a comprehension: the only way CEL repeats work. */
export function hasComprehension(ast: ASTNode): boolean {
  let found = false;
  walkCelAst(ast, (node) => {
    found = COMPREHENSIONS.has(calledFunction(node) as string);
    return !found;
  });
  return found;
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
