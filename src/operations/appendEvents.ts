/**
 * Appending history events: each one chained to the last by its hash, and a delivery queued
 * for every active webhook it matches, in the caller's transaction (the transactional outbox).
 */
import type { PrincipalRecord } from '../auth/principalRecord.js';
import { type SaltSource, sealEventData } from '../history/commitments.js';
import { GENESIS_HASH, hashTenantEvent } from '../history/hashChain.js';
import type { IdGenerator } from '../runtime.js';
import type { EventType } from '../schemas.js';
import type { StoredEvent, StoreTx } from '../store.js';
import { activeTraceparent } from '../telemetry.js';
import { matchesSubscription } from '../webhooks/index.js';

/** An event to append; the chain and the outbox are {@link appendEvents}' job. */
export interface EventDraft {
  type: EventType;
  session_id: string;
  data: Record<string, unknown>;
  decision_id?: string;
}

/** What {@link appendEvents} needs from its instance. */
export interface AppendEventsOptions {
  ids: IdGenerator;
  /** The salts of caller-supplied fields' commitments (from the instance's `randomBytes`). */
  salts: SaltSource;
  /** The current time, ISO 8601. */
  now: () => string;
  /** Called (as a microtask) when the append queued at least one delivery. */
  onDeliveriesQueued?: (() => void) | undefined;
  /** Who caused the events: recorded as `data.principal` on each. @default none (no caller) */
  principal?: PrincipalRecord | undefined;
}

/**
 * Appends events in one transaction, chaining them and queuing matching deliveries. Each event is
 * stored in history format 2: its envelope in the chain, its caller-supplied fields beside it
 * (commitments.ts). Resolves to the events as readers see them (with their values).
 */
export async function appendEvents(
  tx: StoreTx,
  tenantId: string,
  drafts: readonly EventDraft[],
  options: AppendEventsOptions,
): Promise<StoredEvent[]> {
  if (drafts.length === 0) return [];
  const { ids, now, salts, onDeliveriesQueued, principal } = options;
  const head = await tx.lockChainHead(tenantId);
  let seq = head?.seq ?? 0;
  let prevHash = head?.hash ?? GENESIS_HASH;
  const webhooks = (await tx.listWebhooks(tenantId)).filter((w) => w.status === 'active');
  const events: StoredEvent[] = [];
  let queued = 0;
  // Read once, and only when something is queued: without an SDK it is always undefined.
  let traceparent: string | undefined | null = null;
  for (const draft of drafts) {
    seq += 1;
    // The principal goes into the data before sealing: an IdP subject is personal, so it is kept
    // beside the chain like the caller's own fields (see CALLER_CONTENT).
    const data = principal === undefined ? draft.data : { ...draft.data, principal };
    const sealed = sealEventData(draft.type, data, salts);
    const event: StoredEvent = {
      event_id: ids('evt'),
      seq,
      type: draft.type,
      session_id: draft.session_id,
      occurred_at: now(),
      data: sealed.envelope,
      prev_hash: prevHash,
      hash: '',
      decision_id: draft.decision_id ?? null,
    };
    // Hashed in place: copying the event into a new object with its tenant was 3 % of an evaluation.
    event.hash = hashTenantEvent(tenantId, event);
    await tx.appendEvent(tenantId, event, sealed.fields);
    const matching = webhooks.filter((w) => matchesSubscription(w, event));
    if (matching.length > 0) {
      if (traceparent === null) traceparent = activeTraceparent();
      const trace = traceparent === undefined ? {} : { traceparent };
      await tx.insertDeliveries(
        tenantId,
        matching.map((w) => ({
          delivery_id: ids('dlv'),
          webhook_id: w.id,
          event_id: event.event_id,
          event_type: event.type,
          next_attempt_at: event.occurred_at,
          created_at: event.occurred_at,
          ...trace,
        })),
      );
      queued += matching.length;
    }
    prevHash = event.hash;
    // The store may hold `event` until its commit: readers' copy is another object.
    events.push(sealed.fields === null ? event : { ...event, data: draft.data });
  }
  if (queued > 0 && onDeliveriesQueued) queueMicrotask(onDeliveriesQueued);
  return events;
}
