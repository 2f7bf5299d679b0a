/**
 * The injected dependencies of the core: time, IDs and randomness. Tests pass fixed ones so they
 * never sleep and every result is reproducible.
 */
import { randomBytes as nodeRandomBytes, randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/** Returns the current time. */
export type Clock = () => Date;

/** Returns a new ID with the given prefix (`dec`, `evt`, …): `dec_01J…`, sortable by creation. */
export type IdGenerator = (prefix: IdPrefix) => string;

/** Returns `n` cryptographically random bytes. */
export type RandomBytes = (n: number) => Uint8Array;

/** The prefixes Gatehouse IDs carry. */
export type IdPrefix = 'dec' | 'evt' | 'cfl' | 'whk' | 'dlv' | 'key' | 'apr' | 'hld';

/** The system clock. */
export const systemClock: Clock = () => new Date();

let lastMs = Number.NaN;
let lastIso = '';

/**
 * `date.toISOString()`, remembered for the last millisecond formatted: the decisions of one
 * millisecond share the string, and formatting each was ~2 % of an evaluation.
 * @throws {RangeError} for an invalid date, as `toISOString` does
 */
export function isoTime(date: Date): string {
  const ms = date.getTime();
  if (ms !== lastMs) {
    lastIso = date.toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/**
 * Prefixed ULIDs: lexicographically sortable by time, monotonic within a millisecond.
 * @example createIdGenerator()('dec') // 'dec_01JD3…'
 */
export function createIdGenerator(clock: Clock = systemClock): IdGenerator {
  const next = monotonicFactory(pooledRandom());
  return (prefix) => `${prefix}_${next(clock().getTime()).toLowerCase()}`;
}

/** Random bytes from `node:crypto`. */
export const systemRandomBytes: RandomBytes = (n) => new Uint8Array(nodeRandomBytes(n));

/**
 * A cryptographic PRNG for ULIDs, drawn from a pooled `randomFillSync` buffer: ulid's default
 * asks WebCrypto once per character, which measured 8 % of an evaluation. A byte / 256 keeps
 * `floor(x * 32)` uniform.
 */
function pooledRandom(): () => number {
  const pool = new Uint8Array(4096);
  let at = pool.length;
  return () => {
    if (at === pool.length) {
      randomFillSync(pool);
      at = 0;
    }
    return pool[at++]! / 256;
  };
}
