/**
 * How many history streams may be open at once: per API key, per tenant and for the whole app.
 * The first two keep one caller (or one tenant's many keys) from taking every place; the last
 * bounds what one process holds. A place is taken when a stream opens and given back once when
 * it ends, however it ends.
 */
import { GatehouseError, type Principal } from '../../src/index.js';

/** The three bounds. */
export interface StreamLimitOptions {
  /** Open streams per API key; more are `rate_limited` (429). @default 10 */
  maxPerKey?: number;
  /** Open streams per tenant, all its keys together; more are `rate_limited` (429). @default 50 */
  maxPerTenant?: number;
  /** Open streams in this app; more are `unavailable` (503). @default 100 */
  maxTotal?: number;
}

/** Counts open streams and refuses one past a bound. */
export interface StreamLimits {
  /**
   * Takes a place for `principal`'s new stream; call the returned function when it ends (safe
   * twice).
   * @throws {GatehouseError} `rate_limited` past the key's or the tenant's bound, `unavailable`
   *   past the app's, each with `Retry-After` and the bound in the detail
   */
  take(principal: Pick<Principal, 'keyId' | 'tenantId'>): () => void;
}

/** Seconds a refused client is asked to wait: a place frees when any stream ends. */
const RETRY_AFTER_S = 5;

function add(counts: Map<string, number>, id: string, by: 1 | -1): void {
  const n = (counts.get(id) ?? 0) + by;
  if (n > 0) counts.set(id, n);
  else counts.delete(id);
}

/** Creates the counters of one app. */
export function createStreamLimits(options: StreamLimitOptions = {}): StreamLimits {
  const maxPerKey = options.maxPerKey ?? 10;
  const maxPerTenant = options.maxPerTenant ?? 50;
  const maxTotal = options.maxTotal ?? 100;
  const perKey = new Map<string, number>();
  const perTenant = new Map<string, number>();
  let total = 0;
  return {
    take({ keyId, tenantId }) {
      if ((perKey.get(keyId) ?? 0) >= maxPerKey) {
        throw new GatehouseError(
          'rate_limited',
          `This API key already has ${maxPerKey} open history streams, its limit; close one or retry later.`,
          { retryAfter: RETRY_AFTER_S },
        );
      }
      if ((perTenant.get(tenantId) ?? 0) >= maxPerTenant) {
        throw new GatehouseError(
          'rate_limited',
          `This tenant already has ${maxPerTenant} open history streams, its limit; close one or retry later.`,
          { retryAfter: RETRY_AFTER_S },
        );
      }
      if (total >= maxTotal) {
        throw new GatehouseError(
          'unavailable',
          'Too many open history streams on this server; retry later.',
          {
            retryAfter: RETRY_AFTER_S,
          },
        );
      }
      add(perKey, keyId, 1);
      add(perTenant, tenantId, 1);
      total += 1;
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        add(perKey, keyId, -1);
        add(perTenant, tenantId, -1);
        total -= 1;
      };
    },
  };
}
