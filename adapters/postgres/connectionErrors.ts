/**
 * Failures that say PostgreSQL cannot be reached or cannot serve now (a dropped connection, a
 * server shutting down or restarting, no connection free in time), as `unavailable`: a retry may
 * succeed, and a caller must not read them as a bug (500) of its request.
 */
import { GatehouseError, type Store } from '../../src/index.js';

/** SQLSTATEs whose class means the connection or the server, not the statement. */
const UNAVAILABLE_CLASSES = new Set(['08']);
const UNAVAILABLE_STATES = new Set([
  '53300', // too_many_connections
  '57014', // query_canceled (statement_timeout, pg_cancel_backend)
  '57P01', // admin_shutdown (pg_terminate_backend, a fast shutdown)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovering)
  '57P05', // idle_session_timeout
  '25P03', // idle_in_transaction_session_timeout
]);
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** What `pg` and `pg-pool` throw, as plain errors, when a connection is lost or none comes in time. */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Client has encountered a connection error and is not queryable/,
  /^Client was closed and is not queryable/,
];

function isUnavailable(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (UNAVAILABLE_STATES.has(code) || UNAVAILABLE_CLASSES.has(code.slice(0, 2)) || SOCKET_CODES.has(code)) {
      return true;
    }
  }
  if (DRIVER_MESSAGES.some((m) => m.test(error.message))) return true;
  // A batch neighbour's failure, a pool's wrapped timeout: the reason is underneath.
  return isUnavailable(error.cause, depth + 1);
}

/** `error` as `unavailable` when it says the database is unreachable; anything else as it is. */
export function unavailableOnDisconnect(error: unknown): unknown {
  if (error instanceof GatehouseError || !isUnavailable(error)) return error;
  return new GatehouseError('unavailable', 'PostgreSQL is unreachable or cannot serve now; retry later.', {
    cause: error,
  });
}

function wrapIterable<T>(iterable: AsyncIterable<T>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const it = iterable[Symbol.asyncIterator]();
      const translate = <R>(p: Promise<R> | undefined): Promise<R> | undefined =>
        p?.catch((error: unknown) => {
          throw unavailableOnDisconnect(error);
        });
      return {
        next: (...args) => translate(it.next(...args))!,
        ...(it.return ? { return: (value?: unknown) => translate(it.return!(value as never))! } : {}),
        ...(it.throw ? { throw: (e?: unknown) => translate(it.throw!(e))! } : {}),
      };
    },
  };
}

/**
 * The store with every method's lost-connection failure reported as `unavailable`: its promises,
 * and the pages of its async iterables.
 */
export function reportDisconnectsAsUnavailable<S extends Store>(store: S): S {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(store)) {
    if (typeof value !== 'function') {
      out[name] = value;
      continue;
    }
    out[name] = (...args: unknown[]) => {
      const result: unknown = (value as (...a: unknown[]) => unknown).apply(store, args);
      if (result instanceof Promise) {
        return result.catch((error: unknown) => {
          throw unavailableOnDisconnect(error);
        });
      }
      if (result !== null && typeof result === 'object' && Symbol.asyncIterator in result) {
        return wrapIterable(result as AsyncIterable<unknown>);
      }
      return result;
    };
  }
  return out as S;
}
