/**
 * The upgrade of a format 1 history (the whole data hashed) to format 2 (caller-supplied fields
 * as salted commitments, their values beside the chain): run by the schema migration that adds
 * `event_values`, inside its transaction, tenant by tenant. Each tenant's format 1 chain is
 * verified as it is read — a break stops the migration and nothing changes — and every event is
 * re-encoded and re-hashed; a `history.upgraded` event then names the format 1 head, so the old
 * chain stays provable from a copy kept outside (a backup, a receiver's log).
 */
import {
  createSaltSource,
  GatehouseError,
  GENESIS_HASH,
  HISTORY_FORMAT,
  hashEventFormat1,
  hashTenantEvent,
  type RandomBytes,
  type SaltSource,
  type StoredEvent,
  sealEventData,
} from '../../src/index.js';
import type { Statement } from './dialect.js';
import { type Row, rowToEnvelope, str } from './rows.js';
import * as sql from './statements.js';

/** The migration's name, as `schema_migrations` records it. */
export const HISTORY_FORMAT_2 = 'history format 2: salted commitments beside the chain';

/** `event_values`, as both migration files create it. */
export const EVENT_VALUES_TABLE = (types: { text: string; integer: string; suffix: string }) => `
CREATE TABLE event_values (
  tenant_id ${types.text} NOT NULL,
  seq ${types.integer} NOT NULL,
  fields ${types.text},
  erased_by ${types.integer},
  PRIMARY KEY (tenant_id, seq)
)${types.suffix};`;

/** Subject tags of sessions (for erasure by subject), as both migration files create them. */
export const SESSION_SUBJECTS_TABLE = (types: { text: string; suffix: string }) => `
CREATE TABLE session_subjects (
  tenant_id ${types.text} NOT NULL,
  session_id ${types.text} NOT NULL,
  subject ${types.text} NOT NULL,
  tagged_at ${types.text} NOT NULL,
  PRIMARY KEY (tenant_id, session_id)
)${types.suffix};
CREATE INDEX session_subjects_by_subject ON session_subjects (tenant_id, subject, session_id);`;

/** Tenants with events. */
export const UPGRADE_TENANTS = 'SELECT DISTINCT tenant_id FROM events ORDER BY tenant_id';

/** A page of a tenant's format 1 events. */
export const UPGRADE_PAGE =
  'SELECT event_id, seq, type, session_id, decision_id, occurred_at, data, prev_hash, hash FROM events WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?';

/** A tenant's first event, to tell a format 1 chain (a dump of the previous version) from a format 2 one. */
export const UPGRADE_FIRST_EVENT =
  'SELECT event_id, seq, type, session_id, decision_id, occurred_at, data, prev_hash, hash FROM events WHERE tenant_id = ? ORDER BY seq LIMIT 1';

/** Events re-encoded per page. */
export const UPGRADE_PAGE_SIZE = 500;

const REWRITE = 'UPDATE events SET data = ?, prev_hash = ?, hash = ? WHERE tenant_id = ? AND seq = ?';

/** Re-encodes one tenant's chain, event by event in seq order. */
export class TenantUpgrade {
  readonly #tenantId: string;
  readonly #salts: SaltSource;
  #oldPrev = GENESIS_HASH;
  #newPrev = GENESIS_HASH;
  #seq = 0;

  constructor(tenantId: string, randomBytes: RandomBytes) {
    this.#tenantId = tenantId;
    this.#salts = createSaltSource(randomBytes);
  }

  /** True when `row` (a row of {@link UPGRADE_FIRST_EVENT}) is hashed in format 1. */
  static isFormat1(tenantId: string, row: Row): boolean {
    return hashEventFormat1({ tenant_id: tenantId, ...rowToEnvelope(row) }) === str(row['hash']);
  }

  /**
   * The statements that re-encode the next event (a row of {@link UPGRADE_PAGE}).
   * @throws {GatehouseError} `internal` when the format 1 chain does not verify there.
   */
  next(row: Row): Statement[] {
    const event = rowToEnvelope(row);
    const broken =
      event.seq !== this.#seq + 1 ||
      event.prev_hash !== this.#oldPrev ||
      hashEventFormat1({ tenant_id: this.#tenantId, ...event }) !== event.hash;
    if (broken) {
      throw new GatehouseError(
        'internal',
        `History of tenant '${this.#tenantId}' does not verify at seq ${event.seq}: it is not upgraded to format ${HISTORY_FORMAT} (run \`gatehouse verify\` on the previous version and restore a backup).`,
      );
    }
    const sealed = sealEventData(event.type, event.data, this.#salts);
    const hash = hashTenantEvent(this.#tenantId, {
      ...event,
      data: sealed.envelope,
      prev_hash: this.#newPrev,
    });
    const out: Statement[] = [
      {
        sql: REWRITE,
        args: [JSON.stringify(sealed.envelope), this.#newPrev, hash, this.#tenantId, event.seq],
      },
    ];
    const values = sql.insertEventValues(this.#tenantId, [{ seq: event.seq, fields: sealed.fields }]);
    if (values) out.push(values);
    this.#oldPrev = event.hash;
    this.#newPrev = hash;
    this.#seq = event.seq;
    return out;
  }

  /** The seq of the last event read. */
  get seq(): number {
    return this.#seq;
  }

  /**
   * The `history.upgraded` event closing the upgrade (none for a tenant without events), and the
   * statements that append it.
   */
  finish(options: { eventId: string; occurredAt: string; chainHeadRow: boolean }): Statement[] {
    if (this.#seq === 0) return [];
    const base = {
      event_id: options.eventId,
      seq: this.#seq + 1,
      type: 'history.upgraded' as const,
      session_id: '',
      occurred_at: options.occurredAt,
      data: {
        format: HISTORY_FORMAT,
        previous_format: 1,
        previous_head: { seq: this.#seq, hash: this.#oldPrev },
        events: this.#seq,
      },
      prev_hash: this.#newPrev,
    };
    const event: StoredEvent = { ...base, hash: hashTenantEvent(this.#tenantId, base), decision_id: null };
    return [
      sql.insertEvent(this.#tenantId, event),
      ...(options.chainHeadRow ? [sql.moveChainHead(this.#tenantId, event)] : []),
    ];
  }
}
