/**
 * Versioned schema of the SQLite store. Each entry runs once, in order, inside a transaction;
 * `schema_migrations` records which ran. Never edit a shipped migration: add the next one.
 */

import { EVENT_VALUES_TABLE, HISTORY_FORMAT_2, SESSION_SUBJECTS_TABLE } from '../sql/historyUpgrade.js';
import { LEGAL_HOLDS_TABLE, RETENTION_SETTINGS_TABLE } from '../sql/legalHoldStatements.js';
import { CHECKPOINTS_TABLE, CONFLICT_VALUES_ERASED_BY } from '../sql/pruneStatements.js';
import { PENDING_DELIVERIES_BY_WEBHOOK } from '../sql/statements.js';

/** One migration; `upgradeHistory`: after its SQL, existing events are re-encoded (historyUpgrade.ts). */
export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
  upgradeHistory?: true;
}

export const SQLITE_MIGRATIONS: ReadonlyArray<SqliteMigration> = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE state_versions (
  tenant_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  key TEXT NOT NULL,
  version INTEGER NOT NULL,
  value TEXT NOT NULL,
  type TEXT NOT NULL,
  source TEXT NOT NULL,
  trust INTEGER NOT NULL,
  sensitivity TEXT NOT NULL,
  category TEXT NOT NULL,
  metadata TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (tenant_id, session_id, key, version)
) WITHOUT ROWID;

CREATE TABLE state_items (
  tenant_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  key TEXT NOT NULL,
  version INTEGER NOT NULL,
  status TEXT NOT NULL,
  PRIMARY KEY (tenant_id, session_id, key)
) WITHOUT ROWID;

CREATE TABLE conflicts (
  conflict_id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  key TEXT NOT NULL,
  status TEXT NOT NULL,
  body TEXT NOT NULL,
  resolution TEXT,
  created_at TEXT NOT NULL,
  resolved_at TEXT
);
CREATE INDEX conflicts_by_session ON conflicts (tenant_id, session_id, status, conflict_id);
CREATE INDEX conflicts_by_key ON conflicts (tenant_id, key, status);

CREATE TABLE events (
  tenant_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_id TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  session_id TEXT NOT NULL,
  decision_id TEXT,
  occurred_at TEXT NOT NULL,
  data TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  PRIMARY KEY (tenant_id, seq)
) WITHOUT ROWID;
CREATE INDEX events_by_session ON events (tenant_id, session_id, seq);
CREATE INDEX events_by_type ON events (tenant_id, type, seq);
CREATE INDEX events_by_session_type ON events (tenant_id, session_id, type, seq);
CREATE INDEX events_by_decision ON events (tenant_id, decision_id, seq) WHERE decision_id IS NOT NULL;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'history events are append-only: UPDATE refused'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'history events are append-only: DELETE refused'); END;

CREATE TABLE chain_heads (
  tenant_id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  hash TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE webhooks (
  id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  filter TEXT,
  description TEXT,
  status TEXT NOT NULL,
  secrets TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX webhooks_by_tenant ON webhooks (tenant_id, id);

CREATE TABLE deliveries (
  delivery_id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT,
  lease_until TEXT,
  last_status_code INTEGER,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  delivered_at TEXT
);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_by_webhook ON deliveries (tenant_id, webhook_id, delivery_id);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  name TEXT NOT NULL,
  prefix TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  scopes TEXT NOT NULL,
  sources TEXT NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, id);
`,
  },
  {
    version: 2,
    name: 'approvals and key labels',
    // One open (pending or approved) approval per digest: the unique index stops two
    // evaluations racing to open the same request, whatever the transaction order.
    sql: `
CREATE TABLE approvals (
  approval_id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  action TEXT NOT NULL,
  digest TEXT NOT NULL,
  status TEXT NOT NULL,
  body TEXT NOT NULL,
  uses INTEGER NOT NULL,
  uses_left INTEGER NOT NULL,
  requested_by TEXT,
  decision_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  decided_by TEXT,
  decided_at TEXT,
  comment TEXT,
  updated_at TEXT NOT NULL
);
CREATE INDEX approvals_by_digest ON approvals (tenant_id, digest, approval_id);
CREATE INDEX approvals_by_status ON approvals (tenant_id, status, approval_id);
CREATE INDEX approvals_by_session ON approvals (tenant_id, session_id, approval_id);
CREATE UNIQUE INDEX approvals_one_open ON approvals (tenant_id, digest) WHERE status IN ('pending', 'approved');

ALTER TABLE api_keys ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
`,
  },
  {
    version: 3,
    name: 'policy revisions',
    sql: `
CREATE TABLE policy_revisions (
  tenant_id TEXT NOT NULL,
  revision TEXT NOT NULL,
  source TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, revision)
) WITHOUT ROWID;
CREATE INDEX policy_revisions_by_seq ON policy_revisions (tenant_id, seq);

CREATE TABLE policy_active (
  tenant_id TEXT PRIMARY KEY,
  revision TEXT NOT NULL,
  base_revision TEXT,
  activated_by TEXT NOT NULL,
  activated_at TEXT NOT NULL,
  seq INTEGER NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    version: 4,
    name: 'gate evaluations skip the session-and-type index',
    // Every decision wrote six B-trees. Gate evaluations are most of a log, and a session's
    // evaluations are found by walking the session's index (events_by_session) newest first and
    // skipping its other events; every other type keeps its session-and-type index.
    sql: `
DROP INDEX events_by_session_type;
CREATE INDEX events_by_session_type ON events (tenant_id, session_id, type, seq) WHERE type <> 'gate_evaluation';
`,
  },
  {
    // The trace an outbox row was queued in, so its delivery attempts join that trace from any
    // instance and after a restart (it is not part of the hash-chained event).
    version: 5,
    name: 'delivery_traceparent',
    sql: 'ALTER TABLE deliveries ADD COLUMN traceparent TEXT;',
  },
  {
    version: 6,
    name: 'gate evaluations skip the type index',
    // As migration 4 for the session-and-type index: one B-tree fewer per decision (on SQLite
    // 8.4 → 7.2 WAL pages per evaluation). A query for gate evaluations without a session walks
    // the tenant's events newest first; they are most of a log, so it reads few others.
    sql: `
DROP INDEX events_by_type;
CREATE INDEX events_by_type ON events (tenant_id, type, seq) WHERE type <> 'gate_evaluation';
`,
  },
  {
    version: 7,
    name: 'chain heads read off the events',
    // One writer at a time holds SQLite's write lock, so a tenant's head is its newest event by
    // primary key; a heads row rewritten on every commit was one WAL page per commit. The view
    // keeps `chain_heads` in dumps (and `listTenants`) as PostgreSQL has it; loads skip it.
    sql: `
DROP TABLE chain_heads;
CREATE VIEW chain_heads AS SELECT tenant_id, max(seq) AS seq, hash FROM events GROUP BY tenant_id;
`,
  },
  {
    version: 8,
    name: 'every requester of an approval',
    // Self-approval is refused to every key that asked for a pending approval, not only the
    // first: a JSON array of key IDs (`in-process` for an in-process call), the first one being
    // `requested_by`, which is all an older row knows.
    sql: `
ALTER TABLE approvals ADD COLUMN requesters TEXT NOT NULL DEFAULT '[]';
UPDATE approvals SET requesters = '["' || COALESCE(requested_by, 'in-process') || '"]';
`,
  },
  {
    version: 9,
    name: HISTORY_FORMAT_2,
    // The values and salts of caller-supplied fields, beside the chain; erasure deletes them. No
    // index but the key: an erasure finds a session's events through events_by_session.
    sql:
      EVENT_VALUES_TABLE({ text: 'TEXT', integer: 'INTEGER', suffix: ' WITHOUT ROWID' }) +
      SESSION_SUBJECTS_TABLE({ text: 'TEXT', suffix: ' WITHOUT ROWID' }),
    upgradeHistory: true,
  },
  {
    version: 10,
    name: 'signed checkpoints; pruning behind them',
    // An event may be deleted only when a checkpoint of its tenant at or beyond its seq is
    // stored: pruning a prefix behind a signed checkpoint is the one way out of the chain.
    sql: `${CHECKPOINTS_TABLE({ text: 'TEXT', integer: 'INTEGER', suffix: ' WITHOUT ROWID' })}
DROP TRIGGER events_no_delete;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.tenant_id = OLD.tenant_id AND c.seq >= OLD.seq)
BEGIN SELECT RAISE(ABORT, 'history events are append-only: DELETE refused (no checkpoint covers the event)'); END;
`,
  },
  {
    version: 11,
    name: 'legal holds',
    // What a hold covers is neither erased nor pruned unless overridden (recorded as an event).
    sql: LEGAL_HOLDS_TABLE({ text: 'TEXT' }),
  },
  {
    version: 12,
    name: 'retention set by the API',
    // PUT /v1/retention: takes the place of the policy's retention: for the tenant.
    sql: RETENTION_SETTINGS_TABLE({ text: 'TEXT' }),
  },
  {
    version: 13,
    name: 'conflict values erased by retention',
    sql: CONFLICT_VALUES_ERASED_BY({ integer: 'INTEGER' }),
  },
  {
    version: 14,
    name: 'deliveries claimed fairly between tenants',
    sql: PENDING_DELIVERIES_BY_WEBHOOK,
  },
];
