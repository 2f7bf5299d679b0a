// Builds (or reuses) a SQLite Gatehouse database holding N history events with a valid hash
// chain, fast: the schema comes from the store itself (its migrations), the events are built
// with the core's `hashEvent` and written with raw INSERTs in large transactions.
// Files live in bench/results/ (git-ignored), named by event count and a version that changes
// with this generator and with the store's schema, and are reused by later runs.

import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monotonicFactory } from 'ulid';
import { isTable, load, openBareSqlite, RESULTS_DIR } from './env.js';

/** Bump when the generated content changes. */
const GENERATOR_VERSION = 1;
/** Events per session: every session fills a page of 50 (and then some). */
export const EVENTS_PER_SESSION = 100;
const BATCH = 20_000;

/** Deterministic pseudo-random numbers (mulberry32). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ACTIONS = [
  'payments.transfer',
  'email.send',
  'files.delete',
  'db.query',
  'deploy.production',
  'search.web',
];
const VERDICTS = ['Allow', 'Allow', 'Allow', 'Warn', 'Block'];
const KEYS = ['budget.limit', 'user.email', 'task.goal', 'deploy.approved', 'quota.bytes', 'user.locale'];

/** Event data shaped like the core's (a decision with params; a state change; a conflict; an outcome). */
function eventData(type, r, ids, at, sessionId, lastDecision) {
  switch (type) {
    case 'gate_evaluation': {
      const action = ACTIONS[Math.floor(r() * ACTIONS.length)];
      const verdict = VERDICTS[Math.floor(r() * VERDICTS.length)];
      const decisionId = ids('dec');
      const reasons =
        verdict === 'Allow'
          ? []
          : [
              {
                rule: 'over_budget',
                verdict,
                message: `Transfer of ${Math.floor(r() * 9000)} exceeds the budget of 5000.`,
                keys: ['budget.limit'],
              },
            ];
      return {
        decision_id: decisionId,
        data: {
          decision_id: decisionId,
          verdict,
          allowed: verdict !== 'Block',
          reason: verdict === 'Allow' ? 'Allowed: no rule objected.' : reasons[0].message,
          reasons,
          shadow: [],
          session_id: sessionId,
          action,
          policy: { revision: 'b3f1c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90' },
          state_versions: { 'budget.limit': 1 + Math.floor(r() * 5) },
          evaluated_at: at,
          params: { amount: Math.floor(r() * 10000), currency: 'EUR', to: 'DE89370400440532013000' },
          context: {},
        },
      };
    }
    case 'state_change': {
      const key = KEYS[Math.floor(r() * KEYS.length)];
      const version = 1 + Math.floor(r() * 8);
      return {
        decision_id: null,
        data: {
          key,
          version,
          previous_version: version === 1 ? null : version - 1,
          value: String(Math.floor(r() * 100000)),
          type: 'fact',
          source: 'user_input',
          trust: 3,
          sensitivity: 'public',
          category: key.split('.')[0],
          metadata: {},
        },
      };
    }
    case 'state_conflict':
      return {
        decision_id: null,
        data: {
          conflict_id: ids('cfl'),
          key: 'budget.limit',
          current: { value: '5000', type: 'fact', source: 'user_input', trust: 3, version: 2 },
          proposed: { value: '999999', type: 'fact', source: 'tool_output', trust: 2 },
        },
      };
    default:
      return {
        decision_id: lastDecision ?? ids('dec'),
        data: {
          decision_id: lastDecision,
          action: 'payments.transfer',
          verdict: 'Allow',
          outcome: 'succeeded',
        },
      };
  }
}

/**
 * Returns `{ file, key, sessions, events }` for a database of `events` events (generating it if
 * no matching file exists). `key` is an admin API key of the database's tenant.
 */
export async function ensureHistoryDb(events, { log = () => {} } = {}) {
  const { SQLITE_MIGRATIONS, openSqliteStore } = await load('adapters/sqlite/index.js');
  const core = await load('src/index.js');
  const schema = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1].version;
  const base = join(RESULTS_DIR, `history-${events}-g${GENERATOR_VERSION}-s${schema}`);
  const file = `${base}.db`;
  const metaFile = `${base}.json`;
  if (existsSync(file) && existsSync(metaFile)) {
    const meta = JSON.parse(readFileSync(metaFile, 'utf8'));
    if (meta.complete && meta.events === events) return { file, ...meta, reused: true };
  }
  const started = Date.now();
  log(`generating ${events.toLocaleString('en')} events in ${file} (kept for later runs) ...`);
  const tmp = `${base}.tmp.db`;
  for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`, file, `${file}-wal`, `${file}-shm`])
    rmSync(f, { force: true });

  // Schema and an API key through the store itself.
  const store = openSqliteStore({ filename: tmp });
  const { secret } = await core.createApiKey(
    store,
    { ids: core.createIdGenerator(), randomBytes: core.systemRandomBytes, now: new Date() },
    { name: 'bench history', scopes: ['admin'] },
  );
  await store.close();

  const db = await openBareSqlite(tmp);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = OFF'); // a generator: a crash means starting again
  const keepsHeads = isTable(db, 'chain_heads');
  const insert = db.prepare(
    `INSERT INTO events (tenant_id, seq, event_id, type, session_id, decision_id, occurred_at, data, prev_hash, hash)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const sessions = Math.max(1, Math.floor(events / EVENTS_PER_SESSION));
  const r = rng(0x5eed ^ events);
  const ulid = monotonicFactory(() => r());
  const t0 = Date.parse('2025-01-01T00:00:00.000Z');
  let prev = core.GENESIS_HASH;
  const lastDecisionOf = new Map();
  let seq = 0;
  const writeBatch = (n) => {
    db.begin('IMMEDIATE');
    for (let k = 0; k < n; k += 1) {
      seq += 1;
      const ms = t0 + seq * 37;
      const at = new Date(ms).toISOString();
      const ids = (prefix) => `${prefix}_${ulid(ms).toLowerCase()}`;
      // Sessions interleave as concurrent agents do: a session's events are spread over the log.
      const sessionId = `sess-${String(Math.floor(r() * sessions)).padStart(6, '0')}`;
      const x = r();
      const type =
        x < 0.65
          ? 'gate_evaluation'
          : x < 0.9
            ? 'state_change'
            : x < 0.95
              ? 'state_conflict'
              : 'action_outcome';
      const { decision_id, data } = eventData(type, r, ids, at, sessionId, lastDecisionOf.get(sessionId));
      if (type === 'gate_evaluation') lastDecisionOf.set(sessionId, decision_id);
      const eventId = ids('evt');
      const hash = core.hashEvent({
        tenant_id: 'default',
        seq,
        event_id: eventId,
        type,
        session_id: sessionId,
        occurred_at: at,
        data,
        prev_hash: prev,
      });
      insert.run('default', seq, eventId, type, sessionId, decision_id, at, JSON.stringify(data), prev, hash);
      prev = hash;
    }
    if (keepsHeads) {
      db.prepare(
        `INSERT INTO chain_heads (tenant_id, seq, hash) VALUES ('default', ?, ?)
         ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
      ).run(seq, prev);
    }
    db.commit();
  };
  while (seq < events) {
    writeBatch(Math.min(BATCH, events - seq));
    if (seq % 200_000 === 0)
      log(`  ${seq.toLocaleString('en')} events, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
  renameSync(tmp, file);
  for (const f of [`${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
  const meta = { complete: true, events, sessions, key: secret, seconds: (Date.now() - started) / 1000 };
  writeFileSync(metaFile, `${JSON.stringify(meta, null, 2)}\n`);
  log(`  done in ${meta.seconds.toFixed(0)} s`);
  return { file, ...meta, reused: false };
}
