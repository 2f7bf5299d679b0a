/*
 * CEL library: @marcbachmann/cel-js, chosen by measurement (bench/cel-choice.js, Node 20.20,
 * 12 representative gate expressions, same activation, both libraries correct on 12/12:
 * JSON numbers compare with `100` and `100.0` alike, `null` values, `in` on maps, and a missing
 * map key or a type error is an error, never `false`).
 *
 *   case                compile µs cel-js / bufbuild   eval ops/s cel-js / bufbuild   ratio
 *   double compare          21.0 / 180.9                 2.14M / 291k                 7.3
 *   string method            8.6 / 111.6                 3.74M / 662k                 5.6
 *   in + field              11.5 / 109.3                 2.42M / 313k                 7.7
 *   size(list)               7.2 /  24.0                 3.06M / 1.80M                1.7
 *   startsWith               5.5 /  34.3                 5.97M / 4.33M                1.4
 *   exists macro            16.3 /  77.3                 1.45M / 147k                 9.9
 *   timestamp/duration      21.3 / 105.9                  315k / 81k                  3.9
 *   int vs double           11.4 /  55.0                 1.74M / 174k                10.0
 *   null value               5.8 /  22.3                 5.53M / 737k                 7.5
 *   in (absent key)          1.2 /  17.1                11.64M / 1.37M                8.5
 *   type error (runtime)     0.7 /  11.9                  150k / 108k                 1.4
 *   missing key              2.4 /  37.6                   87k / 113k                 0.8
 *   geometric mean: compile 7.6x faster, evaluate 4.6x faster (cel-js compile includes type check)
 *
 * Figures from an idle machine; runs under load move individual rows a lot (geometric mean
 * 6.5-8.8x compile, 4.1-5.0x evaluate in three runs) but never the ranking.
 *
 * Also decisive: cel-js type-checks against declared variables and types (an unknown variable,
 * a misspelt state field or `action + 1` fails at load, with a source range), while
 * @bufbuild/cel 0.6 exports no checker and needs protobuf Timestamp messages for `now`.
 * Errors are slower than successes in both (cel-js builds a highlighted message), which only
 * matters for rules that fail, and those already give `policy_error`.
 */
import { type ASTNode, Environment } from '@marcbachmann/cel-js';
import type { ConflictView, GateInput, StateView } from './gateTypes.js';

// BigInt() throws on NaN and Infinity; a malformed number must not make evaluation throw.
const toCelInt = (value: number): bigint => (Number.isFinite(value) ? BigInt(Math.trunc(value)) : 0n);

/**
 * A state item as CEL sees it: `trust` and `version` are CEL ints, `updated_at` a timestamp.
 * Fields are read lazily (getters), so a session with many items costs one small object per
 * item per evaluation, and a timestamp is parsed only when a rule reads it.
 */
class CelStateItem {
  readonly #item: StateView;
  #updatedAt: Date | undefined;

  constructor(item: StateView) {
    this.#item = item;
  }
  get value(): string {
    return this.#item.value;
  }
  get number(): number | null {
    return this.#item.number;
  }
  get type(): string {
    return this.#item.type;
  }
  get source(): string {
    return this.#item.source;
  }
  get trust(): bigint {
    return toCelInt(this.#item.trust);
  }
  get version(): bigint {
    return toCelInt(this.#item.version);
  }
  get status(): string {
    return this.#item.status;
  }
  get updated_at(): Date {
    this.#updatedAt ??= new Date(this.#item.updated_at);
    return this.#updatedAt;
  }
}

/** A conflict as CEL sees it: `created_at` is a timestamp (parsed when first read). */
class CelConflict {
  readonly #conflict: ConflictView;
  #createdAt: Date | undefined;

  constructor(conflict: ConflictView) {
    this.#conflict = conflict;
  }
  get conflict_id(): string {
    return this.#conflict.conflict_id;
  }
  get key(): string {
    return this.#conflict.key;
  }
  get current_value(): string {
    return this.#conflict.current_value;
  }
  get proposed_value(): string {
    return this.#conflict.proposed_value;
  }
  get proposed_source(): string {
    return this.#conflict.proposed_source;
  }
  get created_at(): Date {
    this.#createdAt ??= new Date(this.#conflict.created_at);
    return this.#createdAt;
  }
}

/**
 * The most list elements and map entries one evaluation may visit, over all its rules and
 * message placeholders. CEL has no loops, but comprehensions nest: with `params` up to 16 KiB
 * (some 8,000 list elements), `params.items.exists(a, params.items.exists(b, …))` is 64 million
 * steps, half a minute of a blocked event loop, and one more level is hours. The budget stops
 * that after about 100 ms; a rule that runs out fails closed (`policy_error`, its `on_error`
 * verdict). Linear rules over the largest inputs use a tenth of it.
 */
export const CEL_COST_LIMIT = 100_000;

/** Thrown (inside CEL) when an evaluation has used up {@link CEL_COST_LIMIT}. */
export class CelCostLimitError extends Error {
  constructor() {
    super(
      `evaluation cost limit exceeded (more than ${CEL_COST_LIMIT} list elements and map entries visited)`,
    );
    this.name = 'CelCostLimitError';
  }
}

/** Counts what an evaluation visits; see {@link CEL_COST_LIMIT}. */
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
}

const meters = new WeakMap<object, CostMeter>();
const meteredViews = new WeakMap<CelActivation, CelActivation>();

/** True when the evaluation behind `activation` ran out of budget (its results are void). */
export function celCostExceeded(activation: CelActivation): boolean {
  return meters.get(activation)?.exhausted ?? false;
}

/**
 * The metered view of an evaluation's variables, for programs that iterate ({@link
 * CelProgram.iterates}); one view and one budget per evaluation, made on first use. Programs
 * without a comprehension do bounded work (each operation runs once) and read the plain variables.
 */
export function meteredActivation(activation: CelActivation): CelActivation {
  let view = meteredViews.get(activation);
  if (view === undefined) {
    const meter = new CostMeter();
    const wrap = metered(meter);
    view = {
      ...activation,
      params: wrap(activation.params),
      context: wrap(activation.context),
      state: wrap(activation.state),
      conflicts: wrap(activation.conflicts),
    };
    meters.set(view, meter);
    meteredViews.set(activation, view);
  }
  return view;
}

const isIndex = (prop: string | symbol): boolean => {
  if (typeof prop !== 'string' || prop.length === 0) return false;
  const c = prop.charCodeAt(0);
  return c >= 48 && c <= 57;
};

/**
 * Wraps caller data so that every list element read and every map key enumeration is charged to
 * `meter`. Lazy: a nested object is wrapped when it is read, once per evaluation. Only arrays and
 * plain (or null-prototype) objects are wrapped; the state item and conflict classes are not.
 */
function metered(meter: CostMeter): <T>(value: T) => T {
  const proxies = new WeakMap<object, object>();
  const wrap = <T>(value: T): T => {
    if (value === null || typeof value !== 'object') return value;
    const isArray = Array.isArray(value);
    if (!isArray) {
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return value;
    }
    let proxy = proxies.get(value);
    if (proxy === undefined) {
      proxy = isArray
        ? new Proxy(value as unknown[], listHandler)
        : new Proxy(value as Record<string, unknown>, mapHandler);
      proxies.set(value, proxy);
    }
    return proxy as T;
  };
  const listHandler: ProxyHandler<unknown[]> = {
    get(target, prop, receiver) {
      if (!isIndex(prop)) return Reflect.get(target, prop, receiver);
      meter.charge(1);
      return wrap(Reflect.get(target, prop, receiver));
    },
  };
  const mapHandler: ProxyHandler<Record<string, unknown>> = {
    get(target, prop, receiver) {
      return wrap(Reflect.get(target, prop, receiver));
    },
    ownKeys(target) {
      meter.check();
      const keys = Reflect.ownKeys(target);
      meter.charge(keys.length);
      return keys;
    },
  };
  return wrap;
}

/** The variables every rule and message placeholder can read. */
export interface CelActivation {
  action: string;
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  state: Record<string, CelStateItem>;
  conflicts: CelConflict[];
  now: Date;
}

const TIMESTAMP = 'google.protobuf.Timestamp';

let sharedEnvironment: Environment | undefined;

/** The CEL environment shared by every policy: built once, since building one is costly. */
function celEnvironment(): Environment {
  sharedEnvironment ??= new Environment()
    .registerType('gatehouse.StateItem', {
      ctor: CelStateItem,
      fields: {
        value: 'string',
        // double, or null when the value is not a number: `dyn` admits both.
        number: 'dyn',
        type: 'string',
        source: 'string',
        trust: 'int',
        version: 'int',
        status: 'string',
        updated_at: TIMESTAMP,
      },
    })
    .registerType('gatehouse.Conflict', {
      ctor: CelConflict,
      fields: {
        conflict_id: 'string',
        key: 'string',
        current_value: 'string',
        proposed_value: 'string',
        proposed_source: 'string',
        created_at: TIMESTAMP,
      },
    })
    .registerVariable('action', 'string', { description: 'The action name' })
    .registerVariable('params', 'map<string, dyn>', { description: "The action's arguments" })
    .registerVariable('context', 'map<string, dyn>', { description: 'Caller-supplied context' })
    .registerVariable('state', 'map<string, gatehouse.StateItem>', { description: 'State by key' })
    .registerVariable('conflicts', 'list<gatehouse.Conflict>', { description: 'Unresolved conflicts' })
    .registerVariable('now', TIMESTAMP, { description: 'The evaluation time' });
  return sharedEnvironment;
}

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
  return {
    ok: true,
    program: {
      source,
      stringLiterals: collectStringLiterals(parsed.ast),
      iterates: hasComprehension(parsed.ast),
      run: parsed,
    },
  };
}

/**
 * Builds the CEL variables of one evaluation. Programs that iterate run on its
 * {@link meteredActivation} instead, within {@link CEL_COST_LIMIT}.
 */
export function createActivation(input: GateInput): CelActivation {
  // A null-prototype record: a key can never resolve to an inherited property.
  const state: Record<string, CelStateItem> = Object.create(null);
  for (const key of Object.keys(input.state)) {
    const item = input.state[key];
    if (item !== undefined) state[key] = new CelStateItem(item);
  }
  return {
    action: input.action,
    params: input.params,
    context: input.context,
    state,
    conflicts: input.conflicts.map((conflict) => new CelConflict(conflict)),
    now: input.now,
  };
}

/** The CEL type name of an evaluation result, for "returned X, not bool" messages. */
export function celTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'double';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (value instanceof Date) return 'timestamp';
  if (Array.isArray(value)) return 'list';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'object') return 'map';
  return typeof value;
}

/** Renders a CEL value for a message: strings as is, ints without `n`, timestamps in ISO 8601. */
export function formatCelValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') {
    return String(value);
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? '?' : value.toISOString();
  if (value instanceof CelStateItem) return value.value;
  if (value instanceof CelConflict) return value.key;
  if (Array.isArray(value)) return `[${value.map(formatCelValue).join(', ')}]`;
  if (value instanceof Map) {
    return `{${[...value].map(([k, v]) => `${formatCelValue(k)}: ${formatCelValue(v)}`).join(', ')}}`;
  }
  if (typeof value === 'object' && value.constructor === Object) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}: ${formatCelValue(v)}`)
      .join(', ')}}`;
  }
  // Durations and other library values know how to print themselves ("3600s").
  return String(value);
}

/** A one-line description of a CEL (or any) error, without the source excerpt. */
export function celErrorSummary(error: unknown): string {
  if (error instanceof Error) {
    const summary = (error as { summary?: unknown }).summary;
    const text = typeof summary === 'string' ? summary : (error.message.split('\n', 1)[0] ?? '');
    return text.length > 200 ? `${text.slice(0, 197)}...` : text;
  }
  return String(error);
}

function errorOffset(error: unknown): number {
  const range = (error as { range?: { start?: unknown } } | undefined)?.range;
  return typeof range?.start === 'number' ? range.start : 0;
}

/**
 * The offset of the first `matches()` whose pattern is not a string literal. cel-js runs patterns
 * on the backtracking `RegExp`; a literal is the policy author's choice (the CLI also turns on
 * V8's linear-time fallback for runaway backtracking), a computed one would be the caller's.
 */
function findDynamicPattern(ast: ASTNode): number | undefined {
  let found: number | undefined;
  const visit = (node: unknown): void => {
    if (found !== undefined) return;
    if (Array.isArray(node)) {
      for (const child of node) visit(child);
      return;
    }
    if (typeof node !== 'object' || node === null || !('op' in node) || !('args' in node)) return;
    const { op, args } = node as { op: unknown; args: unknown };
    if ((op === 'rcall' || op === 'call') && Array.isArray(args) && args[0] === 'matches') {
      const pattern =
        op === 'rcall' ? (args[2] as unknown[] | undefined)?.[0] : (args[1] as unknown[] | undefined)?.[1];
      const literal =
        typeof pattern === 'object' &&
        pattern !== null &&
        (pattern as { op?: unknown }).op === 'value' &&
        typeof (pattern as { args?: unknown }).args === 'string';
      if (!literal) {
        const pos = (pattern as { pos?: unknown } | undefined)?.pos ?? (node as { pos?: unknown }).pos;
        found = typeof pos === 'number' ? pos : 0;
        return;
      }
    }
    visit(args);
  };
  visit(ast);
  return found;
}

const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

function hasComprehension(ast: ASTNode): boolean {
  let found = false;
  const visit = (node: unknown): void => {
    if (found) return;
    if (Array.isArray(node)) {
      for (const child of node) visit(child);
      return;
    }
    if (typeof node !== 'object' || node === null || !('op' in node) || !('args' in node)) return;
    const { op, args } = node as { op: unknown; args: unknown };
    if ((op === 'rcall' || op === 'call') && Array.isArray(args) && COMPREHENSIONS.has(args[0] as string)) {
      found = true;
      return;
    }
    visit(args);
  };
  visit(ast);
  return found;
}

function collectStringLiterals(ast: ASTNode): string[] {
  const found = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const child of node) visit(child);
    } else if (typeof node === 'object' && node !== null && 'op' in node && 'args' in node) {
      const { op, args } = node as { op: unknown; args: unknown };
      if (op === 'value' && typeof args === 'string') found.add(args);
      else visit(args);
    }
  };
  visit(ast);
  return [...found];
}
