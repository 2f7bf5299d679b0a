/**
 * `Idempotency-Key` on POST: the first response is kept (keyv, 24 h by default) and replayed for a
 * retry with the same key and body; a different body under the same key is refused. Two concurrent
 * requests with one key in one process run once: the second waits and replays.
 * A response that is not kept — a 5xx (a retry should run again), one over `maxResponseBytes`, or
 * one the store refuses (the bounded in-memory store refuses an entry over an eighth of its
 * bytes) — is answered with `Idempotency-Status: not-stored`: a retry with that key runs again.
 */
import { createHash } from 'node:crypto';
import type Keyv from 'keyv';
import { GatehouseError } from '../../src/index.js';
import { CLIENT_CLOSED_REQUEST, type Reply } from './problem.js';

interface StoredResponse {
  fingerprint: string;
  status: number;
  body: string;
  contentType: string;
}

/** Options for {@link createIdempotency}. */
export interface IdempotencyOptions {
  /** Where responses are kept; a Redis-backed Keyv shares them across instances. */
  store: Keyv;
  /** @default 24 h */
  ttlMs?: number;
  /** Larger responses are answered but not kept (`Idempotency-Status: not-stored`). @default 1 MiB */
  maxResponseBytes?: number;
}

/** The response header that says a response was not kept, and its value. */
export const NOT_STORED = { header: 'idempotency-status', value: 'not-stored' } as const;

/** Runs a POST at most once per (caller, key, path). */
export type Idempotency = (
  scope: string,
  idempotencyKey: string,
  body: string,
  run: () => Promise<Reply>,
) => Promise<Reply>;

/** Creates the idempotency guard. */
export function createIdempotency(options: IdempotencyOptions): Idempotency {
  const ttl = options.ttlMs ?? 24 * 3600_000;
  const maxResponseBytes = options.maxResponseBytes ?? 2 ** 20;
  const inFlight = new Map<string, Promise<unknown>>();
  return async (scope, idempotencyKey, body, run) => {
    if (idempotencyKey.length === 0 || idempotencyKey.length > 255) {
      throw new GatehouseError('invalid_request', 'Idempotency-Key must be 1 to 255 characters.', {
        errors: [{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }],
      });
    }
    const id = `${scope}:${idempotencyKey}`;
    const fingerprint = createHash('sha256').update(body).digest('hex');
    while (inFlight.has(id)) await inFlight.get(id)!.catch(() => undefined);
    const replay = (stored: StoredResponse) => {
      if (stored.fingerprint !== fingerprint) {
        throw new GatehouseError(
          'invalid_request',
          'This Idempotency-Key was already used with a different request body.',
          { errors: [{ path: 'Idempotency-Key', message: 'reused with a different body' }] },
        );
      }
      return {
        status: stored.status,
        headers: { 'content-type': stored.contentType, 'idempotent-replayed': 'true' },
        body: stored.body,
      } satisfies Reply;
    };
    const existing = (await options.store.get(id)) as StoredResponse | undefined;
    if (existing) return replay(existing);
    const work = (async () => {
      const response = await run();
      const responseBody = response.body ?? '';
      // An answer nobody received (499: the client went away) is no answer to replay: a retry runs
      // the operation again.
      const kept =
        response.status < 500 &&
        response.status !== CLIENT_CLOSED_REQUEST &&
        Buffer.byteLength(responseBody) <= maxResponseBytes &&
        (await options.store.set(
          id,
          {
            fingerprint,
            status: response.status,
            body: responseBody,
            contentType: response.headers['content-type'] ?? 'application/json',
          } satisfies StoredResponse,
          ttl,
        ));
      if (!kept) response.headers[NOT_STORED.header] = NOT_STORED.value;
      return response;
    })();
    inFlight.set(id, work);
    try {
      return await work;
    } finally {
      inFlight.delete(id);
    }
  };
}
