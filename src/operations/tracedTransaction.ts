/**
 * The store transaction as a span, at the core where operations open it: every store gets the
 * same span without each adapter knowing about tracing.
 */
import { context } from '@opentelemetry/api';
import type { Store, StoreTx, TransactionOptions } from '../store.js';
import { inSpan, tracingActive } from '../telemetry.js';

/** OTel `db.system.name` values for the stores Gatehouse ships; others keep their own kind. */
const DB_SYSTEM: Readonly<Record<string, string>> = { sqlite: 'sqlite', postgres: 'postgresql' };

/**
 * `store.transaction` wrapped in a `gatehouse.store.transaction` span. The callback runs in the
 * span's context whatever the store does with promises (a store may queue transactions on a
 * chain started by another caller), so what it appends carries this trace.
 */
export function tracedTransaction(
  store: Store,
): <T>(fn: (tx: StoreTx) => Promise<T>, options?: TransactionOptions) => Promise<T> {
  const attributes = { 'db.system.name': DB_SYSTEM[store.kind] ?? store.kind };
  return (fn, options) => {
    if (!tracingActive()) return store.transaction(fn, options);
    return inSpan('gatehouse.store.transaction', { attributes }, () => {
      const active = context.active();
      return store.transaction((tx) => context.with(active, fn, undefined, tx), options);
    });
  };
}
