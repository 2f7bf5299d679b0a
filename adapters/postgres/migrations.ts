/**
 * Versioned schema of the PostgreSQL store: the same tables and indexes as the SQLite store, in
 * PostgreSQL types. Each entry runs once, in order, inside the migration transaction;
 * `schema_migrations` records which ran. Never edit a shipped migration: add the next one.
 *
 * Choices that keep the two stores interchangeable:
 * - JSON columns are `text`, not `jsonb`: `jsonb` reorders keys and drops duplicates, and the
 *   event `data` must round-trip byte for byte through `JSON.stringify`/`JSON.parse` for the hash
 *   chain to verify.
 * - Timestamps are ISO-8601 `text` (`toISOString()` form), compared as strings like on SQLite.
 * - Every text column is `COLLATE "C"`: byte order, as SQLite sorts, so `ORDER BY id` and the
 *   keyset cursors (`delivery_id < $n`) agree on both stores whatever the database's locale.
 * - `events` refuses UPDATE, DELETE and TRUNCATE with statement-level triggers, so even a
 *   statement that matches no row is refused.
 */

import { EVENT_VALUES_TABLE, HISTORY_FORMAT_2, SESSION_SUBJECTS_TABLE } from '../sql/historyUpgrade.js';
import { LEGAL_HOLDS_TABLE, RETENTION_SETTINGS_TABLE } from '../sql/legalHoldStatements.js';
import { CHECKPOINTS_TABLE, CONFLICT_VALUES_ERASED_BY } from '../sql/pruneStatements.js';
import { PENDING_DELIVERIES_BY_WEBHOOK } from '../sql/statements.js';

/** One migration; `upgradeHistory`: after its SQL, existing events are re-encoded (historyUpgrade.ts). */
export interface PostgresMigration {
  version: number;
  name: string;
  sql: string;
  upgradeHistory?: true;
}

export const POSTGRES_MIGRATIONS: ReadonlyArray<PostgresMigration> = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE state_versions (
  tenant_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  value text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  source text COLLATE "C" NOT NULL,
  trust integer NOT NULL,
  sensitivity text COLLATE "C" NOT NULL,
  category text COLLATE "C" NOT NULL,
  metadata text COLLATE "C" NOT NULL,
  updated_at text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, session_id, key, version)
);

CREATE TABLE state_items (
  tenant_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  status text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, session_id, key)
);

CREATE TABLE conflicts (
  conflict_id text COLLATE "C" PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  body text COLLATE "C" NOT NULL,
  resolution text COLLATE "C",
  created_at text COLLATE "C" NOT NULL,
  resolved_at text COLLATE "C"
);
CREATE INDEX conflicts_by_session ON conflicts (tenant_id, session_id, status, conflict_id);
CREATE INDEX conflicts_by_key ON conflicts (tenant_id, key, status);

CREATE TABLE events (
  tenant_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  event_id text COLLATE "C" NOT NULL UNIQUE,
  type text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  decision_id text COLLATE "C",
  occurred_at text COLLATE "C" NOT NULL,
  data text COLLATE "C" NOT NULL,
  prev_hash text COLLATE "C" NOT NULL,
  hash text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, seq)
);
CREATE INDEX events_by_session ON events (tenant_id, session_id, seq);
CREATE INDEX events_by_type ON events (tenant_id, type, seq);
CREATE INDEX events_by_session_type ON events (tenant_id, session_id, type, seq);
CREATE INDEX events_by_decision ON events (tenant_id, decision_id, seq) WHERE decision_id IS NOT NULL;

CREATE FUNCTION gatehouse_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'history events are append-only: % refused', TG_OP;
END;
$$;
CREATE TRIGGER events_no_update_or_delete BEFORE UPDATE OR DELETE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_events_append_only();

CREATE TABLE chain_heads (
  tenant_id text COLLATE "C" PRIMARY KEY,
  seq bigint NOT NULL,
  hash text COLLATE "C" NOT NULL
);

CREATE TABLE webhooks (
  id text COLLATE "C" PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  url text COLLATE "C" NOT NULL,
  events text COLLATE "C" NOT NULL,
  filter text COLLATE "C",
  description text COLLATE "C",
  status text COLLATE "C" NOT NULL,
  secrets text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  updated_at text COLLATE "C" NOT NULL
);
CREATE INDEX webhooks_by_tenant ON webhooks (tenant_id, id);

CREATE TABLE deliveries (
  delivery_id text COLLATE "C" PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  webhook_id text COLLATE "C" NOT NULL,
  event_id text COLLATE "C" NOT NULL,
  event_type text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at text COLLATE "C",
  lease_until text COLLATE "C",
  last_status_code integer,
  last_error text COLLATE "C",
  created_at text COLLATE "C" NOT NULL,
  updated_at text COLLATE "C" NOT NULL,
  delivered_at text COLLATE "C"
);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_by_webhook ON deliveries (tenant_id, webhook_id, delivery_id);

CREATE TABLE api_keys (
  id text COLLATE "C" PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  prefix text COLLATE "C" NOT NULL,
  hash text COLLATE "C" NOT NULL UNIQUE,
  scopes text COLLATE "C" NOT NULL,
  sources text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  revoked_at text COLLATE "C"
);
CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, id);
`,
  },
  {
    version: 2,
    name: 'approvals and key labels',
    // One open (pending or approved) approval per digest: the unique index stops two
    // instances racing to open the same request, whatever the transaction order.
    sql: `
CREATE TABLE approvals (
  approval_id text COLLATE "C" PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  action text COLLATE "C" NOT NULL,
  digest text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  body text COLLATE "C" NOT NULL,
  uses integer NOT NULL,
  uses_left integer NOT NULL,
  requested_by text COLLATE "C",
  decision_id text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  expires_at text COLLATE "C" NOT NULL,
  decided_by text COLLATE "C",
  decided_at text COLLATE "C",
  comment text COLLATE "C",
  updated_at text COLLATE "C" NOT NULL
);
CREATE INDEX approvals_by_digest ON approvals (tenant_id, digest, approval_id);
CREATE INDEX approvals_by_status ON approvals (tenant_id, status, approval_id);
CREATE INDEX approvals_by_session ON approvals (tenant_id, session_id, approval_id);
CREATE UNIQUE INDEX approvals_one_open ON approvals (tenant_id, digest) WHERE status IN ('pending', 'approved');

ALTER TABLE api_keys ADD COLUMN labels text COLLATE "C" NOT NULL DEFAULT '[]';
`,
  },
  {
    version: 3,
    name: 'policy revisions',
    sql: `
CREATE TABLE policy_revisions (
  tenant_id text COLLATE "C" NOT NULL,
  revision text COLLATE "C" NOT NULL,
  source text COLLATE "C" NOT NULL,
  created_by text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  PRIMARY KEY (tenant_id, revision)
);
CREATE INDEX policy_revisions_by_seq ON policy_revisions (tenant_id, seq);

CREATE TABLE policy_active (
  tenant_id text COLLATE "C" PRIMARY KEY,
  revision text COLLATE "C" NOT NULL,
  base_revision text COLLATE "C",
  activated_by text COLLATE "C" NOT NULL,
  activated_at text COLLATE "C" NOT NULL,
  seq bigint NOT NULL
);
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
    sql: 'ALTER TABLE deliveries ADD COLUMN traceparent text COLLATE "C";',
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
    name: 'every requester of an approval',
    // As SQLite's migration 8: every key that asked for a pending approval, as a JSON array in
    // text (the first one is `requested_by`, all an older row knows).
    sql: `
ALTER TABLE approvals ADD COLUMN requesters text COLLATE "C" NOT NULL DEFAULT '[]';
UPDATE approvals SET requesters = '["' || COALESCE(requested_by, 'in-process') || '"]';
`,
  },
  {
    version: 8,
    name: HISTORY_FORMAT_2,
    sql:
      EVENT_VALUES_TABLE({ text: 'text COLLATE "C"', integer: 'bigint', suffix: '' }) +
      SESSION_SUBJECTS_TABLE({ text: 'text COLLATE "C"', suffix: '' }),
    upgradeHistory: true,
  },
  {
    version: 9,
    name: 'signed checkpoints; pruning behind them',
    // As SQLite's migration 10. UPDATE stays refused by statement (the trigger keeps its name:
    // the history upgrade lifts it by name); DELETE is checked per row, since whether a
    // checkpoint covers an event depends on the event.
    sql: `${CHECKPOINTS_TABLE({ text: 'text COLLATE "C"', integer: 'bigint', suffix: '' })}
DROP TRIGGER events_no_update_or_delete ON events;
CREATE TRIGGER events_no_update_or_delete BEFORE UPDATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_events_append_only();
CREATE FUNCTION gatehouse_events_prune_behind_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.tenant_id = OLD.tenant_id AND c.seq >= OLD.seq) THEN
    RAISE EXCEPTION 'history events are append-only: DELETE refused (no checkpoint covers the event)';
  END IF;
  RETURN OLD;
END;
$$;
CREATE TRIGGER events_delete_behind_checkpoint BEFORE DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION gatehouse_events_prune_behind_checkpoint();
`,
  },
  {
    version: 10,
    name: 'legal holds',
    // What a hold covers is neither erased nor pruned unless overridden (recorded as an event).
    sql: LEGAL_HOLDS_TABLE({ text: 'text COLLATE "C"' }),
  },
  {
    version: 11,
    name: 'retention set by the API',
    // PUT /v1/retention: takes the place of the policy's retention: for the tenant.
    sql: RETENTION_SETTINGS_TABLE({ text: 'text COLLATE "C"' }),
  },
  {
    version: 12,
    name: 'conflict values erased by retention',
    sql: CONFLICT_VALUES_ERASED_BY({ integer: 'bigint' }),
  },
  {
    version: 13,
    name: 'deliveries claimed fairly between tenants',
    sql: PENDING_DELIVERIES_BY_WEBHOOK,
  },
];
