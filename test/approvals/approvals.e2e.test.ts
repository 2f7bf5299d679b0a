/**
 * Approvals end to end on real processes: `gatehouse serve` (SQLite file), keys made with
 * `gatehouse keys create --label`, an agent on the /v1 client, a person on `gatehouse approvals`,
 * a webhook receiver on loopback. Then two `gatehouse serve` instances on one PostgreSQL schema
 * with concurrent evaluations: one approval, released exactly once.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatehouseClient, type GatehouseClient } from '../../adapters/client/index.js';
import {
  cli,
  root,
  type ServeProcess,
  startReceiver,
  startServe,
  stopServe,
  waitFor,
} from '../reliability/fixtures.js';
import { APPROVAL_POLICY } from '../support/policies.js';

const run = promisify(execFile);

/** Runs the CLI; resolves with its output and exit code, never throws. */
async function gatehouse(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], {
      cwd: root,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** `gatehouse keys create …` → the secret (first line). */
async function createKey(dbArgs: string[], ...args: string[]): Promise<string> {
  const r = await gatehouse(['keys', 'create', ...dbArgs, ...args]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.split('\n')[0]!;
}

const transfer = {
  session_id: 'chat-1',
  action: 'payments.transfer',
  params: { amount: 9000, to: 'acct-9' },
};
const budget = {
  session_id: 'chat-1',
  key: 'budget.limit',
  value: '5000',
  type: 'fact',
  source: 'user_input',
};

describe('approvals through the real server, client and CLI (SQLite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-approvals-'));
  const policyFile = join(dir, 'policy.yaml');
  const dbArgs = ['--database', join(dir, 'gh.db')];
  let serve: ServeProcess;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let admin: GatehouseClient;
  let agent: GatehouseClient;
  let agentKey: string;
  let financeKey: string;

  beforeAll(async () => {
    writeFileSync(policyFile, APPROVAL_POLICY);
    serve = await startServe([...dbArgs, '--policy', policyFile, '--allow-insecure-loopback-webhooks']);
    receiver = await startReceiver(() => 200);
    agentKey = await createKey(dbArgs, '--scopes', 'gate:evaluate,state:write', '--name', 'agent');
    financeKey = await createKey(
      dbArgs,
      '--scopes',
      'approvals:decide',
      '--label',
      'finance',
      '--name',
      'alice',
    );
    admin = createGatehouseClient({ baseUrl: serve.url, apiKey: serve.key! });
    agent = createGatehouseClient({ baseUrl: serve.url, apiKey: agentKey });
  });
  afterAll(async () => {
    if (serve) await stopServe(serve);
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds, a person approves with the CLI, the agent proceeds once', async () => {
    await admin.createWebhook({
      url: receiver.url,
      events: ['approval.requested', 'approval.approved', 'approval.used'],
    });
    await admin.recordState(budget);
    const labels = await gatehouse(['keys', 'list', ...dbArgs]);
    expect(labels.stdout).toMatch(/name=alice .*labels=finance/);

    const held = await agent.evaluate(transfer);
    expect(held).toMatchObject({ verdict: 'Block', approval: { status: 'pending' } });
    const id = held.approval!.id;
    expect((await agent.evaluate(transfer)).approval!.id).toBe(id);

    // The agent long-polls while the person looks and decides.
    const waiting = agent.getApproval(id, { wait: 30 });

    const env = { GATEHOUSE_URL: serve.url, GATEHOUSE_API_KEY: financeKey };
    const list = await gatehouse(['approvals', 'list', '--status', 'pending'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(id);
    expect(list.stdout).toContain('"amount":9000');
    const show = await gatehouse(['approvals', 'show', id], env);
    expect(show.stdout).toMatch(/approvers\s+finance/);
    expect(show.stdout).toMatch(/state read\s+\{"budget.limit":1\}/);

    // The agent's own key can neither list nor approve.
    const self = await gatehouse(['approvals', 'approve', id], { ...env, GATEHOUSE_API_KEY: agentKey });
    expect(self.code).toBe(1);
    expect(self.stderr).toContain("lacks the 'approvals:decide' scope");

    const approve = await gatehouse(['approvals', 'approve', id, '--comment', 'invoice 42 checked'], env);
    expect(approve.code, approve.stderr).toBe(0);
    expect(approve.stdout).toContain(`approved ${id}`);
    expect(await waiting).toMatchObject({ status: 'approved', comment: 'invoice 42 checked' });

    const again = await gatehouse(['approvals', 'deny', id], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('is approved; only a pending approval');

    // A different amount is not what was approved.
    expect(
      (await agent.evaluate({ ...transfer, params: { ...transfer.params, amount: 9500 } })).verdict,
    ).toBe('Block');
    const released = await agent.evaluate(transfer);
    expect(released).toMatchObject({ verdict: 'Allow', approval: { id, status: 'used' } });
    const replay = await agent.evaluate(transfer);
    expect(replay.verdict).toBe('Block');
    expect(replay.approval!.id).not.toBe(id);

    await waitFor(() => receiver.received.length >= 5, 10_000, 'approval webhooks');
    // Held 9000, approved, held 9500, released 9000, held 9000 again (deliveries may interleave).
    const types = receiver.received.map((r) => JSON.parse(r.body).type).sort();
    expect(types).toEqual([
      'approval.approved',
      'approval.requested',
      'approval.requested',
      'approval.requested',
      'approval.used',
    ]);
    expect(await admin.verifyHistory()).toMatchObject({ ok: true });
    const verify = await gatehouse(['verify', ...dbArgs]);
    expect(verify.stdout).toMatch(/tenant default: ok/);
  });

  it('bad input is a precise 4xx, never a 500', async () => {
    const finance = createGatehouseClient({ baseUrl: serve.url, apiKey: financeKey });
    await expect(finance.getApproval('apr_nope')).rejects.toMatchObject({ code: 'not_found' });
    await expect(finance.getApproval('apr_nope', { wait: 61 })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(finance.listApprovals({ status: 'maybe' as never })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(finance.approve('apr_nope', { comment: 'x'.repeat(1001) })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(agent.listApprovals()).rejects.toMatchObject({ code: 'forbidden' });
  });
});

const url = process.env['GATEHOUSE_TEST_DATABASE_URL'];

describe.skipIf(!url)('two instances on one PostgreSQL: one approval, released exactly once', () => {
  const schema = `gh_apr_${randomBytes(4).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'gh-approvals-pg-'));
  const policyFile = join(dir, 'policy.yaml');
  const dbArgs = ['--database-url', url!, '--database-schema', schema];
  let a: ServeProcess;
  let b: ServeProcess;

  beforeAll(async () => {
    writeFileSync(policyFile, APPROVAL_POLICY);
    [a, b] = await Promise.all([
      startServe([...dbArgs, '--policy', policyFile]),
      startServe([...dbArgs, '--policy', policyFile]),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a && stopServe(a), b && stopServe(b)]);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('concurrent evaluations on both instances consume it once; the chain verifies', async () => {
    const adminKey = (a.key ?? b.key)!;
    const agentKey = await createKey(dbArgs, '--scopes', 'gate:evaluate');
    const financeKey = await createKey(dbArgs, '--scopes', 'approvals:decide', '--label', 'finance');
    const on = (s: ServeProcess, key: string) => createGatehouseClient({ baseUrl: s.url, apiKey: key });
    await on(a, adminKey).recordState(budget);

    // Held on both instances at once: one request, not two.
    const holds = await Promise.all([on(a, agentKey).evaluate(transfer), on(b, agentKey).evaluate(transfer)]);
    expect(new Set(holds.map((d) => d.approval!.id)).size).toBe(1);
    const id = holds[0]!.approval!.id;

    // Approved on b while a waits for it: a sees it by polling the store.
    const waiting = on(a, agentKey).getApproval(id, { wait: 30 });
    await on(b, financeKey).approve(id);
    expect((await waiting).status).toBe('approved');

    const decisions = await Promise.all(
      Array.from({ length: 24 }, (_, i) => on(i % 2 ? a : b, agentKey).evaluate(transfer)),
    );
    const allowed = decisions.filter((d) => d.verdict === 'Allow');
    expect(allowed).toHaveLength(1);
    expect(allowed[0]!.approval).toMatchObject({ id, status: 'used' });
    const newRequests = new Set(decisions.filter((d) => d.verdict === 'Block').map((d) => d.approval!.id));
    expect(newRequests.size).toBe(1);
    expect(newRequests.has(id)).toBe(false);

    const admin = on(b, adminKey);
    const used = await admin.readHistory({ type: 'approval.used', limit: 500 });
    expect(used.events.map((e) => e.data['approval_id'])).toEqual([id]);
    expect(await admin.getApproval(id)).toMatchObject({ status: 'used', uses_left: 0 });
    expect(await admin.verifyHistory()).toMatchObject({ ok: true });
  });
});
