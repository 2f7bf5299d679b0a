/**
 * What both stores' caches of sessions' current items share: the key of a session, the items as
 * a cache hands them out, and the bounded map that remembers them.
 */
import type { StateItem } from '../../src/index.js';
import { itemsFromRows } from './rows.js';

/** A session's cache key: unambiguous for any tenant and session strings. */
export const sessionCacheKey = (tenantId: string, sessionId: string): string =>
  `${tenantId.length}:${tenantId}${sessionId}`;

/**
 * {@link itemsFromRows}, frozen: a cache hands the same objects to every caller, and the gate
 * keeps its views of frozen items (`gateStateOf`) while they are the same objects.
 */
export function frozenItemsFromRows(sessionId: string, rows: readonly unknown[][]): StateItem[] {
  const items = itemsFromRows(sessionId, rows);
  for (const item of items) Object.freeze(Object.freeze(item).metadata);
  return items;
}

/** Sets `key` in `map` as its newest entry, dropping the oldest when a new key finds it full. */
export function remember<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  if (!map.delete(key) && map.size >= limit) map.delete(map.keys().next().value!);
  map.set(key, value);
}
