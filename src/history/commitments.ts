/**
 * History format 2: what a caller wrote never enters the hash chain. An event's hashed envelope
 * keeps what is not personal content (IDs, seq, type, time, verdicts, rule names, keys and
 * versions…); each field whose content came from a caller — a state value, params, a comment, a
 * reason rendered from them — is replaced there by a salted commitment, and the value with its
 * salt is kept beside the chain (`event_values`), where erasure can delete it.
 *
 * Commitment of a field: SHA-256 over the UTF-8 of its salt — 16 random bytes as 32 lower-case
 * hex digits, new for every field of every event, so one value in two events gives two
 * commitments, and a low-entropy value cannot be found by trying them all once the salt is gone —
 * followed by the value's canonical JSON (RFC 8785, {@link canonicalJson}). Fields are named by
 * JSON Pointer (RFC 6901) into the event's data: `/params`, `/reasons/0/message`.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../canonicalJson.js';
import type { RandomBytes } from '../runtime.js';

/** The history format new events are written in (hashed into every event, see hashChain.ts). */
export const HISTORY_FORMAT = 2;

/** Salt length of a commitment, in bytes (twice as many hex digits). */
export const SALT_BYTES = 16;

/** Returns a new salt: {@link SALT_BYTES} random bytes as lower-case hex. */
export type SaltSource = () => string;

/** Salts handed out per draw from the injected random source. */
const SALTS_PER_DRAW = 256;

/**
 * Salts from `randomBytes`, drawn 4 KiB at a time: one call per field cost a tenth of an
 * evaluation (as a ULID's randomness did, runtime.ts).
 */
export function createSaltSource(randomBytes: RandomBytes): SaltSource {
  const width = SALT_BYTES * 2;
  let pool = '';
  let at = 0;
  return () => {
    if (at === pool.length) {
      pool = Buffer.from(randomBytes(SALT_BYTES * SALTS_PER_DRAW)).toString('hex');
      at = 0;
    }
    const salt = pool.slice(at, at + width);
    at += width;
    return salt;
  };
}

/**
 * The fields of each event type whose content a caller supplied, as paths into its data (`*`:
 * every element of an array). A path absent from an event's data is skipped. Every other field
 * of every type is envelope: Gatehouse's own IDs, names, numbers and codes.
 */
export const CALLER_CONTENT: Readonly<Record<string, ReadonlyArray<readonly string[]>>> = {
  state_change: [['value'], ['metadata']],
  state_conflict: [
    ['current', 'value'],
    ['proposed', 'value'],
  ],
  conflict_resolved: [['note']],
  gate_evaluation: [
    ['params'],
    ['context'],
    ['reason'],
    ['reasons', '*', 'message'],
    ['shadow', '*', 'message'],
  ],
  action_outcome: [['detail']],
  // The digest is an unsalted SHA-256 over the params (approvalDigest.ts): kept, it would let a
  // low-entropy parameter be found by trying every value after the params are erased.
  'approval.requested': [['params'], ['reason'], ['digest']],
  'approval.approved': [['comment']],
  'approval.denied': [['comment']],
};

/**
 * The parts of `data.principal` (who caused an event, `principalRecord.ts`) that can name a
 * person: an IdP token's subject and the delegated actor. A key ID, an issuer and a client ID are
 * Gatehouse's or the IdP's own names and stay in the envelope. They apply to every event type.
 */
const PRINCIPAL_CONTENT: ReadonlyArray<readonly string[]> = [
  ['principal', 'sub'],
  ['principal', 'act'],
];

/** {@link CALLER_CONTENT} of each type with {@link PRINCIPAL_CONTENT}, built once. */
const SEALED_PATHS = new Map<string, ReadonlyArray<readonly string[]>>(
  Object.entries(CALLER_CONTENT).map(([type, paths]) => [type, [...paths, ...PRINCIPAL_CONTENT]]),
);

/** A caller-supplied field as kept beside the chain: its salt (32 hex digits) and its value. */
export interface SealedField {
  salt: string;
  value: unknown;
}

/** An event's caller-supplied fields by JSON Pointer. */
export type SealedFields = Record<string, SealedField>;

/**
 * What is kept beside the chain for one event: its fields, or — once erased — the seq of the
 * `erasure.completed` event that erased them; null when nothing is kept (no row).
 */
export type EventValues = { fields: SealedFields } | { erased_by: number } | null;

/** How a reader shows a field whose value was erased; `by` is the seq of the erasure event. */
export interface ErasedField {
  erased: true;
  /** The `erasure.completed` event's seq; null where the value is missing without one (tampering). */
  by: number | null;
}

/** An event's data split into its hashed envelope and its caller-supplied fields. */
export interface SealedData {
  /** The data with each caller field set to null and `commitments` (`{pointer: sha256 hex}`) added. */
  envelope: Record<string, unknown>;
  /** The removed fields with their salts; null when the event has none. */
  fields: SealedFields | null;
}

type Json = Record<string, unknown> | unknown[];

/** The SHA-256 (hex) commitment to `value` under `salt` (hex digits, as stored). */
export function commitField(salt: string, value: unknown): string {
  return hash('sha256', salt + canonicalJson(value), 'hex');
}

/** RFC 6901 JSON Pointer of path segments. */
export function toPointer(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) out += `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`;
  return out;
}

/** The segments of an RFC 6901 JSON Pointer. */
export function fromPointer(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/**
 * Splits an event's data into its envelope and its caller fields, one fresh salt per field from
 * `salts`. `data` is not changed: the envelope copies the objects on the way to each field.
 * @example sealEventData('action_outcome', { outcome: 'failed', detail: 'card declined' }, createSaltSource(randomBytes))
 * // { envelope: { outcome: 'failed', detail: null, commitments: { '/detail': '5f…' } },
 * //   fields: { '/detail': { salt: '9a…', value: 'card declined' } } }
 */
export function sealEventData(type: string, data: Record<string, unknown>, salts: SaltSource): SealedData {
  const patterns = SEALED_PATHS.get(type) ?? PRINCIPAL_CONTENT;
  const found: Found[] = [];
  for (const pattern of patterns) collect(data, pattern, 0, [], '', found);
  if (found.length === 0) return { envelope: data, fields: null };
  const envelope: Record<string, unknown> = { ...data };
  // Copies of the objects below the top on the way to a field, made once each (most fields are
  // top-level: `/params`, `/reason`).
  let copies: Map<Json, Json> | undefined;
  const copyOf = (o: Json): Json => {
    copies ??= new Map();
    let c = copies.get(o);
    if (c === undefined) {
      c = Array.isArray(o) ? o.slice() : { ...o };
      copies.set(o, c);
    }
    return c;
  };
  const commitments: Record<string, string> = {};
  const fields: SealedFields = {};
  for (let n = 0; n < found.length; n += 1) {
    const { path, pointer, value } = found[n]!;
    let original: Json = data;
    let copy: Json = envelope;
    for (let i = 0; i < path.length - 1; i += 1) {
      const next = (original as Record<string | number, unknown>)[path[i]!] as Json;
      const nextCopy = copyOf(next);
      (copy as Record<string | number, unknown>)[path[i]!] = nextCopy;
      original = next;
      copy = nextCopy;
    }
    // Left in place as null, so a reader that puts the value back keeps the keys' order.
    (copy as Record<string | number, unknown>)[path[path.length - 1]!] = null;
    const salt = salts();
    commitments[pointer] = commitField(salt, value);
    fields[pointer] = { salt, value };
  }
  envelope['commitments'] = commitments;
  return { envelope, fields };
}

/** A caller field found in an event's data: where it is (segments and JSON Pointer) and its value. */
interface Found {
  path: (string | number)[];
  pointer: string;
  value: unknown;
}

/** One JSON Pointer reference token (RFC 6901 §4): `~` and `/` escaped. */
const pointerToken = (segment: string): string =>
  segment.includes('~') || segment.includes('/')
    ? segment.replaceAll('~', '~0').replaceAll('/', '~1')
    : segment;

function collect(
  node: unknown,
  pattern: readonly string[],
  at: number,
  path: (string | number)[],
  pointer: string,
  out: Found[],
): void {
  if (at === pattern.length) {
    if (node !== undefined) out.push({ path, pointer, value: node });
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const segment = pattern[at]!;
  if (segment === '*') {
    if (!Array.isArray(node)) return;
    for (let i = 0; i < node.length; i += 1) {
      collect(node[i], pattern, at + 1, [...path, i], `${pointer}/${i}`, out);
    }
    return;
  }
  if (Array.isArray(node) || !Object.hasOwn(node, segment)) return;
  collect(
    (node as Record<string, unknown>)[segment],
    pattern,
    at + 1,
    [...path, segment],
    `${pointer}/${pointerToken(segment)}`,
    out,
  );
}

/** The commitments of an envelope (`{pointer: hex}`), or undefined for an event without any. */
export function envelopeCommitments(envelope: Record<string, unknown>): Record<string, string> | undefined {
  const c = envelope['commitments'];
  return c !== null && typeof c === 'object' && !Array.isArray(c) ? (c as Record<string, string>) : undefined;
}

/**
 * An event's data as readers show it: the envelope with each caller field back in place, or an
 * {@link ErasedField} marker where its value was erased (or is missing). Never throws on a
 * missing or erased value. `envelope` is a fresh object of the caller's (parsed JSON): it is
 * changed in place.
 */
export function openEventData(
  envelope: Record<string, unknown>,
  values: EventValues,
): Record<string, unknown> {
  const commitments = envelopeCommitments(envelope);
  if (commitments === undefined) return envelope;
  delete envelope['commitments'];
  const fields = values !== null && 'fields' in values ? values.fields : undefined;
  const by = values !== null && 'erased_by' in values ? values.erased_by : null;
  for (const pointer of Object.keys(commitments)) {
    const field = fields?.[pointer];
    setAt(envelope, fromPointer(pointer), field !== undefined ? field.value : erasedMarker(by));
  }
  return envelope;
}

/** The marker readers show for an erased field. */
export function erasedMarker(by: number | null): ErasedField {
  return { erased: true, by };
}

/** True for an {@link ErasedField} marker. */
export function isErased(value: unknown): value is ErasedField {
  return (
    value !== null &&
    typeof value === 'object' &&
    (value as Record<string, unknown>)['erased'] === true &&
    Object.keys(value).length === 2 &&
    'by' in value
  );
}

/**
 * {@link openEventData} over stored JSON texts, for readers that pass the data on as text (the
 * webhook outbox): the text itself when the event has no commitments.
 */
export function openEventDataJson(
  dataJson: string,
  fieldsJson: string | null,
  erasedBy: number | null,
): string {
  if (fieldsJson === null && erasedBy === null && !dataJson.includes('"commitments":')) return dataJson;
  return JSON.stringify(openEventData(JSON.parse(dataJson), eventValuesOf(fieldsJson, erasedBy)));
}

/** The {@link EventValues} of an `event_values` row's columns (both null: no row). */
export function eventValuesOf(fieldsJson: string | null, erasedBy: number | null): EventValues {
  if (fieldsJson !== null) return { fields: JSON.parse(fieldsJson) as SealedFields };
  if (erasedBy !== null) return { erased_by: erasedBy };
  return null;
}

function setAt(root: Record<string, unknown>, segments: readonly string[], value: unknown): void {
  let node: unknown = root;
  for (let i = 0; i < segments.length - 1; i += 1) {
    if (node === null || typeof node !== 'object') return;
    node = (node as Record<string, unknown>)[segments[i]!];
  }
  if (node !== null && typeof node === 'object') (node as Record<string, unknown>)[segments.at(-1)!] = value;
}
