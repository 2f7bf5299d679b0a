/**
 * Receiver-side dedupe: each webhook event ID is processed once. On Redis the claim is one atomic
 * `SET key value NX PX ttl`, so receivers in several processes never both win; on any other
 * keyv store it is atomic within one process.
 */
import Keyv from 'keyv';
import { GatehouseError } from '../../src/index.js';

/** Options for {@link createDeduper}. */
export interface DeduperOptions {
  /**
   * Where seen IDs are kept. Share one store (e.g. `new Keyv({ store: new KeyvRedis(url) })`)
   * between instances of the receiver: with `@keyv/redis` a claim is atomic across processes.
   * @default an in-memory `new Keyv({ namespace })`
   */
  store?: Keyv;
  /**
   * How long an ID is remembered, in ms. A duplicate comes from a retry after a lost response,
   * at most one schedule step (10 h + 20 % jitter) after the attempt that was processed; a manual
   * redelivery within the TTL is also treated as a duplicate. @default 86400000 (24 h)
   */
  ttlMs?: number;
  /** Namespace of the default store. @default 'gatehouse-webhooks' */
  namespace?: string;
}

/** Claims event IDs so each is processed once. */
export interface Deduper {
  /**
   * True the first time `id` is claimed within the TTL, false for every later or concurrent claim
   * (across processes on Redis; within this process on other stores).
   * @throws GatehouseError `unavailable` if the store did not record the ID; answer 5xx so the
   *   sender retries.
   */
  claim(id: string): Promise<boolean>;
  /** Forgets `id`, so a redelivery is processed again; call it when processing failed. */
  release(id: string): Promise<void>;
}

/** The part of a node-redis client (what `@keyv/redis` holds) that an atomic claim needs. */
interface SetIfAbsentClient {
  set(key: string, value: string, options: { NX: true; PX: number }): Promise<string | null>;
}

/** The public surface of a `@keyv/redis` adapter, recognised without importing the package. */
interface RedisAdapter {
  getClient(): Promise<SetIfAbsentClient>;
  createKeyPrefix(key: string, namespace?: string): string;
  namespace?: string | undefined;
}

function redisAdapterOf(store: Keyv): RedisAdapter | undefined {
  const adapter = store.store as Partial<RedisAdapter> | undefined;
  return typeof adapter?.getClient === 'function' && typeof adapter.createKeyPrefix === 'function'
    ? (adapter as RedisAdapter)
    : undefined;
}

/** Writes `id` only if it is absent; true when this call wrote it. */
type SetIfAbsent = (id: string, ttlMs: number) => Promise<boolean>;

/**
 * The atomic claim on Redis. The key and the value are the ones keyv itself would write for `id`
 * (its `namespace:` prefix, then the adapter's), so `store.get(id)`, `store.delete(id)` and
 * receivers still using plain keyv calls see the same entry.
 */
function redisSetIfAbsent(store: Keyv, adapter: RedisAdapter): SetIfAbsent {
  return async (id, ttlMs) => {
    const keyvKey = store.useKeyPrefix && store.namespace ? `${store.namespace}:${id}` : id;
    const key = adapter.createKeyPrefix(keyvKey, adapter.namespace);
    const value = await store.serializeData({ value: true, expires: Date.now() + ttlMs });
    const client = await adapter.getClient();
    return (await client.set(key, String(value), { NX: true, PX: ttlMs })) === 'OK';
  };
}

/**
 * Any other keyv store has no set-if-absent: look, then write. Only the caller's in-flight set
 * (one process) keeps two claims of one ID apart.
 */
function lookThenSet(store: Keyv): SetIfAbsent {
  return async (id, ttlMs) => {
    if ((await store.get(id)) !== undefined) return false;
    if (!(await store.set(id, true, ttlMs))) {
      throw new GatehouseError('unavailable', `Could not record webhook event ${id} as seen.`);
    }
    return true;
  };
}

/**
 * Remembers seen webhook event IDs in a keyv store with a TTL. With `@keyv/redis` a claim is one
 * atomic `SET NX PX`, so receivers in any number of processes sharing the Redis handle each ID
 * once. With another keyv store (the in-memory default included), concurrent claims are told
 * apart within this process only; across processes on such a store, two deliveries arriving at
 * the same instant can both be claimed.
 * @example
 * const deduper = createDeduper({ store: new Keyv({ store: new KeyvRedis(process.env.REDIS_URL) }) });
 * if (await deduper.claim(event.id)) {
 *   try { await handle(event); } catch (e) { await deduper.release(event.id); throw e; }
 * }
 */
export function createDeduper(options: DeduperOptions = {}): Deduper {
  const ttlMs = options.ttlMs ?? 24 * 3_600_000;
  const store = options.store ?? new Keyv({ namespace: options.namespace ?? 'gatehouse-webhooks' });
  const redis = redisAdapterOf(store);
  const setIfAbsent = redis ? redisSetIfAbsent(store, redis) : lookThenSet(store);
  const inFlight = new Set<string>();
  return {
    async claim(id) {
      if (inFlight.has(id)) return false;
      inFlight.add(id);
      try {
        return await setIfAbsent(id, ttlMs);
      } catch (cause) {
        if (cause instanceof GatehouseError) throw cause;
        throw new GatehouseError('unavailable', `Could not record webhook event ${id} as seen.`, { cause });
      } finally {
        inFlight.delete(id);
      }
    },
    async release(id) {
      await store.delete(id);
    },
  };
}
