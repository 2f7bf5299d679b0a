/**
 * `Idempotency-Key` on POST: the first response is kept (keyv, 24 h by default) and replayed for a
 * retry with the same key and body; a different body under the same key is refused. Two concurrent
 * requests with one key in one process run once: the second waits and replays.
 * A response that is not kept — a 5xx (a retry should run again), one over `maxResponseBytes`, or
 * one the store refuses (the bounded in-memory store refuses an entry over an eighth of its
 * bytes) — is answered with `Idempotency-Status: not-stored`: a retry with that key runs again.
 *
 * A kept response can hold what an erasure deletes (a written value, a reason rendered from
 * one). Before a replay, the sessions its request and response name are looked up: when one was
 * erased after the response was kept — through this process or another (the CLI, another
 * instance sharing Redis) — the entry is replaced by a tombstone that holds only the request's
 * fingerprint, and this retry and every later one with the key are answered `response_erased`
 * (a retry loop must not run the request again as if nothing had been kept). An erasure through
 * this process makes the tombstones at once for the entries it kept for requests naming the
 * erased sessions.
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
  /** When it was kept (ms since the epoch); absent in entries kept by earlier versions. */
  storedAt?: number;
}

/** What takes an entry's place once a session it named is erased: no content. */
interface Tombstone {
  fingerprint: string;
  /** The erased session. */
  erased: string;
}

type Entry = StoredResponse | Tombstone;

const isTombstone = (entry: Entry): entry is Tombstone => 'erased' in entry;

/** The answer to a retry whose kept response is erased. */
function responseErased(sessionId: string): GatehouseError {
  return new GatehouseError(
    'response_erased',
    `The response kept for this Idempotency-Key held data of session ${sessionId}, which was erased after it was kept (the session, or its older values by retention): it is not replayed. Read the session again before deciding to resend the request, with a new key.`,
  );
}

/**
 * How much earlier than its `storedAt` an erasure may be dated and still count as after it:
 * instances sharing a store stamp with their own clocks. Its cost: a response kept within this
 * time after an erasure of its session is not replayed either.
 */
const CLOCK_SKEW_MS = 5_000;
/** Sessions of kept entries remembered for eager deletion; the oldest are forgotten first. */
const INDEXED_SESSIONS = 10_000;

/** What a request's kept response may be checked against before it is replayed. */
export interface ReplayCheck {
  /** The caller's tenant. */
  tenantId: string;
  /** Sessions the request names: its entry is deleted at once by {@link Idempotency.forget}. */
  sessions: readonly string[];
  /**
   * Which of these sessions were erased at or after `since` (ms). Null for an answer that holds
   * no session content (an erasure's own report): it is replayed unchecked.
   */
  erasedSince: ((sessionIds: string[], since: number) => Promise<string[]>) | null;
}

/** Options for {@link createIdempotency}. */
export interface IdempotencyOptions {
  /** Where responses are kept; a Redis-backed Keyv shares them across instances. */
  store: Keyv;
  /** @default 24 h */
  ttlMs?: number;
  /** Larger responses are answered but not kept (`Idempotency-Status: not-stored`). @default 1 MiB */
  maxResponseBytes?: number;
  /** @default Date.now */
  now?: () => number;
  /** A failed write of an erased session's tombstone (the store is down). @default ignored */
  onError?: (error: unknown) => void;
  /**
   * How long a read or write of the store may take. A request whose key cannot be looked up in
   * time is not run (503 `unavailable`); a response that cannot be kept in time is answered
   * `not-stored`. (A Redis client queues commands while it reconnects: without this, requests
   * would wait for Redis to come back, and run long after their clients gave up.) @default 2 s
   */
  storeTimeoutMs?: number;
}

/** The response header that says a response was not kept, and its value. */
export const NOT_STORED = { header: 'idempotency-status', value: 'not-stored' } as const;

/** Runs a POST at most once per (caller, key, path). */
export interface Idempotency {
  (
    scope: string,
    idempotencyKey: string,
    body: string,
    run: () => Promise<Reply>,
    check?: ReplayCheck,
  ): Promise<Reply>;
  /** Deletes the entries this process kept for requests naming these sessions of the tenant. */
  forget(tenantId: string, sessionIds: readonly string[]): Promise<void>;
}

/** Creates the idempotency guard. */
export function createIdempotency(options: IdempotencyOptions): Idempotency {
  const ttl = options.ttlMs ?? 24 * 3600_000;
  const maxResponseBytes = options.maxResponseBytes ?? 2 ** 20;
  const now = options.now ?? Date.now;
  const storeTimeoutMs = options.storeTimeoutMs ?? 2_000;
  /** The store's answer, or a rejection once it took longer than {@link storeTimeoutMs}. */
  const inTime = <T>(operation: Promise<T> | T, what: string): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the Idempotency-Key store did not ${what} within ${storeTimeoutMs} ms`)),
        storeTimeoutMs,
      );
    });
    return Promise.race([Promise.resolve(operation), late]).finally(() => clearTimeout(timer));
  };
  const inFlight = new Map<string, Promise<unknown>>();
  /** Entry IDs by `tenant\nsession`, in insertion order (a Map keeps it). */
  const bySession = new Map<string, Set<string>>();
  const index = (tenantId: string, sessions: readonly string[], id: string) => {
    for (const session of sessions) {
      const key = `${tenantId}\n${session}`;
      let ids = bySession.get(key);
      if (!ids) {
        if (bySession.size >= INDEXED_SESSIONS) bySession.delete(bySession.keys().next().value!);
        ids = new Set();
        bySession.set(key, ids);
      }
      ids.add(id);
    }
  };
  /** The entry's sessions that were erased after it was kept. */
  const erasedSessions = async (stored: StoredResponse, requestBody: string, check: ReplayCheck) => {
    if (check.erasedSince === null) return [];
    const sessions = sessionIdsIn([requestBody, stored.body]);
    if (sessions.length === 0) return [];
    // An entry from before `storedAt` was kept: it is at most one TTL old.
    const keptAt = Number.isFinite(stored.storedAt) ? stored.storedAt! : now() - ttl;
    const since = Math.max(0, keptAt - CLOCK_SKEW_MS);
    return check.erasedSince(sessions, since);
  };
  const guard = async (
    scope: string,
    idempotencyKey: string,
    body: string,
    run: () => Promise<Reply>,
    check?: ReplayCheck,
  ): Promise<Reply> => {
    if (idempotencyKey.length === 0 || idempotencyKey.length > 255) {
      throw new GatehouseError('invalid_request', 'Idempotency-Key must be 1 to 255 characters.', {
        errors: [{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }],
      });
    }
    const id = `${scope}:${idempotencyKey}`;
    const fingerprint = createHash('sha256').update(body).digest('hex');
    while (inFlight.has(id)) await inFlight.get(id)!.catch(() => undefined);
    const replay = (stored: Entry) => {
      if (stored.fingerprint !== fingerprint) {
        throw new GatehouseError(
          'invalid_request',
          'This Idempotency-Key was already used with a different request body.',
          { errors: [{ path: 'Idempotency-Key', message: 'reused with a different body' }] },
        );
      }
      if (isTombstone(stored)) throw responseErased(stored.erased);
      return {
        status: stored.status,
        headers: { 'content-type': stored.contentType, 'idempotent-replayed': 'true' },
        body: stored.body,
      } satisfies Reply;
    };
    const handle = async (): Promise<Reply> => {
      let existing: Entry | undefined;
      try {
        existing = (await inTime(options.store.get(id), 'answer')) as Entry | undefined;
      } catch (error) {
        options.onError?.(error);
        throw new GatehouseError(
          'unavailable',
          'The store of Idempotency-Key responses (Redis) does not answer: the request was not run. Retry it with the same key later.',
          { retryAfter: 5 },
        );
      }
      if (existing && !isTombstone(existing) && existing.fingerprint === fingerprint && check) {
        const [erased] = await erasedSessions(existing, body, check);
        if (erased !== undefined) {
          // Refused either way: a store that fails here only keeps the entry until the next retry.
          await Promise.resolve(
            options.store.set(id, { fingerprint, erased } satisfies Tombstone, ttl),
          ).catch((error: unknown) => options.onError?.(error));
          throw responseErased(erased);
        }
      }
      if (existing) return replay(existing);
      const response = await run();
      const responseBody = response.body ?? '';
      // An answer nobody received (499: the client went away) is no answer to replay: a retry runs
      // the operation again.
      const kept =
        response.status < 500 &&
        response.status !== CLIENT_CLOSED_REQUEST &&
        Buffer.byteLength(responseBody) <= maxResponseBytes &&
        (await inTime(
          options.store.set(
            id,
            {
              fingerprint,
              status: response.status,
              body: responseBody,
              contentType: response.headers['content-type'] ?? 'application/json',
              storedAt: now(),
            } satisfies StoredResponse,
            ttl,
          ),
          'keep the response',
        ).catch((error: unknown) => {
          options.onError?.(error);
          return false;
        }));
      if (!kept) response.headers[NOT_STORED.header] = NOT_STORED.value;
      else if (check) index(check.tenantId, check.sessions, id);
      return response;
    };
    // Registered before the first await: a request with the same key arriving while this one looks
    // up the store (a round trip to Redis) waits for it, then replays what it kept.
    const work = handle();
    inFlight.set(id, work);
    try {
      return await work;
    } finally {
      inFlight.delete(id);
    }
  };
  return Object.assign(guard, {
    async forget(tenantId: string, sessionIds: readonly string[]) {
      for (const session of sessionIds) {
        const key = `${tenantId}\n${session}`;
        const ids = bySession.get(key);
        bySession.delete(key);
        for (const id of ids ?? []) {
          // The replay check would refuse it too; this drops the copy now.
          try {
            const entry = (await options.store.get(id)) as Entry | undefined;
            if (entry && !isTombstone(entry)) {
              await options.store.set(
                id,
                { fingerprint: entry.fingerprint, erased: session } satisfies Tombstone,
                ttl,
              );
            }
          } catch (error) {
            options.onError?.(error);
          }
        }
      }
    },
  });
}

/** The distinct `session_id` strings anywhere in these JSON texts (one that does not parse: none). */
export function sessionIdsIn(texts: readonly string[]): string[] {
  const found = new Set<string>();
  const stack: unknown[] = [];
  for (const text of texts) {
    try {
      stack.push(JSON.parse(text));
    } catch {
      // Not JSON (an empty body): it names no session.
    }
  }
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object') continue;
    for (const [k, v] of Object.entries(value)) {
      if (k === 'session_id' && typeof v === 'string' && v !== '') found.add(v);
      else if (typeof v === 'object' && v !== null) stack.push(v);
    }
  }
  return [...found];
}
