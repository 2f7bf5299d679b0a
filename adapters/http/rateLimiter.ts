/**
 * Per-key token buckets, in memory. Written here rather than taken from hono-rate-limiter, which
 * needs `unstorage` for any store; a bucket is a dozen lines and runs in O(1) per request.
 * Behind a load balancer each instance limits on its own: set the per-instance rate accordingly.
 */

/** Options for {@link createRateLimiter}. */
export interface RateLimiterOptions {
  /** Sustained requests per second per key. @default 100 */
  ratePerSecond?: number;
  /** Burst size. @default 2 × ratePerSecond */
  burst?: number;
  /** @default Date.now */
  now?: () => number;
  /** Buckets kept before idle ones are dropped. @default 10000 */
  maxKeys?: number;
}

/** Takes one token for `key`; returns 0 when allowed, otherwise the seconds to wait. */
export type RateLimiter = (key: string) => number;

/** Creates a token-bucket limiter. */
export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  const rate = options.ratePerSecond ?? 100;
  const burst = options.burst ?? rate * 2;
  const now = options.now ?? Date.now;
  const maxKeys = options.maxKeys ?? 10_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  return (key) => {
    const t = now();
    let bucket = buckets.get(key);
    if (!bucket) {
      if (buckets.size >= maxKeys) {
        for (const [k, b] of buckets) if (b.tokens + ((t - b.at) / 1000) * rate >= burst) buckets.delete(k);
      }
      bucket = { tokens: burst, at: t };
      buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(burst, bucket.tokens + ((t - bucket.at) / 1000) * rate);
    bucket.at = t;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return (1 - bucket.tokens) / rate;
  };
}
