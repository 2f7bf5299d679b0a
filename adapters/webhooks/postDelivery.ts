/**
 * One delivery POST through an undici dispatcher, with only what the sender needs back: the
 * status and `Retry-After`. It dispatches with its own small handler rather than `request()`:
 * `request()` builds an async resource, a response stream (read only to be discarded) and,
 * for a deadline, an `AbortSignal` with its listeners — together over a tenth of a drain's CPU
 * per delivery, for a body nobody reads.
 */
import type { Dispatcher } from 'undici';

/** What a receiver answered. */
export interface DeliveryResponse {
  statusCode: number;
  /** The first `Retry-After` header, if any. */
  retryAfter: string | undefined;
}

/** Options for {@link postDelivery}. */
export interface PostDeliveryOptions {
  body: string;
  headers: Record<string, string>;
  /** Time allowed for the response headers, in ms. */
  headersTimeout: number;
  /** Time allowed between response body chunks, in ms. */
  bodyTimeout: number;
}

/** A request in flight, for {@link postDelivery}'s caller to end early (a deadline). */
export interface PostAbort {
  /**
   * Aborts the request; it then fails with `reason` unless its headers are in already, at once
   * even while its connection is still being opened (nothing is sent on it then).
   */
  abort(reason: Error): void;
}

/** Response bytes read (and dropped) before the connection is closed instead, as `body.dump()` does. */
const DISCARD_LIMIT = 128 * 1024;

/** Where undici sends a URL: its origin and its path with the query (no fragment), as `request()` splits it. */
interface Target {
  origin: string;
  path: string;
}

/** Webhook URLs split once each: a backlog is a few URLs sent to thousands of times. */
const TARGETS_KEPT = 1024;
const targets = new Map<string, Target>();

function targetOf(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const u = new URL(url);
    target = { origin: u.origin, path: u.search ? `${u.pathname}${u.search}` : u.pathname };
    if (targets.size >= TARGETS_KEPT) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/**
 * POSTs `body` to `url` and resolves once the response has been read to its end (so the
 * connection is reused), discarding the body; a body over 128 KiB closes the connection instead.
 * Rejects when no response headers arrive (network error, timeout, abort); once the headers are
 * in, the response counts whatever happens to its body, as with `request()` and `body.dump()`.
 * `onStart` receives the handle that aborts it. Redirects are not followed.
 * @example
 * const { statusCode } = await postDelivery(agent, url, { body, headers, headersTimeout: 15_000, bodyTimeout: 15_000 });
 */
export function postDelivery(
  dispatcher: Dispatcher,
  url: string,
  options: PostDeliveryOptions,
  onStart?: (handle: PostAbort) => void,
): Promise<DeliveryResponse> {
  return new Promise((resolve, reject) => {
    let response: DeliveryResponse | undefined;
    let controller: Dispatcher.DispatchController | undefined;
    let abortReason: Error | undefined;
    let read = 0;
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      if (response) resolve(response);
      else reject(error ?? new Error('the request ended without a response'));
    };
    onStart?.({
      abort(reason) {
        if (settled || abortReason) return;
        abortReason = reason;
        if (controller) {
          controller.abort(reason);
          return;
        }
        // Still resolving or connecting (a name server or a handshake that takes its time): the
        // attempt ends now, and the request is aborted as soon as it reaches a connection, before
        // anything is written.
        finish(reason);
      },
    });
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (abortReason) c.abort(abortReason);
      },
      onResponseStart(_c, statusCode, headers) {
        // 1xx informational responses come before the real one.
        if (statusCode < 200) return;
        const retryAfter = headers['retry-after'];
        response = { statusCode, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
      },
      onResponseData(c, chunk) {
        read += chunk.length;
        if (read > DISCARD_LIMIT) {
          finish();
          c.abort(new Error('response body over the discard limit: connection closed'));
        }
      },
      onResponseEnd() {
        finish();
      },
      onResponseError(_c, error) {
        finish(error);
      },
    };
    try {
      const { origin, path } = targetOf(url);
      dispatcher.dispatch(
        {
          origin,
          path,
          method: 'POST',
          body: options.body,
          headers: options.headers,
          headersTimeout: options.headersTimeout,
          bodyTimeout: options.bodyTimeout,
        },
        handler,
      );
    } catch (error) {
      finish(error instanceof Error ? error : new Error(String(error)));
    }
  });
}
