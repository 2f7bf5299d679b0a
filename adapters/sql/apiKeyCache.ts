/**
 * The API keys a store has looked up recently, by hash: every authenticated request looks its
 * key up, and keys change only when one is revoked. Only active keys are kept (a new key must
 * work at once, so misses are never remembered). Each store clears it on whatever tells it that
 * a key may have been revoked anywhere: its own revocations, and another connection's writes
 * (SQLite: `PRAGMA data_version`) or another instance's NOTIFY (PostgreSQL).
 */
import type { StoredApiKey } from '../../src/index.js';

/** Keys kept at most; the oldest entry goes first. */
const MAX_KEYS = 1000;

/** Active API keys by hash, cleared whenever a revocation may have happened. */
export class ApiKeyCache {
  readonly #keys = new Map<string, StoredApiKey>();
  #generation = 0;

  /** Changes on every {@link clear}: a lookup started before it must not be remembered. */
  get generation(): number {
    return this.#generation;
  }

  get(hash: string): StoredApiKey | undefined {
    return this.#keys.get(hash);
  }

  /** Remembers a key read at `generation`, unless it is revoked or the cache was cleared since. */
  remember(hash: string, key: StoredApiKey | null, generation: number): void {
    if (!key || key.revoked_at !== null || generation !== this.#generation) return;
    if (this.#keys.size >= MAX_KEYS) this.#keys.delete(this.#keys.keys().next().value!);
    this.#keys.set(hash, key);
  }

  clear(): void {
    this.#keys.clear();
    this.#generation += 1;
  }
}
