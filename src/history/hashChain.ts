/**
 * The tamper-evident chain: each event's hash is SHA-256 over its canonical JSON (RFC 8785),
 * which includes the previous event's hash, so changing, removing or reordering any stored event
 * breaks every hash after it.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../canonicalJson.js';
import type { HistoryEvent, VerifyResult } from '../schemas.js';

/** The `prev_hash` of a tenant's first event. */
export const GENESIS_HASH = '0'.repeat(64);

/** The fields covered by an event's hash. The tenant is included so chains cannot be spliced. */
export interface HashedFields {
  tenant_id: string;
  seq: number;
  event_id: string;
  type: string;
  session_id: string;
  occurred_at: string;
  data: unknown;
  prev_hash: string;
}

/** SHA-256 (hex) of the canonical JSON of an event's hashed fields. */
export function hashEvent(fields: HashedFields): string {
  return hashTenantEvent(fields.tenant_id, fields);
}

/** {@link hashEvent} of a tenant's event, its other fields read off `event` (no copy made to add the tenant). */
export function hashTenantEvent(tenantId: string, event: Omit<HashedFields, 'tenant_id'>): string {
  return hash('sha256', canonicalEventJson(tenantId, event, canonicalJson(event.data)), 'hex');
}

/**
 * The canonical JSON of the hashed fields around the canonical JSON of `data`: its keys in RFC
 * 8785 order, each string and number as `JSON.stringify` writes it (so does RFC 8785). Equal to
 * `canonicalJson(fields)`, which a property test checks, without sorting the same eight keys
 * on every append.
 */
function canonicalEventJson(tenantId: string, f: Omit<HashedFields, 'tenant_id'>, dataJson: string): string {
  const s = JSON.stringify;
  return `{"data":${dataJson},"event_id":${s(f.event_id)},"occurred_at":${s(f.occurred_at)},"prev_hash":${s(f.prev_hash)},"seq":${s(f.seq)},"session_id":${s(f.session_id)},"tenant_id":${s(tenantId)},"type":${s(f.type)}}`;
}

/**
 * Recomputes a tenant's chain from its events in `seq` order. Stops at the first break and says
 * which event and why.
 */
export async function verifyChain(
  tenantId: string,
  pages: AsyncIterable<HistoryEvent[]>,
): Promise<VerifyResult> {
  let prev = GENESIS_HASH;
  let expectedSeq = 1;
  let checked = 0;
  for await (const page of pages) {
    for (const event of page) {
      const fail = (problem: string): VerifyResult => ({
        ok: false,
        checked,
        head: prev === GENESIS_HASH ? null : prev,
        first_bad_seq: event.seq,
        problem,
      });
      if (event.seq !== expectedSeq) return fail(`expected seq ${expectedSeq}, found ${event.seq}`);
      if (event.prev_hash !== prev) return fail(`event ${event.event_id} does not link to the previous hash`);
      if (hashEvent({ tenant_id: tenantId, ...event }) !== event.hash) {
        return fail(`event ${event.event_id} was altered: its hash does not match its content`);
      }
      prev = event.hash;
      expectedSeq += 1;
      checked += 1;
    }
  }
  return { ok: true, checked, head: prev === GENESIS_HASH ? null : prev, first_bad_seq: null, problem: null };
}
