/**
 * `Idempotency-Key` on POST: the first response is kept (keyv, 24 h by default) and replayed for a
 * retry with the same key and body; a different body under the same key is refused. Two concurrent
 * requests with one key in one process run once: the second waits and replays.
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
}

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
      // An answer nobody received is no answer to replay: the retry runs the operation.
      if (response.status < 500 && response.status !== CLIENT_CLOSED_REQUEST) {
        await options.store.set(
          id,
          {
            fingerprint,
            status: response.status,
            body: response.body ?? '',
            contentType: response.headers['content-type'] ?? 'application/json',
          } satisfies StoredResponse,
          ttl,
        );
      }
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
