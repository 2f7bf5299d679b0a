/**
 * The tamper-evident chain: each event's hash is SHA-256 over its canonical JSON (RFC 8785),
 * which includes the previous event's hash, so changing, removing or reordering any stored event
 * breaks every hash after it.
 */
import { createHash } from 'node:crypto';
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
  const canonical = canonicalJson({
    tenant_id: fields.tenant_id,
    seq: fields.seq,
    event_id: fields.event_id,
    type: fields.type,
    session_id: fields.session_id,
    occurred_at: fields.occurred_at,
    data: fields.data,
    prev_hash: fields.prev_hash,
  });
  return createHash('sha256').update(canonical).digest('hex');
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
