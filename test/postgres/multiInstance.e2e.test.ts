/**
 * Two `gatehouse serve` processes on one PostgreSQL schema, as behind a load balancer:
 * concurrent writes to one key and concurrent evaluations of one session, then versions without
 * gaps or duplicates, an intact chain, and every matching event delivered once to a loopback
 * receiver.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  type ServeProcess,
  startReceiver,
  startServe,
  stopServe,
  waitFor,
} from '../reliability/fixtures.js';

const run = promisify(execFile);

const url = process.env['GATEHOUSE_TEST_DATABASE_URL'];

describe.skipIf(!url)('two instances on one PostgreSQL', () => {
  const schema = `gh_multi_${randomBytes(4).toString('hex')}`;
  const dbArgs = () => [
    '--database-url',
    url!,
    '--database-schema',
    schema,
    '--allow-insecure-loopback-webhooks',
  ];
  let a: ServeProcess;
  let b: ServeProcess;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let key: string;

  beforeAll(async () => {
    receiver = await startReceiver(() => 200);
    // Both start at once: the migrations serialise on an advisory lock.
    [a, b] = await Promise.all([startServe(dbArgs()), startServe(dbArgs())]);
    key = (a.key ?? b.key)!;
    expect([a.key, b.key].filter(Boolean)).toHaveLength(1);
  });

  afterAll(async () => {
    await Promise.all([a && stopServe(a), b && stopServe(b)]);
    await receiver?.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  async function post(instance: ServeProcess, path: string, body: unknown) {
    const res = await fetch(`${instance.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  }

  async function get(instance: ServeProcess, path: string) {
    const res = await fetch(`${instance.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return (await res.json()) as any;
  }

  it('keeps versions, the chain and deliveries correct under concurrent load', async () => {
    const hook = await post(a, '/v1/webhooks', { url: receiver.url, events: ['*'] });
    expect(hook.status).toBe(201);

    const writes = Array.from({ length: 40 }, (_, i) =>
      post(i % 2 ? a : b, '/v1/state/items', {
        session_id: 'shared',
        key: 'budget.limit',
        value: String(1000 + i),
        type: 'fact',
        source: 'user_input',
      }),
    );
    const evaluations = Array.from({ length: 30 }, (_, i) =>
      post(i % 2 ? b : a, '/v1/gates/evaluate', {
        session_id: 'shared',
        action: 'payments.transfer',
        params: { amount: 1500 },
      }),
    );
    const [w, e] = await Promise.all([Promise.all(writes), Promise.all(evaluations)]);
    expect(w.every((r) => r.status === 201)).toBe(true);
    expect(e.every((r) => r.status === 200)).toBe(true);

    const versions = (await get(b, '/v1/state/items/budget.limit/versions?session_id=shared')).versions;
    expect(versions.map((v: { version: number }) => v.version)).toEqual(
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    expect(new Set(w.map((r) => r.json.item.version)).size).toBe(40);

    // 70 and one `policy.activated`: the first use of the tenant recorded the instances' policy
    // (once, though both instances started with it).
    expect(await get(a, '/v1/history/verify')).toMatchObject({ ok: true, checked: 71 });
    const page = await get(b, '/v1/history/events?limit=500&order=asc');
    expect(page.events.map((x: { seq: number }) => x.seq)).toEqual(
      Array.from({ length: 71 }, (_, i) => i + 1),
    );
    expect(page.events.filter((x: { type: string }) => x.type === 'policy.activated')).toHaveLength(1);

    const expected = new Set<string>(page.events.map((x: { event_id: string }) => x.event_id));
    await waitFor(
      () => new Set(receiver.received.map((r) => String(r.headers['webhook-id']))).size >= expected.size,
      30_000,
      'every event delivered',
    );
    await new Promise((r) => setTimeout(r, 300));
    const ids = receiver.received.map((r) => String(r.headers['webhook-id']));
    expect(new Set(ids)).toEqual(expected);
    expect(ids).toHaveLength(expected.size);
  });

  it('a key revoked by `gatehouse keys revoke` is refused by both instances, which had it cached', async () => {
    const db = ['--database-url', url!, '--database-schema', schema];
    const created = await run(process.execPath, [cli, 'keys', 'create', ...db, '--scopes', 'state:read']);
    const secret = created.stdout.split('\n')[0]!;
    const id = /id (key_\S+),/.exec(created.stdout)![1]!;
    const status = async (instance: ServeProcess) =>
      (
        await fetch(`${instance.url}/v1/state/items?session_id=s`, {
          headers: { authorization: `Bearer ${secret}` },
        })
      ).status;
    for (let i = 0; i < 3; i++) expect([await status(a), await status(b)]).toEqual([200, 200]);
    await run(process.execPath, [cli, 'keys', 'revoke', id, ...db]);
    // Each instance hears the revocation's NOTIFY (the documented bound: its delivery), then refuses.
    await waitFor(async () => (await status(a)) === 401 && (await status(b)) === 401, 5000, 'both refuse');
    for (let i = 0; i < 3; i++) expect([await status(a), await status(b)]).toEqual([401, 401]);
  });
});
