/**
 * A bridge until the stores keep an outbox row's `traceparent`: remembers, in this process, the
 * `traceparent` each queued delivery was written with, and hands it back with the claim when the
 * store returned none. The durable home is a nullable `traceparent` column of `deliveries`
 * (see `NewDelivery.traceparent`); once a store fills `ClaimedDelivery.traceparent` itself this
 * passes its answer through untouched. Until then a delivery claimed by another instance, or
 * after a restart, starts a trace of its own: tracing is a side channel, never a reason to fail.
 */
import type { ClaimedDelivery, DeliveryAttempt, NewDelivery, Store, StoreTx } from '../../src/index.js';

/** Deliveries remembered at most; the oldest go first (a stuck outbox must not grow memory). */
const DEFAULT_MAX = 10_000;

/** Calls `target`'s own member, so class stores with private fields keep working behind the proxy. */
function own<T extends object>(target: T, prop: string | symbol): unknown {
  const value = Reflect.get(target, prop, target);
  return typeof value === 'function' ? value.bind(target) : value;
}

/** Wraps `store` so claimed deliveries carry the `traceparent` they were queued with in this process. */
export function rememberDeliveryTraceparents(store: Store, options: { max?: number } = {}): Store {
  const max = options.max ?? DEFAULT_MAX;
  const known = new Map<string, string>();

  function keep(deliveries: readonly NewDelivery[]): void {
    for (const d of deliveries) {
      if (d.traceparent === undefined) continue;
      known.set(d.delivery_id, d.traceparent);
      if (known.size > max) known.delete(known.keys().next().value as string);
    }
  }

  const wrapTx = (tx: StoreTx): StoreTx =>
    new Proxy(tx, {
      get(target, prop) {
        if (prop !== 'insertDeliveries') return own(target, prop);
        return async (tenantId: string, deliveries: NewDelivery[]) => {
          await target.insertDeliveries(tenantId, deliveries);
          keep(deliveries);
        };
      },
    });

  return new Proxy(store, {
    get(target, prop) {
      switch (prop) {
        case 'transaction':
          return <T>(fn: (tx: StoreTx) => Promise<T>) => target.transaction((tx) => fn(wrapTx(tx)));
        case 'claimDueDeliveries':
          return async (claim: Parameters<Store['claimDueDeliveries']>[0]): Promise<ClaimedDelivery[]> => {
            const claimed = await target.claimDueDeliveries(claim);
            return claimed.map((c) => {
              const traceparent = c.traceparent ?? known.get(c.delivery.delivery_id);
              return traceparent === undefined ? c : { ...c, traceparent };
            });
          };
        case 'recordDeliveryAttempt':
          return async (tenantId: string, deliveryId: string, attempt: DeliveryAttempt) => {
            await target.recordDeliveryAttempt(tenantId, deliveryId, attempt);
            if (attempt.status !== 'pending') known.delete(deliveryId);
          };
        default:
          return own(target, prop);
      }
    },
  });
}
