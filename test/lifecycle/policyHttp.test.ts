/**
 * The policy lifecycle over /v1 (web handler, no port) and across instances: GET/PUT with
 * If-Match, revisions, replay, and how a file policy and a PUT policy meet at a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  type Scope,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { BUDGET_POLICY } from '../support/policies.js';

const STRICT = `${BUDGET_POLICY}
rules:
  - name: no_deletes
    when: "action.startsWith('files.')"
    verdict: Block
    message: "No file actions"
`;

let store: Store;
let gh: Gatehouse;
let app: ReturnType<typeof createHttpApp>;
let admin: string;
let adminId: string;

async function key(scopes: Scope[], tenantId = 'default') {
  return createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes, tenantId },
  );
}

async function call(
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.key ?? admin}`,
    ...options.headers,
  };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await app.request(path, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

beforeEach(async () => {
  store = openSqliteStore();
  gh = createGatehouse({ store, policy: compilePolicy(BUDGET_POLICY) });
  app = createHttpApp({ gatehouse: gh, keys: store, rateLimit: false });
  const made = await key(['admin']);
  admin = made.secret;
  adminId = made.key.id;
});
afterEach(async () => {
  await store.close();
});

describe('GET and PUT /v1/policy', () => {
  it('activates a policy only with If-Match on the active revision, and decisions follow it', async () => {
    const first = await call('GET', '/v1/policy');
    expect(first.status).toBe(200);
    const base = compilePolicy(BUDGET_POLICY).revision;
    expect(first.json).toMatchObject({ revision: base, activated_by: null, source: BUDGET_POLICY });
    expect(first.headers.get('etag')).toBe(`"${base}"`);

    const missing = await call('PUT', '/v1/policy', { body: { policy: STRICT } });
    expect(missing.status).toBe(428);
    expect(missing.json.code).toBe('precondition_required');

    const stale = await call('PUT', '/v1/policy', {
      body: { policy: STRICT },
      headers: { 'if-match': `"${'0'.repeat(64)}"` },
    });
    expect(stale.status).toBe(412);
    expect(stale.json.code).toBe('precondition_failed');

    const broken = await call('PUT', '/v1/policy', {
      body: { policy: 'version: 1\nrules:\n  - name: x\n    when: "action =="\n    verdict: Block\n' },
      headers: { 'if-match': first.headers.get('etag')! },
    });
    expect(broken.status).toBe(422);
    expect(broken.json.errors[0].path).toBe('rules[0].when');
    expect(broken.json.detail).toMatch(/policy:4:/);

    const put = await call('PUT', '/v1/policy', {
      body: { policy: STRICT },
      headers: { 'if-match': first.headers.get('etag')! },
    });
    expect(put.status).toBe(200);
    const strict = compilePolicy(STRICT).revision;
    expect(put.json).toMatchObject({ revision: strict, activated_by: adminId });
    expect(put.json.rules.map((r: { name: string }) => r.name)).toEqual(['no_deletes', 'over_budget']);
    expect(put.headers.get('etag')).toBe(`"${strict}"`);

    // The old ETag is stale now: a second owner working from it is refused.
    const late = await call('PUT', '/v1/policy', {
      body: { policy: BUDGET_POLICY },
      headers: { 'if-match': first.headers.get('etag')! },
    });
    expect(late.status).toBe(412);

    const decision = await call('POST', '/v1/gates/evaluate', {
      body: { session_id: 's', action: 'files.rm' },
    });
    expect(decision.json).toMatchObject({ verdict: 'Block', policy: { revision: strict } });
    const events = await call('GET', '/v1/history/events?type=policy.activated');
    expect(events.json.events).toHaveLength(1);
    expect(events.json.events[0].data).toMatchObject({ revision: strict, activated_by: adminId });
  });

  it('needs policy:write to change it and history:read to read it; tenants are apart', async () => {
    const reader = await key(['history:read']);
    const writer = await key(['policy:write']);
    const other = await key(['admin'], 't2');
    const etag = (await call('GET', '/v1/policy', { key: reader.secret })).headers.get('etag')!;
    expect(
      (
        await call('PUT', '/v1/policy', {
          key: reader.secret,
          body: { policy: STRICT },
          headers: { 'if-match': etag },
        })
      ).status,
    ).toBe(403);
    expect((await call('GET', '/v1/policy', { key: writer.secret })).status).toBe(403);
    const put = await call('PUT', '/v1/policy', {
      key: writer.secret,
      body: { policy: STRICT },
      headers: { 'if-match': etag },
    });
    expect(put.status).toBe(200);
    expect((await call('GET', '/v1/policy', { key: other.secret })).json.revision).toBe(
      compilePolicy(BUDGET_POLICY).revision,
    );
    expect(
      (await call('GET', `/v1/policy/revisions/${put.json.revision}`, { key: other.secret })).status,
    ).toBe(404);
    const mine = await call('GET', `/v1/policy/revisions/${put.json.revision}`, { key: reader.secret });
    expect(mine.json).toMatchObject({
      revision: put.json.revision,
      source: STRICT,
      created_by: writer.key.id,
      active: true,
    });
    expect((await call('GET', '/v1/policy/revisions/not-a-revision')).status).toBe(404);
    const list = await call('GET', '/v1/policy/revisions?limit=5');
    expect(list.json).toEqual({
      revisions: [expect.objectContaining({ revision: put.json.revision, active: true })],
      next_cursor: null,
    });
  });
});

describe('POST /v1/policy/replay', () => {
  it('reports what a candidate would have decided, writes no state and records one event', async () => {
    await gh.recordState({
      session_id: 's',
      key: 'budget.limit',
      value: '5000',
      type: 'fact',
      source: 'user_input',
    });
    for (const amount of [100, 9000, 4000]) {
      await gh.evaluate({ session_id: 's', action: 'payments.transfer', params: { amount } });
    }
    await gh.evaluate({ session_id: 's', action: 'files.rm' });
    const versionsBefore = await store.listSessionVersions('default', 's');
    const r = await call('POST', '/v1/policy/replay', { body: { policy: STRICT, examples: 5 } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      decisions: 4,
      unchanged: 3,
      changed: 1,
      by_verdict: [
        { from: 'Allow', to: 'Allow', count: 2 },
        { from: 'Allow', to: 'Block', count: 1 },
        { from: 'Block', to: 'Block', count: 1 },
      ],
      next_after_seq: null,
    });
    expect(r.json.rules).toEqual(
      expect.arrayContaining([
        { rule: 'no_deletes', before: 0, now: 1 },
        { rule: 'over_budget', before: 1, now: 1 },
      ]),
    );
    expect(r.json.examples).toEqual([
      expect.objectContaining({
        action: 'files.rm',
        before: expect.objectContaining({ verdict: 'Allow' }),
        after: { verdict: 'Block', reason: 'No file actions', rules: ['no_deletes:Block'] },
      }),
    ]);
    expect(await store.listSessionVersions('default', 's')).toEqual(versionsBefore);
    const recorded = await call('GET', '/v1/history/events?type=policy.replayed');
    expect(recorded.json.events).toHaveLength(1);
    expect(recorded.json.events[0]).toMatchObject({
      event_id: r.json.event_id,
      data: { decisions: 4, changed: 1 },
    });

    const paged = await call('POST', '/v1/policy/replay', { body: { policy: STRICT, limit: 3 } });
    expect(paged.json).toMatchObject({ decisions: 3 });
    const rest = await call('POST', '/v1/policy/replay', {
      body: { policy: STRICT, after_seq: paged.json.next_after_seq },
    });
    expect(rest.json).toMatchObject({ decisions: 1, changed: 1, next_after_seq: null });

    expect((await call('POST', '/v1/policy/replay', { body: {} })).status).toBe(422);
    expect((await call('POST', '/v1/policy/replay', { body: { revision: 'f'.repeat(64) } })).status).toBe(
      404,
    );
    const byRevision = await call('POST', '/v1/policy/replay', {
      body: { revision: compilePolicy(BUDGET_POLICY).revision, action: 'payments.*' },
    });
    expect(byRevision.json).toMatchObject({ decisions: 3, unchanged: 3 });
  });
});

describe("another tenant's revision", () => {
  it('is 404 not_found to replay, exactly like a revision that does not exist', async () => {
    const etag = (await call('GET', '/v1/policy')).headers.get('etag')!;
    const put = await call('PUT', '/v1/policy', { body: { policy: STRICT }, headers: { 'if-match': etag } });
    expect(put.status).toBe(200);
    const strict = put.json.revision as string;
    // Compiled and cached for the default tenant: still not the other tenant's to use.
    expect((await call('POST', '/v1/policy/replay', { body: { revision: strict } })).status).toBe(200);

    const other = (await key(['admin'], 't2')).secret;
    const theirs = await call('POST', '/v1/policy/replay', { key: other, body: { revision: strict } });
    const missing = 'e'.repeat(64);
    const none = await call('POST', '/v1/policy/replay', { key: other, body: { revision: missing } });
    expect(theirs.status).toBe(404);
    expect(theirs.json.code).toBe('not_found');
    expect(JSON.stringify(theirs.json).replaceAll(strict, '<rev>')).toBe(
      JSON.stringify(none.json).replaceAll(missing, '<rev>'),
    );
    expect(JSON.stringify(theirs.json)).not.toContain('no_deletes');
    // Nothing was replayed or recorded for the other tenant.
    const recorded = await call('GET', '/v1/history/events?type=policy.replayed', { key: other });
    expect(recorded.json.events).toEqual([]);
  });
});

describe('several instances and restarts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-lifecycle-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('an instance follows a revision activated by another; a restart keeps it; a changed file takes over', async () => {
    const filename = join(dir, `multi-${Date.now()}.db`);
    const FILE_V1 = compilePolicy(BUDGET_POLICY);
    const FILE_V2 = compilePolicy(`${BUDGET_POLICY}\ndefault_verdict: Warn\n`);
    const open = (policy = FILE_V1) => {
      const s = openSqliteStore({ filename });
      return createGatehouse({ store: s, policy, policyOrigin: 'file', policyRefreshMs: 0 });
    };
    const a = open();
    const b = open();
    try {
      expect((await a.getActivePolicy()).activated_by).toBe('file');
      const put = await a.activatePolicy(
        { policy: STRICT, expected_revision: FILE_V1.revision },
        { actor: 'key_x' },
      );
      // b started with the same file: it follows the database, not its file.
      expect((await b.evaluate({ session_id: 's', action: 'files.rm' })).policy.revision).toBe(put.revision);
    } finally {
      await a.store.close();
      await b.store.close();
    }
    const restarted = open();
    try {
      expect((await restarted.getActivePolicy()).revision).toBe(compilePolicy(STRICT).revision);
    } finally {
      await restarted.store.close();
    }
    const newFile = open(FILE_V2);
    try {
      expect(await newFile.getActivePolicy()).toMatchObject({
        revision: FILE_V2.revision,
        activated_by: 'file',
      });
      const activations = await newFile.readHistory({ type: 'policy.activated', order: 'asc' });
      expect(activations.events.map((e) => e.data['activated_by'])).toEqual(['file', 'key_x', 'file']);
      expect((await newFile.verifyHistory()).ok).toBe(true);
    } finally {
      await newFile.store.close();
    }
  });

  it('an active revision that a newer Gatehouse no longer loads fails closed, saying what to do', async () => {
    const filename = join(dir, `stale-${Date.now()}.db`);
    const store = openSqliteStore({ filename });
    const gh = createGatehouse({ store, policy: compilePolicy(BUDGET_POLICY) });
    try {
      const active = await gh.activatePolicy(
        { policy: STRICT, expected_revision: (await gh.getActivePolicy()).revision },
        { actor: 'key_x' },
      );
      // As an older version stored it: a literal pattern that fails on every evaluation, which
      // activation now refuses.
      store.database
        .prepare('UPDATE policy_revisions SET source = ? WHERE revision = ?')
        .run(STRICT.replace("action.startsWith('files.')", "action.matches('(')"), active.revision);
    } finally {
      await store.close();
    }
    const reopened = openSqliteStore({ filename });
    try {
      const later = createGatehouse({ store: reopened, policy: compilePolicy(BUDGET_POLICY) });
      const error = await later.evaluate({ session_id: 's', action: 'files.rm' }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'unavailable' });
      expect((error as Error).message).toMatch(
        /^Policy revision [0-9a-f]{12} no longer loads, so this tenant's actions cannot be evaluated; activate a corrected policy .*Invalid regular expression/s,
      );
    } finally {
      await reopened.close();
    }
  });
});
