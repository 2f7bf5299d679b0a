/**
 * Row ↔ record mapping shared by the SQL stores (SQLite and PostgreSQL keep the same columns:
 * text for JSON and ISO timestamps, integers for versions and counters).
 */
import {
  type Approval,
  type Conflict,
  type Delivery,
  eventValuesOf,
  type HistoryEvent,
  IN_PROCESS_CALLER,
  openEventData,
  type SealedEvent,
  type StateItem,
  type StoredApiKey,
  type StoredEvent,
  type StoredWebhook,
} from '../../src/index.js';

/** A row as a driver returns it. */
export type Row = Record<string, unknown>;

export const str = (v: unknown): string => v as string;
/** Numbers, including PostgreSQL's int8 handed back as text. */
export const num = (v: unknown): number => Number(v);
export const strOrNull = (v: unknown): string | null => (v == null ? null : String(v));
export const numOrNull = (v: unknown): number | null => (v == null ? null : Number(v));
export const json = <T>(v: unknown): T => JSON.parse(v as string) as T;
// Most items carry no metadata: skip the parser for the stored empty object.
export const metadataOf = (v: unknown): Record<string, unknown> => (v === '{}' ? {} : json(v));

/** A `state_versions` row (joined with its item's `status` when it is the current version). */
export function rowToItem(r: Row, status?: StateItem['status']): StateItem {
  return {
    session_id: str(r['session_id']),
    key: str(r['key']),
    value: str(r['value']),
    type: str(r['type']),
    source: str(r['source']),
    trust: num(r['trust']),
    sensitivity: r['sensitivity'] as StateItem['sensitivity'],
    category: str(r['category']),
    version: num(r['version']),
    status: status ?? (r['status'] as StateItem['status']),
    metadata: metadataOf(r['metadata']),
    updated_at: str(r['updated_at']),
  };
}

/**
 * Items from the positional rows of `listSessionItems` (adapters/sql/statements.ts), in its
 * column order; fresh objects on every call.
 */
export function itemsFromRows(sessionId: string, rows: readonly unknown[][]): StateItem[] {
  const items: StateItem[] = new Array(rows.length);
  for (let n = 0; n < rows.length; n += 1) {
    const r = rows[n]!;
    items[n] = {
      session_id: sessionId,
      key: r[0] as string,
      value: r[1] as string,
      type: r[2] as string,
      source: r[3] as string,
      trust: num(r[4]),
      sensitivity: r[5] as StateItem['sensitivity'],
      category: r[6] as string,
      version: num(r[7]),
      status: r[8] as StateItem['status'],
      metadata: metadataOf(r[9]),
      updated_at: r[10] as string,
    };
  }
  return items;
}

/** A `conflicts` row. */
export function rowToConflict(r: Row): Conflict {
  const body = json<Pick<Conflict, 'current' | 'proposed'>>(r['body']);
  return {
    conflict_id: str(r['conflict_id']),
    session_id: str(r['session_id']),
    key: str(r['key']),
    status: r['status'] as Conflict['status'],
    current: body.current,
    proposed: body.proposed,
    resolution: r['resolution'] as Conflict['resolution'],
    created_at: str(r['created_at']),
    resolved_at: strOrNull(r['resolved_at']),
  };
}

/** An `events` row joined with its `event_values` row, as readers see it: values in place. */
export function rowToEvent(r: Row): StoredEvent {
  return {
    event_id: str(r['event_id']),
    seq: num(r['seq']),
    type: r['type'] as HistoryEvent['type'],
    session_id: str(r['session_id']),
    occurred_at: str(r['occurred_at']),
    data: openEventData(json(r['data']), valuesOfRow(r)),
    prev_hash: str(r['prev_hash']),
    hash: str(r['hash']),
    decision_id: strOrNull(r['decision_id']),
  };
}

/** An `events` row's hashed fields as stored: the envelope, no values put back. */
export function rowToEnvelope(r: Row): HistoryEvent {
  return {
    event_id: str(r['event_id']),
    seq: num(r['seq']),
    type: r['type'] as HistoryEvent['type'],
    session_id: str(r['session_id']),
    occurred_at: str(r['occurred_at']),
    data: json(r['data']),
    prev_hash: str(r['prev_hash']),
    hash: str(r['hash']),
  };
}

/**
 * The same row as verification reads it: the hashed envelope, the values beside it and the
 * `decision_id` index column, which verification checks against the envelope.
 */
export function rowToSealedEvent(r: Row): SealedEvent {
  return { ...rowToEnvelope(r), values: valuesOfRow(r), decision_id: strOrNull(r['decision_id']) };
}

const valuesOfRow = (r: Row) => eventValuesOf(strOrNull(r['value_fields']), numOrNull(r['erased_by']));

/** The public event, without the index column. */
export function withoutDecision(e: StoredEvent): HistoryEvent {
  const { decision_id: _d, ...event } = e;
  return event;
}

/** A `webhooks` row. */
export function rowToWebhook(r: Row): StoredWebhook {
  return {
    id: str(r['id']),
    url: str(r['url']),
    events: json(r['events']),
    filter: r['filter'] == null ? null : json(r['filter']),
    description: strOrNull(r['description']),
    status: r['status'] as StoredWebhook['status'],
    secrets: json(r['secrets']),
    created_at: str(r['created_at']),
    updated_at: str(r['updated_at']),
  };
}

/** A `deliveries` row. */
export function rowToDelivery(r: Row): Delivery {
  return {
    delivery_id: str(r['delivery_id']),
    webhook_id: str(r['webhook_id']),
    event_id: str(r['event_id']),
    event_type: str(r['event_type']),
    status: r['status'] as Delivery['status'],
    attempts: num(r['attempts']),
    next_attempt_at: strOrNull(r['next_attempt_at']),
    last_status_code: numOrNull(r['last_status_code']),
    last_error: strOrNull(r['last_error']),
    created_at: str(r['created_at']),
    updated_at: str(r['updated_at']),
    delivered_at: strOrNull(r['delivered_at']),
  };
}

/** An `api_keys` row. */
export function rowToKey(r: Row): StoredApiKey {
  return {
    id: str(r['id']),
    tenant_id: str(r['tenant_id']),
    name: str(r['name']),
    prefix: str(r['prefix']),
    hash: str(r['hash']),
    scopes: json(r['scopes']),
    sources: json(r['sources']),
    // Keys made before labels existed (or loaded from an older dump) have the column's default.
    labels: r['labels'] == null ? [] : json(r['labels']),
    created_at: str(r['created_at']),
    revoked_at: strOrNull(r['revoked_at']),
  };
}

/** The column values of an API key, in `api_keys` column order. */
export function apiKeyValues(k: StoredApiKey): unknown[] {
  return [
    k.id,
    k.tenant_id,
    k.name,
    k.prefix,
    k.hash,
    JSON.stringify(k.scopes),
    JSON.stringify(k.sources),
    k.created_at,
    k.revoked_at,
    JSON.stringify(k.labels),
  ];
}

/**
 * The callers that asked for an approval. A row loaded from a dump made before the column
 * existed has none: its one requester is then `requested_by`, as the migration fills it in.
 */
function requestersOf(r: Row): string[] {
  const listed = r['requesters'] == null ? [] : json<string[]>(r['requesters']);
  return listed.length > 0 ? listed : [strOrNull(r['requested_by']) ?? IN_PROCESS_CALLER];
}

/** An `approvals` row (what is not a column lives in `body`). */
export function rowToApproval(r: Row): Approval {
  const body = json<
    Pick<
      Approval,
      'params' | 'state_versions' | 'policy' | 'rules' | 'reason' | 'approvers' | 'allow_self_approval'
    >
  >(r['body']);
  return {
    id: str(r['approval_id']),
    status: r['status'] as Approval['status'],
    session_id: str(r['session_id']),
    action: str(r['action']),
    params: body.params,
    state_versions: body.state_versions,
    policy: body.policy,
    rules: body.rules,
    reason: body.reason,
    digest: str(r['digest']),
    approvers: body.approvers,
    allow_self_approval: body.allow_self_approval,
    uses: num(r['uses']),
    uses_left: num(r['uses_left']),
    requested_by: strOrNull(r['requested_by']),
    requesters: requestersOf(r),
    decision_id: str(r['decision_id']),
    created_at: str(r['created_at']),
    expires_at: str(r['expires_at']),
    decided_by: strOrNull(r['decided_by']),
    decided_at: strOrNull(r['decided_at']),
    comment: strOrNull(r['comment']),
    updated_at: str(r['updated_at']),
  };
}
