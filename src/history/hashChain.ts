/**
 * The tamper-evident chain: each event's hash is SHA-256 over its canonical JSON (RFC 8785),
 * which includes the previous event's hash, so changing, removing or reordering any stored event
 * breaks every hash after it.
 *
 * Format 2 (commitments.ts): the hashed `data` is the event's envelope, each caller-supplied
 * field replaced by a salted commitment, and the hashed fields carry `"v": 2`. Format 1 (the
 * whole data, no `v`) is kept for the upgrade that re-encodes a format 1 chain.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../canonicalJson.js';
import type { HistoryEvent, VerifyResult } from '../schemas.js';
import { commitField, type EventValues, envelopeCommitments, HISTORY_FORMAT } from './commitments.js';

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
  /** The envelope (format 2): caller fields replaced by their commitments. */
  data: unknown;
  prev_hash: string;
}

/** A stored event as verification reads it: its envelope and what is kept beside the chain. */
export interface SealedEvent extends HistoryEvent {
  /** The event's values row; undefined or null when there is none. */
  values?: EventValues | undefined;
  /**
   * The store's `decision_id` index column, which decision lookups use and the hash does not
   * cover: verification checks it against the decision the hashed data names. Undefined when the
   * store does not say.
   */
  decision_id?: string | null | undefined;
}

/** The event types a decision's lookups find by their `decision_id` column (appendEvents.ts). */
const INDEXED_BY_DECISION: ReadonlySet<string> = new Set(['gate_evaluation', 'action_outcome']);

/** SHA-256 (hex) of the canonical JSON of an event's hashed fields and `v: 2`. */
export function hashEvent(fields: HashedFields): string {
  return hashTenantEvent(fields.tenant_id, fields);
}

/** {@link hashEvent} of a tenant's event, its other fields read off `event` (no copy made to add the tenant). */
export function hashTenantEvent(tenantId: string, event: Omit<HashedFields, 'tenant_id'>): string {
  return hash(
    'sha256',
    `${canonicalEventJson(tenantId, event, canonicalJson(event.data))},"v":${HISTORY_FORMAT}}`,
    'hex',
  );
}

/** The format 1 hash (before commitments): only to verify a chain before upgrading it. */
export function hashEventFormat1(fields: HashedFields): string {
  return hash(
    'sha256',
    `${canonicalEventJson(fields.tenant_id, fields, canonicalJson(fields.data))}}`,
    'hex',
  );
}

/**
 * The canonical JSON of the hashed fields around the canonical JSON of `data`, without its
 * closing brace: its keys in RFC 8785 order, each string and number as `JSON.stringify` writes
 * it (so does RFC 8785). Equal to `canonicalJson(fields)`, which a property test checks, without
 * sorting the same keys on every append.
 */
function canonicalEventJson(tenantId: string, f: Omit<HashedFields, 'tenant_id'>, dataJson: string): string {
  const s = JSON.stringify;
  return `{"data":${dataJson},"event_id":${s(f.event_id)},"occurred_at":${s(f.occurred_at)},"prev_hash":${s(f.prev_hash)},"seq":${s(f.seq)},"session_id":${s(f.session_id)},"tenant_id":${s(tenantId)},"type":${s(f.type)}`;
}

/** One field an `erasure.completed` event names: the event's seq and the field's JSON Pointer. */
export interface ErasedPath {
  seq: number;
  path: string;
}

/** Where a pruned chain starts: a checkpoint's seq and hash (checkpoints.ts). */
export interface ChainAnchor {
  seq: number;
  hash: string;
}

/**
 * Recomputes a tenant's chain from its events (envelopes, with their values) in `seq` order, and
 * checks every kept value against its commitment. An erased value must be named by the
 * `erasure.completed` event its row points to, and that event must name exactly the fields
 * erased by it; a value missing without one is tampering. Stops at the first break and says
 * which event and why.
 *
 * With an `anchor` (a checkpoint whose signature the caller has verified), a chain whose prefix
 * through `anchor.seq` was pruned starts there: its first event must link to `anchor.hash`. A
 * chain that still holds that prefix, whole or in part (a prune's deletion cut short), must pass
 * through the anchor's hash at its seq.
 */
export async function verifyChain(
  tenantId: string,
  pages: AsyncIterable<SealedEvent[]>,
  options: { anchor?: ChainAnchor | undefined } = {},
): Promise<VerifyResult> {
  const anchor = options.anchor;
  let prev = GENESIS_HASH;
  let expectedSeq = 1;
  // Erasure events may name fields of pruned events: their values went with them.
  let firstSeq = 1;
  let started = false;
  let checked = 0;
  let verifiedFields = 0;
  const erased: ErasedPath[] = [];
  // Erased fields by the seq of the erasure event that must name them (it comes later).
  const claims = new Map<number, string[]>();
  const result = (ok: boolean, seq: number | null, problem: string | null): VerifyResult => ({
    ok,
    checked,
    head: prev === GENESIS_HASH ? null : prev,
    first_bad_seq: seq,
    problem,
    verified_fields: verifiedFields,
    erased_fields: erased.length,
    erased,
    ...(firstSeq > 1 ? { pruned_through: anchor?.seq ?? firstSeq - 1 } : {}),
  });
  for await (const page of pages) {
    for (const event of page) {
      const fail = (problem: string): VerifyResult => result(false, event.seq, problem);
      if (!started) {
        started = true;
        if (anchor !== undefined && event.seq > 1 && event.seq <= anchor.seq + 1) {
          // A prune whose deletion was cut short leaves events at or below the checkpoint: they
          // are checked as part of the chain, which must pass through the checkpoint's hash at
          // its seq (below), so the first one's link to what went before needs no other proof.
          prev = event.seq === anchor.seq + 1 ? anchor.hash : event.prev_hash;
          expectedSeq = event.seq;
          firstSeq = event.seq;
        } else if (event.seq !== 1) {
          return fail(
            anchor === undefined
              ? `events before seq ${event.seq} are missing and no checkpoint covers them`
              : `events before seq ${event.seq} are missing; the checkpoint is at seq ${anchor.seq}`,
          );
        }
      }
      if (event.seq !== expectedSeq) return fail(`expected seq ${expectedSeq}, found ${event.seq}`);
      if (event.prev_hash !== prev) return fail(`event ${event.event_id} does not link to the previous hash`);
      const { values: _values, decision_id: _decision, ...stored } = event;
      if (hashEvent({ tenant_id: tenantId, ...stored }) !== event.hash) {
        return fail(`event ${event.event_id} was altered: its hash does not match its content`);
      }
      const indexProblem = decisionIndexProblem(event);
      if (indexProblem !== null) return fail(indexProblem);
      if (anchor !== undefined && event.seq === anchor.seq && event.hash !== anchor.hash) {
        return fail(`event ${event.event_id} is not the event the checkpoint at seq ${anchor.seq} names`);
      }
      const problem = checkValues(event, claims, erased);
      if (problem !== null) return fail(problem);
      if (event.type === 'erasure.completed') {
        const named = erasureNames(event.data).filter((name) => Number(name.split(' ')[0]) >= firstSeq);
        const claimed = claims.get(event.seq) ?? [];
        claims.delete(event.seq);
        const a = [...named].sort();
        const b = claimed.sort();
        if (a.length !== b.length || a.some((x, i) => x !== b[i])) {
          return fail(`erasure event ${event.event_id} does not name exactly the fields erased by it`);
        }
      }
      verifiedFields += Object.keys(envelopeCommitments(event.data) ?? {}).length;
      prev = event.hash;
      expectedSeq += 1;
      checked += 1;
    }
  }
  verifiedFields -= erased.length;
  if (anchor !== undefined && expectedSeq <= anchor.seq) {
    // The first event missing: the checkpoint proves the chain reached its seq.
    return result(false, expectedSeq, `the chain ends before the checkpoint at seq ${anchor.seq}`);
  }
  for (const [by, fields] of claims) {
    const first = Number(fields[0]!.split(' ')[0]);
    return result(false, first, `values erased by seq ${by}, which is not an erasure event naming them`);
  }
  return result(true, null, null);
}

/**
 * Why an event's `decision_id` column disagrees with its hashed data, or null. A decision is
 * looked up by that column (`GET /v1/decisions/{id}`, an outcome report): pointed at another
 * event it would answer that event's verdict; cleared, it would hide the decision. A decision's
 * evaluation and outcome must carry the ID their data names; any other event, none or the same.
 */
function decisionIndexProblem(event: SealedEvent): string | null {
  const column = event.decision_id;
  if (column === undefined) return null;
  const named = event.data['decision_id'];
  if (
    column === null ? !(INDEXED_BY_DECISION.has(event.type) && typeof named === 'string') : column === named
  ) {
    return null;
  }
  return `event ${event.event_id}'s decision_id column does not name the decision its data names`;
}

/** Checks an event's kept values against its commitments; records erased ones. */
function checkValues(event: SealedEvent, claims: Map<number, string[]>, erased: ErasedPath[]): string | null {
  const commitments = envelopeCommitments(event.data);
  const values = event.values ?? null;
  if (commitments === undefined) {
    return values === null ? null : `event ${event.event_id} has values but no commitments`;
  }
  if (values === null) return `event ${event.event_id} lost its values without an erasure`;
  const pointers = Object.keys(commitments);
  if ('erased_by' in values) {
    if (!(values.erased_by > event.seq)) return `event ${event.event_id} names an impossible erasure`;
    let list = claims.get(values.erased_by);
    if (list === undefined) {
      list = [];
      claims.set(values.erased_by, list);
    }
    for (const path of pointers) {
      erased.push({ seq: event.seq, path });
      list.push(`${event.seq} ${path}`);
    }
    return null;
  }
  const fields = values.fields;
  if (Object.keys(fields).length !== pointers.length) {
    return `event ${event.event_id}'s values do not match its commitments`;
  }
  for (const pointer of pointers) {
    const field = fields[pointer];
    if (field === undefined || commitField(field.salt, field.value) !== commitments[pointer]) {
      return `event ${event.event_id}'s value at ${pointer} does not match its commitment`;
    }
  }
  return null;
}

/** The `seq path` pairs an `erasure.completed` event's data names. */
function erasureNames(data: Record<string, unknown>): string[] {
  const out: string[] = [];
  const list = data['erased'];
  if (!Array.isArray(list)) return out;
  for (const entry of list as Array<{ seq?: unknown; paths?: unknown }>) {
    if (!Array.isArray(entry?.paths)) continue;
    for (const path of entry.paths) out.push(`${String(entry.seq)} ${String(path)}`);
  }
  return out;
}
