/**
 * Every SQL statement of the stores, written once for SQLite and PostgreSQL: `?` placeholders
 * (each dialect numbers them as its driver wants) and, where the databases differ, a hook of the
 * {@link SqlDialect}. A new table or query is added here and both stores have it.
 */
import type {
  Approval,
  ApprovalListQuery,
  ApprovalTransition,
  Conflict,
  ConflictQuery,
  EventQuery,
  NewDelivery,
  SealedFields,
  StateItem,
  StoredEvent,
  StoredWebhook,
} from '../../src/index.js';
import type { SqlDialect, Statement } from './dialect.js';

const ITEM_JOIN =
  'JOIN state_versions v ON v.tenant_id = i.tenant_id AND v.session_id = i.session_id AND v.key = i.key AND v.version = i.version';

// Result columns are spelled out wherever a statement runs often: PostgreSQL prepares only those
// (postgresStore.ts), and reads only what the row mappers (rows.ts) use.

/** A version's columns as `rowToItem` reads them, but `status`. */
export const VERSION_COLUMNS =
  'v.session_id, v.key, v.value, v.type, v.source, v.trust, v.sensitivity, v.category, v.version, v.metadata, v.updated_at';
export const CONFLICT_COLUMNS =
  'conflict_id, session_id, key, status, body, resolution, created_at, resolved_at';
/**
 * An event with its `event_values` row (history format 2: the caller-supplied fields beside the
 * chain); `value_fields` and `erased_by` are both NULL where the event has none.
 */
const EVENT_COLUMNS =
  'e.event_id, e.seq, e.type, e.session_id, e.decision_id, e.occurred_at, e.data, e.prev_hash, e.hash, v.fields AS value_fields, v.erased_by';
const JOIN_VALUES = 'LEFT JOIN event_values v ON v.tenant_id = e.tenant_id AND v.seq = e.seq';
const WEBHOOK_COLUMNS = 'id, url, events, filter, description, status, secrets, created_at, updated_at';

/** The current version of an item, with its status. */
export const getCurrentItem = `SELECT ${VERSION_COLUMNS}, i.status FROM state_items i ${ITEM_JOIN}
  WHERE i.tenant_id = ? AND i.session_id = ? AND i.key = ?`;

/** {@link getCurrentItem}, holding the item until the transaction ends. */
export const lockCurrentItem = (dialect: SqlDialect): string => `${getCurrentItem}${dialect.lockCurrentItem}`;

// A version row with its item's status when it is the current version.
const ITEM_VERSION_SELECT = `SELECT ${VERSION_COLUMNS}, CASE WHEN i.version = v.version THEN i.status ELSE 'superseded' END AS status
  FROM state_versions v
  LEFT JOIN state_items i ON i.tenant_id = v.tenant_id AND i.session_id = v.session_id AND i.key = v.key`;

export const getItemVersion = `${ITEM_VERSION_SELECT}
  WHERE v.tenant_id = ? AND v.session_id = ? AND v.key = ? AND v.version = ?`;

export const listItemVersions = `${ITEM_VERSION_SELECT}
  WHERE v.tenant_id = ? AND v.session_id = ? AND v.key = ? ORDER BY v.version`;

/**
 * The current items of a session, read as positional rows in this column order (see
 * `itemsFromRows`): it runs on every evaluation, so no row objects are built and read back, and
 * the tenant and session strings are not copied out for each item.
 */
export const SESSION_ITEM_COLUMNS =
  'v.key, v.value, v.type, v.source, v.trust, v.sensitivity, v.category, v.version, i.status, v.metadata, v.updated_at';
export const listSessionItems = `SELECT ${SESSION_ITEM_COLUMNS}
  FROM state_items i ${ITEM_JOIN}
  WHERE i.tenant_id = ? AND i.session_id = ? ORDER BY i.key`;

/** The FROM and WHERE of {@link listSessionItemsByKey}: `i` the items, `v` their current versions. */
export const SESSION_ITEMS_BY_KEY = `FROM state_items i CROSS JOIN LATERAL (
    SELECT x.key, x.value, x.type, x.source, x.trust, x.sensitivity, x.category, x.version, x.metadata, x.updated_at
    FROM state_versions x
    WHERE x.tenant_id = i.tenant_id AND x.session_id = i.session_id AND x.key = i.key AND x.version = i.version
    LIMIT 1) v
  WHERE i.tenant_id = ? AND i.session_id = ?`;

/**
 * {@link listSessionItems} with each item's version found by its full primary key, one lookup per
 * item in key order (for PostgreSQL, see `SqlDialect.listSessionItems`). PostgreSQL flattens a
 * plain join and, without table statistics (a new schema), plans it as a nested loop that
 * scans the whole session's versions for every item: quadratic in the session's size. `LIMIT 1`
 * keeps the subquery apart.
 */
export const listSessionItemsByKey = `SELECT ${SESSION_ITEM_COLUMNS} ${SESSION_ITEMS_BY_KEY} ORDER BY i.key`;

/** Writes a new version of an item. */
export function insertItemVersion(tenantId: string, item: StateItem): Statement {
  return {
    sql: `INSERT INTO state_versions (tenant_id, session_id, key, version, value, type, source, trust, sensitivity, category, metadata, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [
      tenantId,
      item.session_id,
      item.key,
      item.version,
      item.value,
      item.type,
      item.source,
      item.trust,
      item.sensitivity,
      item.category,
      JSON.stringify(item.metadata),
      item.updated_at,
    ],
  };
}

/** Makes `item.version` the current one. */
export function upsertCurrentItem(tenantId: string, item: StateItem): Statement {
  return {
    sql: `INSERT INTO state_items (tenant_id, session_id, key, version, status) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant_id, session_id, key) DO UPDATE SET version = excluded.version, status = excluded.status`,
    args: [tenantId, item.session_id, item.key, item.version, currentStatus(item)],
  };
}

/** The status an item's new current version gets. */
export const currentStatus = (item: StateItem): 'conflicted' | 'current' =>
  item.status === 'conflicted' ? 'conflicted' : 'current';

export const setItemStatus =
  'UPDATE state_items SET status = ? WHERE tenant_id = ? AND session_id = ? AND key = ?';

export const getConflict = `SELECT ${CONFLICT_COLUMNS} FROM conflicts WHERE tenant_id = ? AND conflict_id = ?`;

/** Most conflicts one {@link listConflicts} returns. */
export const LIST_CONFLICTS_LIMIT = 500;

/** Conflicts, newest first, at most {@link LIST_CONFLICTS_LIMIT}. */
export function listConflicts(tenantId: string, query: ConflictQuery): Statement {
  const where = new Conditions('tenant_id = ?', tenantId)
    .add(query.session_id, 'session_id = ?')
    .add(query.key, 'key = ?')
    .add(query.status, 'status = ?');
  return {
    sql: `SELECT ${CONFLICT_COLUMNS} FROM conflicts WHERE ${where.sql} ORDER BY conflict_id DESC LIMIT ${LIST_CONFLICTS_LIMIT}`,
    args: where.args,
  };
}

export function insertConflict(tenantId: string, c: Conflict): Statement {
  return {
    sql: `INSERT INTO conflicts (conflict_id, tenant_id, session_id, key, status, body, resolution, created_at, resolved_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [
      c.conflict_id,
      tenantId,
      c.session_id,
      c.key,
      c.status,
      JSON.stringify({ current: c.current, proposed: c.proposed }),
      c.resolution,
      c.created_at,
      c.resolved_at,
    ],
  };
}

export const updateConflict =
  'UPDATE conflicts SET status = ?, resolution = ?, resolved_at = ? WHERE tenant_id = ? AND conflict_id = ?';

/** The indexed event query; the index is named where the dialect needs it (see `eventsIndex`). */
export function queryEvents(dialect: SqlDialect, tenantId: string, query: EventQuery): Statement {
  // The type indexes hold every type but gate_evaluation (migrations 4 and 6): a query for
  // another type names that condition literally, so both planners may use the partial index; a
  // query for gate evaluations walks the tenant's (or the session's) events newest first.
  const otherType = query.type !== undefined && query.type !== 'gate_evaluation';
  const where = new Conditions('e.tenant_id = ?', tenantId)
    .add(query.session_id, 'e.session_id = ?')
    .add(query.type, otherType ? `e.type = ? AND e.type <> 'gate_evaluation'` : 'e.type = ?')
    .add(query.decision_id, 'e.decision_id = ?')
    .add(query.after_seq, query.order === 'asc' ? 'e.seq > ?' : 'e.seq < ?');
  // Measured on SQLite without the hint: 4 ms for a decision's events at 10,000 events, growing
  // with the log.
  const index =
    query.decision_id !== undefined
      ? 'events_by_decision'
      : query.session_id !== undefined
        ? otherType
          ? 'events_by_session_type'
          : 'events_by_session'
        : otherType
          ? 'events_by_type'
          : undefined;
  return {
    sql: `SELECT ${EVENT_COLUMNS} FROM events e${index ? dialect.eventsIndex(index) : ''} ${JOIN_VALUES} WHERE ${where.sql} ORDER BY e.seq ${query.order === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`,
    args: [...where.args, query.limit],
  };
}

export const getEventById = `SELECT ${EVENT_COLUMNS} FROM events e ${JOIN_VALUES} WHERE e.event_id = ?`;

/** A page of a tenant's events in seq order, after a seq. */
export const scanEvents = `SELECT ${EVENT_COLUMNS} FROM events e ${JOIN_VALUES} WHERE e.tenant_id = ? AND e.seq > ? ORDER BY e.seq LIMIT ?`;

const INSERT_EVENT_VALUES = 'INSERT INTO event_values (tenant_id, seq, fields, erased_by) VALUES ';
/** Built once, as `INSERT_EVENT` is: an append's values row. */
const INSERT_EVENT_VALUES_ONE = `${INSERT_EVENT_VALUES}(?, ?, ?, ?)`;

/** The `event_values` rows of events that have caller-supplied fields (none: undefined). */
export function insertEventValues(
  tenantId: string,
  rows: ReadonlyArray<{ seq: number; fields: SealedFields | null | undefined }>,
): Statement | undefined {
  const args: unknown[] = [];
  for (const r of rows) if (r.fields) args.push(tenantId, r.seq, JSON.stringify(r.fields), null);
  if (args.length === 0) return undefined;
  return {
    sql: args.length === 4 ? INSERT_EVENT_VALUES_ONE : INSERT_EVENT_VALUES + tuples(4, args.length / 4),
    args,
  };
}

/** Events of a session whose values are kept, in seq order (see `eventsIndex`). */
export function listSessionValues(dialect: SqlDialect): string {
  return `SELECT e.seq, e.type, v.fields FROM events e${dialect.eventsIndex('events_by_session')}
    JOIN event_values v ON v.tenant_id = e.tenant_id AND v.seq = e.seq
    WHERE e.tenant_id = ? AND e.session_id = ? AND v.fields IS NOT NULL ORDER BY e.seq`;
}

/**
 * An erasure's writes, in order: the values and salts of the session's events (the row keeps the
 * seq of the erasure event), its state values and metadata, its items' status. Its conflicts and
 * approvals are rewritten one by one (`eraseConflict`, `eraseApprovalBody`).
 */
export function eraseSession(
  tenantId: string,
  sessionId: string,
  options: { erasedBy: number; at: string },
): Statement[] {
  return [
    {
      sql: `UPDATE event_values SET fields = NULL, erased_by = ? WHERE tenant_id = ? AND fields IS NOT NULL
        AND seq IN (SELECT seq FROM events WHERE tenant_id = ? AND session_id = ?)`,
      args: [options.erasedBy, tenantId, tenantId, sessionId],
    },
    {
      sql: `UPDATE state_versions SET value = '', metadata = '{}' WHERE tenant_id = ? AND session_id = ?`,
      args: [tenantId, sessionId],
    },
    {
      sql: `UPDATE state_items SET status = 'erased' WHERE tenant_id = ? AND session_id = ?`,
      args: [tenantId, sessionId],
    },
  ];
}

/**
 * Which of `count` sessions were erased at or after a time. The session-and-type index holds
 * every type but gate_evaluation (migration 4): the query says so, or SQLite does not use it.
 */
export const erasedSessionsSince = (count: number): string =>
  `SELECT DISTINCT session_id FROM events WHERE tenant_id = ? AND type = 'erasure.completed'
  AND type <> 'gate_evaluation' AND session_id IN (${marks(count)})
  AND occurred_at >= ?`;

/** A session's subject tag, replacing the one it had. */
export const tagSession = `INSERT INTO session_subjects (tenant_id, session_id, subject, tagged_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (tenant_id, session_id) DO UPDATE SET subject = excluded.subject, tagged_at = excluded.tagged_at`;
export const sessionSubject = 'SELECT subject FROM session_subjects WHERE tenant_id = ? AND session_id = ?';
export const listSubjectSessions =
  'SELECT session_id FROM session_subjects WHERE tenant_id = ? AND subject = ? ORDER BY session_id';
export const deleteSubject = 'DELETE FROM session_subjects WHERE tenant_id = ? AND subject = ?';

/** Pending deliveries of a session's events (found through the pending ones: few). */
export const listSessionPendingDeliveries = `SELECT delivery_id FROM deliveries WHERE status = 'pending' AND tenant_id = ?
  AND event_id IN (SELECT event_id FROM events WHERE tenant_id = ? AND session_id = ?) ORDER BY delivery_id`;

/** The bodies an erasure rewrites: a session's conflicts and approvals. */
export const sessionConflictBodies =
  'SELECT conflict_id, body FROM conflicts WHERE tenant_id = ? AND session_id = ?';
export const sessionApprovalBodies =
  'SELECT approval_id, body FROM approvals WHERE tenant_id = ? AND session_id = ?';
/** The bodies retention rewrites: these conflicts' and approvals'. */
export const conflictBodies = (count: number): string =>
  `SELECT conflict_id, body FROM conflicts WHERE tenant_id = ? AND conflict_id IN (${marks(count)})`;
export const approvalBodies = (count: number): string =>
  `SELECT approval_id, body FROM approvals WHERE tenant_id = ? AND approval_id IN (${marks(count)})`;
/** A conflict's erasure (of its session, or by retention): its values, and an open one resolved `erased`. */
export const eraseConflict = `UPDATE conflicts SET body = ?, values_erased_by = ?, status = 'resolved',
  resolution = CASE WHEN status = 'open' THEN 'erased' ELSE resolution END, resolved_at = coalesce(resolved_at, ?)
  WHERE tenant_id = ? AND conflict_id = ?`;
/** The digest is an unsalted hash of the params: replaced, so an erased approval matches nothing again. */
export const eraseApprovalBody = `UPDATE approvals SET body = ?, comment = NULL, digest = 'erased:' || approval_id
  WHERE tenant_id = ? AND approval_id = ?`;

const INSERT_EVENTS =
  'INSERT INTO events (tenant_id, seq, event_id, type, session_id, decision_id, occurred_at, data, prev_hash, hash) VALUES ';
const eventValues = (tenantId: string, e: StoredEvent): unknown[] => [
  tenantId,
  e.seq,
  e.event_id,
  e.type,
  e.session_id,
  e.decision_id,
  e.occurred_at,
  JSON.stringify(e.data),
  e.prev_hash,
  e.hash,
];

// Built once: the SQLite store finds its prepared statement by this text on every append.
const INSERT_EVENT = INSERT_EVENTS + tuples(10, 1);

export function insertEvent(tenantId: string, e: StoredEvent): Statement {
  return { sql: INSERT_EVENT, args: eventValues(tenantId, e) };
}

/** Several events of one tenant in one statement. */
export function insertEvents(tenantId: string, events: readonly StoredEvent[]): Statement {
  return {
    sql: INSERT_EVENTS + tuples(10, events.length),
    args: events.flatMap((e) => eventValues(tenantId, e)),
  };
}

export function moveChainHead(tenantId: string, e: Pick<StoredEvent, 'seq' | 'hash'>): Statement {
  return {
    sql: `INSERT INTO chain_heads (tenant_id, seq, hash) VALUES (?, ?, ?)
      ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
    args: [tenantId, e.seq, e.hash],
  };
}

/** Tenants with events (`seq > 0`: a PostgreSQL head may hold a placeholder before the first). */
export const listTenants = 'SELECT tenant_id FROM chain_heads WHERE seq > 0 ORDER BY tenant_id';

export const getWebhook = `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE tenant_id = ? AND id = ?`;
export const listWebhooks = `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE tenant_id = ? ORDER BY id`;

export function insertWebhook(tenantId: string, w: StoredWebhook): Statement {
  return {
    sql: `INSERT INTO webhooks (id, tenant_id, url, events, filter, description, status, secrets, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [
      w.id,
      tenantId,
      w.url,
      JSON.stringify(w.events),
      w.filter == null ? null : JSON.stringify(w.filter),
      w.description,
      w.status,
      JSON.stringify(w.secrets),
      w.created_at,
      w.updated_at,
    ],
  };
}

/** Changes the given fields; the others keep their value. */
export function updateWebhook(
  tenantId: string,
  webhookId: string,
  patch: Partial<Pick<StoredWebhook, 'status' | 'secrets' | 'updated_at'>>,
): Statement {
  return {
    sql: `UPDATE webhooks SET status = COALESCE(?, status), secrets = COALESCE(?, secrets), updated_at = COALESCE(?, updated_at)
      WHERE tenant_id = ? AND id = ?`,
    args: [
      patch.status ?? null,
      patch.secrets === undefined ? null : JSON.stringify(patch.secrets),
      patch.updated_at ?? null,
      tenantId,
      webhookId,
    ],
  };
}

export const disableWebhook = `UPDATE webhooks SET status = 'disabled', updated_at = ? WHERE tenant_id = ? AND id = ?`;

/** A webhook's pending deliveries go with it; the delete of the webhook comes last (its count). */
export function deleteWebhook(tenantId: string, webhookId: string): Statement[] {
  return [
    {
      sql: `DELETE FROM deliveries WHERE tenant_id = ? AND webhook_id = ? AND status = 'pending'`,
      args: [tenantId, webhookId],
    },
    { sql: 'DELETE FROM webhooks WHERE tenant_id = ? AND id = ?', args: [tenantId, webhookId] },
  ];
}

/** Webhooks and events by id, for claimed deliveries. */
export const webhooksByIds = (count: number): string =>
  `SELECT * FROM webhooks WHERE id IN (${marks(count)})`;
/** The columns of {@link eventsByIds}, in order: a claimed delivery's event as read (see rowsToClaimedEvents). */
export const eventsByIds = (count: number): string =>
  `SELECT e.tenant_id, e.event_id, e.seq, e.type, e.session_id, e.occurred_at, e.data, e.prev_hash, e.hash, v.fields, v.erased_by
    FROM events e ${JOIN_VALUES} WHERE e.event_id IN (${marks(count)})`;

export const getDelivery = 'SELECT * FROM deliveries WHERE tenant_id = ? AND delivery_id = ?';

/** Deliveries of one webhook, newest first. */
export function listDeliveries(
  tenantId: string,
  webhookId: string,
  query: { status?: string | undefined; limit: number; before_id?: string | undefined },
): Statement {
  const where = new Conditions('tenant_id = ?', tenantId)
    .add(webhookId, 'webhook_id = ?')
    .add(query.status, 'status = ?')
    .add(query.before_id, 'delivery_id < ?');
  return {
    sql: `SELECT * FROM deliveries WHERE ${where.sql} ORDER BY delivery_id DESC LIMIT ?`,
    args: [...where.args, query.limit],
  };
}

const INSERT_DELIVERIES =
  'INSERT INTO deliveries (delivery_id, tenant_id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at, updated_at, traceparent) VALUES ';
const DELIVERY_TUPLE = "(?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)";
const INSERT_DELIVERY = INSERT_DELIVERIES + DELIVERY_TUPLE;
const deliveryValues = (tenantId: string, d: NewDelivery): unknown[] => [
  d.delivery_id,
  tenantId,
  d.webhook_id,
  d.event_id,
  d.event_type,
  d.next_attempt_at,
  d.created_at,
  d.created_at,
  d.traceparent ?? null,
];

/** A new outbox row: pending, no attempt yet. */
export function insertDelivery(tenantId: string, d: NewDelivery): Statement {
  return { sql: INSERT_DELIVERY, args: deliveryValues(tenantId, d) };
}

/** Several outbox rows of one tenant in one statement. */
export function insertDeliveries(tenantId: string, rows: readonly NewDelivery[]): Statement {
  return {
    sql: INSERT_DELIVERIES + Array(rows.length).fill(DELIVERY_TUPLE).join(', '),
    args: rows.flatMap((d) => deliveryValues(tenantId, d)),
  };
}

/**
 * Each tenant's pending deliveries by webhook, due first: a claim walks the tenants with pending
 * deliveries through it and reads each webhook's first due ones (fairShare chooses among them),
 * so a webhook's backlog is never read past. Partial: delivered and failed rows stay out.
 */
export const PENDING_DELIVERIES_BY_WEBHOOK = `CREATE INDEX deliveries_pending_by_webhook
  ON deliveries (tenant_id, webhook_id, next_attempt_at) WHERE status = 'pending';`;

export const resetDelivery = `UPDATE deliveries SET status = 'pending', next_attempt_at = ?, lease_until = NULL, updated_at = ?, delivered_at = NULL
  WHERE tenant_id = ? AND delivery_id = ?`;

export const recordDeliveryAttempt = `UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?, last_error = ?,
    delivered_at = ?, updated_at = ?, lease_until = NULL
  WHERE tenant_id = ? AND delivery_id = ?`;

/**
 * {@link recordDeliveryAttempt} only while the delivery is pending under the lease its attempt was
 * claimed with: an attempt that outlived its lease (claimed again since) or that a redeliver reset
 * must not write over what happened since.
 */
export const recordLeasedDeliveryAttempt = `${recordDeliveryAttempt} AND status = 'pending' AND lease_until = ?`;

/**
 * The earliest time a claim can take something: a pending delivery of an active webhook is
 * claimable at its `next_attempt_at`, or at its lease's end while leased. In due order, nothing
 * after the first unleased one can be claimable sooner, so only the leased ones before it (those
 * that senders hold) are read beside it, through the `deliveries_due` index.
 */
export const nextDueAt = `SELECT min(CASE WHEN d.lease_until > d.next_attempt_at THEN d.lease_until ELSE d.next_attempt_at END) AS t
  FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.tenant_id = d.tenant_id
  WHERE d.status = 'pending' AND w.status = 'active' AND d.next_attempt_at <= coalesce((
    SELECT f.next_attempt_at FROM deliveries f JOIN webhooks fw ON fw.id = f.webhook_id AND fw.tenant_id = f.tenant_id
    WHERE f.status = 'pending' AND fw.status = 'active' AND (f.lease_until IS NULL OR f.lease_until <= f.next_attempt_at)
    ORDER BY f.next_attempt_at LIMIT 1), '9999')`;

/** Only while the lease is still the one this sender was given, so a newer claim keeps its own. */
export const releaseDelivery = `UPDATE deliveries SET lease_until = NULL
  WHERE tenant_id = ? AND delivery_id = ? AND status = 'pending' AND lease_until = ?`;

export const getApproval = 'SELECT * FROM approvals WHERE tenant_id = ? AND approval_id = ?';

/** Approvals, newest first (IDs sort by creation), after `before_id` when given. */
export function listApprovals(tenantId: string, query: ApprovalListQuery): Statement {
  const where = new Conditions('tenant_id = ?', tenantId)
    .add(query.status, 'status = ?')
    .add(query.session_id, 'session_id = ?')
    .add(query.before_id, 'approval_id < ?');
  return {
    sql: `SELECT * FROM approvals WHERE ${where.sql} ORDER BY approval_id DESC LIMIT ?`,
    args: [...where.args, query.limit],
  };
}

/**
 * The approval that decides an evaluation of this digest: the open (pending or approved) one when
 * there is one, else the denial that ends last, else the newest. Not simply the newest by ID: an
 * ID sorts by the clock of the instance that made it, so with two instances' clocks apart (or a
 * clock stepped back across a restart) a used approval made ahead sorts after the open one made
 * behind, which was then never found (each evaluation failed on the one-open-per-digest index).
 */
export const latestApprovalByDigest = `SELECT * FROM approvals WHERE tenant_id = ? AND digest = ?
  ORDER BY CASE WHEN status IN ('pending', 'approved') THEN 0 WHEN status = 'denied' THEN 1 ELSE 2 END,
    CASE WHEN status = 'denied' THEN expires_at END DESC, approval_id DESC
  LIMIT 1`;

export const listDueApprovals = `SELECT * FROM approvals
  WHERE tenant_id = ? AND status IN ('pending', 'approved') AND expires_at <= ? ORDER BY approval_id LIMIT ?`;

export function insertApproval(tenantId: string, a: Approval): Statement {
  return {
    sql: `INSERT INTO approvals (approval_id, tenant_id, session_id, action, digest, status, body, uses, uses_left,
        requested_by, requesters, decision_id, created_at, expires_at, decided_by, decided_at, comment, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [
      a.id,
      tenantId,
      a.session_id,
      a.action,
      a.digest,
      a.status,
      JSON.stringify({
        params: a.params,
        state_versions: a.state_versions,
        policy: a.policy,
        rules: a.rules,
        reason: a.reason,
        approvers: a.approvers,
        allow_self_approval: a.allow_self_approval,
      }),
      a.uses,
      a.uses_left,
      a.requested_by,
      JSON.stringify(a.requesters),
      a.decision_id,
      a.created_at,
      a.expires_at,
      a.decided_by,
      a.decided_at,
      a.comment,
      a.updated_at,
    ],
  };
}

export const getApprovalRequesters =
  'SELECT requesters FROM approvals WHERE tenant_id = ? AND approval_id = ?';

/**
 * Replaces the requesters only while they are still the list that was read (compare-and-set):
 * the JSON text is written by this code alone, so equal lists are equal text on both databases.
 */
export const setApprovalRequesters =
  'UPDATE approvals SET requesters = ? WHERE tenant_id = ? AND approval_id = ? AND requesters = ?';

/** A status change, applied only while the status is one of `change.from` (it reports 0 otherwise). */
export function transitionApproval(
  tenantId: string,
  approvalId: string,
  change: ApprovalTransition,
): Statement {
  return {
    sql: `UPDATE approvals SET status = ?, updated_at = ?, decided_by = COALESCE(?, decided_by),
        decided_at = COALESCE(?, decided_at), comment = COALESCE(?, comment)
      WHERE tenant_id = ? AND approval_id = ? AND status IN (${marks(change.from.length)})`,
    args: [
      change.to,
      change.updated_at,
      change.decided_by ?? null,
      change.decided_at ?? null,
      change.comment ?? null,
      tenantId,
      approvalId,
      ...change.from,
    ],
  };
}

/**
 * Takes one use in one statement: the WHERE re-checks status, uses and expiry on the row it
 * updates (PostgreSQL re-evaluates it after waiting for a concurrent writer's row lock), so the
 * last use is taken once.
 */
export const consumeApproval = `UPDATE approvals
  SET uses_left = uses_left - 1, status = CASE WHEN uses_left = 1 THEN 'used' ELSE 'approved' END, updated_at = ?
  WHERE tenant_id = ? AND approval_id = ? AND status = 'approved' AND uses_left > 0 AND expires_at > ?
  RETURNING uses_left, status`;

const API_KEY_COLUMNS = 'id, tenant_id, name, prefix, hash, scopes, sources, created_at, revoked_at, labels';
export const insertApiKey = `INSERT INTO api_keys (${API_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
/** Inserts only while there is no key at all (the bootstrap admin key). */
export const insertFirstApiKey = `INSERT INTO api_keys (${API_KEY_COLUMNS})
  SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM api_keys)`;
export const findApiKeyByHash = 'SELECT * FROM api_keys WHERE hash = ?';
export const listAllApiKeys = 'SELECT * FROM api_keys ORDER BY id';
export const listTenantApiKeys = 'SELECT * FROM api_keys WHERE tenant_id = ? ORDER BY id';
export const revokeApiKey = 'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL';
export const countApiKeys = 'SELECT count(*) AS n FROM api_keys';

/** Rows that make a store "used": a dump loads only where this is 0. */
export const countUsedRows = 'SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM api_keys) AS n';

/** One page of a table in primary-key order, after the key values `after` (a dump's cursor). */
export function dumpPage(
  table: string,
  keys: readonly string[],
  after: readonly unknown[] | undefined,
  pageSize: number,
): Statement {
  const order = keys.join(', ');
  const where = after ? `WHERE (${order}) > (${marks(keys.length)})` : '';
  return {
    sql: `SELECT * FROM ${table} ${where} ORDER BY ${order} LIMIT ?`,
    args: [...(after ?? []), pageSize],
  };
}

/** Inserts `rows` rows of `columns` (names already checked against the schema, then quoted). */
export function insertRows(table: string, columns: readonly string[], rows: number): string {
  return `INSERT INTO ${quoteIdent(table)} (${columns.map(quoteIdent).join(', ')}) VALUES ${tuples(columns.length, rows)}`;
}

/** An SQL identifier, quoted (the same in both dialects). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `count` comma-separated placeholders. */
export function marks(count: number): string {
  return Array(count).fill('?').join(', ');
}

/** `rows` tuples of `columns` placeholders each, for a multi-row VALUES. */
function tuples(columns: number, rows: number): string {
  return Array(rows)
    .fill(`(${marks(columns)})`)
    .join(', ');
}

/** AND-ed conditions, each with one `?`, added only for a defined value. */
class Conditions {
  readonly #parts: string[];
  readonly args: unknown[];
  constructor(first: string, value: unknown) {
    this.#parts = [first];
    this.args = [value];
  }
  add(value: unknown, condition: string): this {
    if (value !== undefined) {
      this.#parts.push(condition);
      this.args.push(value);
    }
    return this;
  }
  get sql(): string {
    return this.#parts.join(' AND ');
  }
}
