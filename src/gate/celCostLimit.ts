/**
 * The work budget of one CEL evaluation: lists and maps from callers are read through proxies
 * that count what a rule visits, so a nested comprehension over a large input fails closed
 * instead of blocking the event loop.
 */
import type { CelActivation } from './celActivation.js';

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
