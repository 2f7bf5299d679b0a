/**
 * The work budget of one CEL evaluation, so that no rule can stall the process: every operation
 * is charged, and so is the size of what it scans or builds; an evaluation that has spent
 * {@link CEL_COST_LIMIT} fails closed.
 *
 * What costs one unit:
 * - each operation evaluated (a node of the expression: a literal, a variable, `+`, a call…), so
 *   every iteration of every comprehension pays, whatever its list came from (caller data, a
 *   literal, `split()`, another comprehension's result), and every element of a list literal;
 * - each element or map entry in a comprehension's range, before it runs;
 * - each element, map entry and 64 characters (or bytes) of string, all the way down, in every
 *   value an operation scans: operands of `==`, `!=`, `<`…, `+`, of `in` when it is a list, and
 *   every function argument (`contains()`, `matches()`, `join()`, `split()`…); `size()` of a
 *   string or map;
 * - each element or 64 characters of every list or string a function or `+` yields (it was built);
 * - {@link ZONED_CALL_UNITS} for each call of a timestamp method given a time zone;
 * - the square of a `matches()` subject's length, / {@link MATCH_SQUARE_DIVISOR}.
 *
 * Reading a variable, a field or an element costs one unit whatever its size: only what an
 * operation goes through is charged, so `params.items.exists(i, i.sku == params.sku)` over the
 * largest params stays linear, while `x in list` in a loop pays for the list each time.
 *
 * How: cel-js evaluates every node through its evaluator's `run` (a comprehension calls it once
 * per iteration), which a documented custom macro hands over once; {@link installCostMeter}
 * wraps it, and compiling an expression marks its nodes whose values are scanned or built
 * ({@link markCostedNodes}).
 */
import type { Environment } from '@marcbachmann/cel-js';
import type { CelActivation } from './celActivation.js';

/**
 * The most units (see the module) one evaluation may spend, over all its rules and message
 * placeholders. Without it, CEL's comprehensions nest: `params.items.exists(a,
 * params.items.exists(b, …))` over 16 KiB of params is 64 million steps (half a minute), one
 * more level or a list literal nested four deep is hours. Spent by the costliest rules of `node
 * bench/cel-cost.js`, it held one core of a shared 2-core machine for 12 to 60 ms; a rule that
 * runs out fails closed (`policy_error`, its `on_error` verdict). A linear rule over the largest
 * params (8,000 elements) uses a tenth of it (3 ms there).
 */
export const CEL_COST_LIMIT = 500_000;

/** Thrown (inside CEL) when an evaluation has used up {@link CEL_COST_LIMIT}. */
export class CelCostLimitError extends Error {
  constructor() {
    super(
      `evaluation cost limit exceeded (more than ${CEL_COST_LIMIT} units: operations, and the elements, entries and 64-character pieces of string they scan or build)`,
    );
    this.name = 'CelCostLimitError';
  }
}

/** Characters (or bytes) of a string per unit. */
const CHARS_PER_UNIT = 64;

/** What a node's value costs besides its evaluation (bit flags, see {@link markCostedNodes}). */
export const CostedAs = {
  /** Yielded by a function or `+`: a list pays its length, a string or bytes its size. */
  built: 1,
  /** Scanned by the operation that reads it: its whole size. */
  scanned: 2,
  /** A comprehension's range: its element (or key) count. */
  range: 4,
  /** The right side of `in`: its whole size when it is a list (a map is one lookup). */
  membership: 8,
  /** The argument of `size()`: a string's or map's size (a list knows its length). */
  sized: 16,
  /** A timestamp method given a time zone: {@link ZONED_CALL_UNITS}, before it runs. */
  zoned: 32,
  /** The subject of `matches()`: its length squared / {@link MATCH_SQUARE_DIVISOR}. */
  matched: 64,
} as const;

/**
 * What a `matches()` subject costs: its length (UTF-16 units) squared, divided by this. V8's
 * backtracking engine retries the pattern from every position, so ordinary patterns
 * (`[a-z]+@corp`, `.*password.*`) take time quadratic in the subject: about 200 ms on 16 KiB,
 * linear-time fallback or not (its backtracking counter does not see these loops). Charged once
 * the subject is known, before the call: a subject of 16 KiB would cost a million units, and never
 * runs; one of 1 KiB costs 4,096.
 */
export const MATCH_SQUARE_DIVISOR = 256;

/**
 * What a timestamp method given a time zone costs (`now.getHours('Europe/Paris')`): cel-js
 * converts through `toLocaleString`, which builds a formatter on every call, 100–300 µs, as much
 * as a few thousand operations. Charged before the call, so a zone that does not exist (an error
 * a comprehension may absorb) pays too. At this price the budget holds 200 conversions: a rule
 * converting once per element of an agent's list ran 0.7 s on the largest params.
 */
export const ZONED_CALL_UNITS = 2_500;

const costedNodes = new WeakMap<object, number>();

/**
 * Records what the values of these nodes cost (their {@link CostedAs} flags), for every
 * evaluation of the expression they belong to.
 */
export function markCostedNodes(nodes: Iterable<readonly [object, number]>): void {
  for (const [node, flags] of nodes) costedNodes.set(node, (costedNodes.get(node) ?? 0) | flags);
}

/** Counts what an evaluation does; see {@link CEL_COST_LIMIT}. */
class CostMeter {
  #left = CEL_COST_LIMIT;

  /** Throws once the budget is spent, before the caller does the work it is about to pay for. */
  check(): void {
    if (this.#left < 0) throw new CelCostLimitError();
  }

  charge(units: number): void {
    this.check();
    this.#left -= units;
    if (this.#left < 0) throw new CelCostLimitError();
  }

  get exhausted(): boolean {
    return this.#left < 0;
  }

  /** Charges what a node's value costs, by its {@link CostedAs} flags. */
  chargeValue(flags: number, value: unknown): void {
    // Most marked values are numbers, bools and short strings: nothing to charge.
    if (typeof value !== 'object' && (typeof value !== 'string' || value.length < CHARS_PER_UNIT)) return;
    let units = 0;
    if (flags & CostedAs.built) units += shallowSize(value);
    if (flags & CostedAs.range) units += entryCount(value);
    if (flags & CostedAs.sized && !Array.isArray(value)) units += shallowSize(value) + entryCount(value);
    if (flags & CostedAs.matched && typeof value === 'string') {
      units += Math.floor((value.length * value.length) / MATCH_SQUARE_DIVISOR);
    }
    if (flags & CostedAs.scanned || (flags & CostedAs.membership && Array.isArray(value))) {
      units += deepSize(value, this.#left);
    }
    if (units > 0) this.charge(units);
  }
}

/** A string's or bytes' units, a list's length; 0 for anything else. */
function shallowSize(value: unknown): number {
  if (typeof value === 'string') return Math.floor(value.length / CHARS_PER_UNIT);
  if (Array.isArray(value)) return value.length;
  if (value instanceof Uint8Array) return Math.floor(value.length / CHARS_PER_UNIT);
  return 0;
}

/** A list's elements or a map's keys; 0 for anything else. */
function entryCount(value: unknown): number {
  if (Array.isArray(value)) return value.length;
  if (value instanceof Map) return value.size;
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return 0;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null ? Object.keys(value).length : 0;
}

/**
 * The units of a value all the way down (elements, entries, strings), counted no further than
 * `cap` (the caller cannot pay more), so that measuring never costs more than the budget left.
 */
function deepSize(value: unknown, cap: number): number {
  if (typeof value !== 'object' || value === null) return shallowSize(value);
  let units = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0 && units <= cap) {
    const next = pending.pop();
    if (typeof next === 'string' || next instanceof Uint8Array) {
      units += shallowSize(next);
    } else if (Array.isArray(next)) {
      units += next.length;
      for (const element of next)
        if (typeof element === 'object' || typeof element === 'string') pending.push(element);
    } else if (next instanceof Map) {
      units += next.size;
      for (const element of next.values()) pending.push(element);
    } else if (typeof next === 'object' && next !== null) {
      const proto = Object.getPrototypeOf(next);
      if (proto !== Object.prototype && proto !== null) continue;
      for (const key in next) {
        units += 1;
        pending.push((next as Record<string, unknown>)[key]);
      }
    }
  }
  return units;
}

/** An evaluation's variables, with the budget they are evaluated within. */
class MeteredView implements CelActivation {
  readonly meter = new CostMeter();
  readonly action: string;
  readonly params: CelActivation['params'];
  readonly context: CelActivation['context'];
  readonly state: CelActivation['state'];
  readonly conflicts: CelActivation['conflicts'];
  readonly now: Date;

  constructor(plain: CelActivation) {
    this.action = plain.action;
    this.params = plain.params;
    this.context = plain.context;
    this.state = plain.state;
    this.conflicts = plain.conflicts;
    this.now = plain.now;
  }
}

/** The metered view of a plain activation, kept on it: one view and one budget per evaluation. */
const VIEW = Symbol('metered view');

/** True when the evaluation behind `activation` ran out of budget (its results are void). */
export function celCostExceeded(activation: CelActivation): boolean {
  return activation instanceof MeteredView && activation.meter.exhausted;
}

/**
 * The metered view of an evaluation's variables: one view and one budget per evaluation, made on
 * first use. Every rule and message placeholder of the evaluation runs on it.
 */
export function meteredActivation(activation: CelActivation): CelActivation {
  if (activation instanceof MeteredView) return activation;
  const holder = activation as CelActivation & { [VIEW]?: MeteredView };
  holder[VIEW] ??= new MeteredView(activation);
  return holder[VIEW];
}

/** The meter of the evaluation running now (evaluation is synchronous: one at a time). */
let running: CostMeter | undefined;

/**
 * Runs `evaluate` charging its operations to the budget of `activation` (a view from
 * {@link meteredActivation}; any other activation runs unmetered, as the load-time checks do).
 */
export function runMetered<T>(activation: CelActivation, evaluate: () => T): T {
  if (!(activation instanceof MeteredView)) return evaluate();
  const meter = activation.meter;
  const outer = running;
  running = meter;
  try {
    meter.check();
    return evaluate();
  } finally {
    running = outer;
  }
}

/** What cel-js hands a custom macro: its evaluator (documented: `evaluator.run(ast, ctx)`) and checker. */
interface CelEvaluator {
  run(ast: unknown, ctx: unknown): unknown;
}
interface CelChecker {
  check(ast: unknown, ctx: unknown): unknown;
}

/** The macro that hands over the evaluator; refused in a policy (it is no function of the policy language). */
const PROBE = 'gatehouse_cost_probe';

/**
 * Makes every evaluation of `environment` that runs within {@link runMetered} pay for each
 * operation and for what its marked nodes yield. Called once, when the environment is built.
 */
export function installCostMeter(environment: Environment): void {
  let evaluator: CelEvaluator | undefined;
  environment.registerFunction(`${PROBE}(ast): bool`, ({ args }: { args: unknown[] }) => ({
    argument: args[0],
    typeCheck(checker: CelChecker, macro: { argument: unknown }, ctx: unknown) {
      if (evaluator !== undefined) throw new Error(`Unknown function: ${PROBE}`);
      return checker.check(macro.argument, ctx);
    },
    evaluate(given: CelEvaluator, macro: { argument: unknown }, ctx: unknown) {
      evaluator ??= given;
      return given.run(macro.argument, ctx);
    },
  }));
  environment.evaluate(`${PROBE}(true)`);
  if (evaluator === undefined) throw new Error('cel-js did not hand its evaluator to a macro');
  const run = evaluator.run;
  evaluator.run = function meteredRun(this: CelEvaluator, ast, ctx) {
    const meter = running;
    if (meter === undefined) return run.call(this, ast, ctx);
    const flags = costedNodes.get(ast as object);
    meter.charge(flags !== undefined && flags & CostedAs.zoned ? 1 + ZONED_CALL_UNITS : 1);
    const value = run.call(this, ast, ctx);
    if (flags !== undefined) meter.chargeValue(flags, value);
    return value;
  };
}
