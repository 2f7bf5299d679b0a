/**
 * The in-memory store behind Keyv when no Redis is configured (idempotent responses): Keyv's own
 * default is a plain `Map` that keeps every entry until it is read after its TTL, so unique
 * `Idempotency-Key`s pinned memory without bound (5,000 keys with 16 KB answers: 84 MiB).
 * This one is bounded in entries and in bytes, and evicts the oldest entry first, by insertion.
 *
 * Written here rather than taken from `lru-cache`: that evicts the least recently *used* entry,
 * so a response replayed once would outlive newer ones; every entry here has the same TTL, so
 * insertion order is also expiry order, and expired entries leave from the front as new ones
 * arrive, without a timer. A `Map` keeps insertion order, which is all this needs.
 */

/** Options for {@link createBoundedMemoryStore}. */
export interface BoundedMemoryStoreOptions {
  /** Entries kept at most. @default 10000 */
  maxEntries?: number;
  /**
   * Bytes kept at most: the UTF-8 size of each key and stored value. One entry may take at most
   * an eighth of it; a larger one is refused (`set` answers false). @default 33554432 (32 MiB)
   */
  maxBytes?: number;
  /** Clock for expiry, in ms. @default Date.now */
  now?: () => number;
}

interface Entry {
  value: unknown;
  bytes: number;
  /** Epoch ms, or Infinity without a TTL. */
  expiresAt: number;
}

/** A Map-like Keyv store (`get`, `set`, `delete`, `clear`, `has`) with the bounds above. */
export interface BoundedMemoryStore {
  get(key: string): unknown;
  /** False when the entry is too large to keep (then nothing was stored). */
  set(key: string, value: unknown, ttlMs?: number): boolean;
  delete(key: string): boolean;
  clear(): void;
  has(key: string): boolean;
  /** Entries held now (expired ones included until they are dropped). */
  readonly size: number;
  /** Bytes held now. */
  readonly bytes: number;
  /** The largest entry it keeps, in bytes. */
  readonly maxEntryBytes: number;
}

function sizeOf(value: unknown): number {
  // Keyv hands over its serialised string; anything else is measured as JSON.
  return Buffer.byteLength(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
}

/**
 * Creates the store.
 * @example
 * const ttlStore = new Keyv({ store: createBoundedMemoryStore({ maxBytes: 8 * 2 ** 20 }) });
 */
export function createBoundedMemoryStore(options: BoundedMemoryStoreOptions = {}): BoundedMemoryStore {
  const maxEntries = options.maxEntries ?? 10_000;
  const maxBytes = options.maxBytes ?? 32 * 2 ** 20;
  const maxEntryBytes = Math.floor(maxBytes / 8);
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let bytes = 0;

  const remove = (key: string): boolean => {
    const entry = entries.get(key);
    if (!entry) return false;
    entries.delete(key);
    bytes -= entry.bytes;
    return true;
  };
  const live = (key: string): Entry | undefined => {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= now()) {
      remove(key);
      return undefined;
    }
    return entry;
  };

  return {
    get: (key) => live(key)?.value,
    has: (key) => live(key) !== undefined,
    set(key, value, ttlMs) {
      remove(key);
      const size = Buffer.byteLength(key) + sizeOf(value);
      if (size > maxEntryBytes) return false;
      const at = now();
      // Oldest first: expired entries, then whatever makes room.
      for (const [oldest, entry] of entries) {
        const full = entries.size >= maxEntries || bytes + size > maxBytes;
        if (!full && entry.expiresAt > at) break;
        remove(oldest);
      }
      entries.set(key, {
        value,
        bytes: size,
        expiresAt: typeof ttlMs === 'number' && ttlMs > 0 ? at + ttlMs : Number.POSITIVE_INFINITY,
      });
      bytes += size;
      return true;
    },
    delete: remove,
    clear() {
      entries.clear();
      bytes = 0;
    },
    get size() {
      return entries.size;
    },
    get bytes() {
      return bytes;
    },
    maxEntryBytes,
  };
}
