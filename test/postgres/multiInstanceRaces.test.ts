import { connect, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../adapters/http/index.js';
import { openPostgresStore, type PostgresStore } from '../../adapters/postgres/index.js';
import {
  authenticateApiKey,
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { freshSchemas } from '../support/pgSchemas.js';
import { APPROVAL_POLICY, BUDGET_POLICY } from '../support/policies.js';

/** The erased budget as a value of its own: a hash or an ID in an event may hold the digits 4321. */
const ERASED = /\b4321\b/;

const url = process.env['GATEHOUSE_TEST_DATABASE_URL'];

const freshSchema = freshSchemas('gh_races');

const item = (value: string) => ({
  session_id: 's1',
  key: 'budget.limit',
  value,
  type: 'fact',
  source: 'user_input',
});

/** A client of its own on the schema (not one of the store's pool). */
async function sideConnection(schema: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`SET search_path TO "${schema}"`);
  return client;
}

/** Terminates the backend that waits on a lock `holder` holds, once there is one. */
async function terminateWaiterOn(holder: pg.Client): Promise<void> {
  const killer = new pg.Client({ connectionString: url });
  await killer.connect();
  try {
    const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const holderPid = rows[0]!.pid;
    for (let i = 0; ; i++) {
      const waiting = await killer.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
        [holderPid],
      );
      if (waiting.rows.length > 0) {
        await killer.query('SELECT pg_terminate_backend($1)', [waiting.rows[0]!.pid]);
        return;
      }
      expect(i).toBeLessThan(500);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    await killer.end();
  }
}

/**
 * Runs `fn` with the process's uncaught-exception listeners replaced by one that records: an
 * 'error' event nobody listens to would crash a `gatehouse serve` process.
 */
async function recordingUncaught(fn: () => Promise<void>): Promise<unknown[]> {
  const uncaught: unknown[] = [];
  const saved = process.listeners('uncaughtException');
  process.removeAllListeners('uncaughtException');
  const record = (error: unknown) => uncaught.push(error);
  process.on('uncaughtException', record);
  try {
    await fn();
    // The socket's end arrives after the query's failure.
    await new Promise((r) => setTimeout(r, 200));
  } finally {
    process.off('uncaughtException', record);
    for (const l of saved) process.on('uncaughtException', l);
  }
  return uncaught;
}

describe.skipIf(!url)('several instances on one PostgreSQL schema, racing', () => {
  const deps = () => ({ ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() });

  it('a connection terminated mid-transaction: 503 unavailable, no crash, nothing half-written, and the store recovers', async () => {
    const schema = freshSchema();
    const store: PostgresStore = await openPostgresStore({
      connectionString: url!,
      schema,
      pool: { max: 3 },
    });
    const gh = createGatehouse({ store });
    const app = createHttpApp({ gatehouse: gh, rateLimit: false });
    const locker = await sideConnection(schema);
    try {
      const { secret } = await createApiKey(store, deps(), { scopes: ['admin'] });
      const post = (body: unknown) =>
        app.request('/v1/state/items', {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      expect((await post(item('1'))).status).toBe(201);

      // Another instance's long transaction holds the tenant's chain head; the write waits on it.
      await locker.query('BEGIN');
      await locker.query('SELECT * FROM chain_heads FOR UPDATE');
      let status = 0;
      let body: { code?: string } = {};
      const uncaught = await recordingUncaught(async () => {
        const pending = post(item('2'));
        await terminateWaiterOn(locker);
        const res = await pending;
        status = res.status;
        body = (await res.json()) as { code?: string };
      });
      await locker.query('ROLLBACK');

      expect(uncaught).toEqual([]);
      expect(status).toBe(503);
      expect(body.code).toBe('unavailable');
      // The next write goes through on a fresh connection; the lost one left nothing behind.
      const again = await post(item('3'));
      expect(again.status).toBe(201);
      expect(((await again.json()) as { item: { version: number } }).item.version).toBe(2);
      expect((await gh.listItemVersions('s1', 'budget.limit')).map((v) => v.value)).toEqual(['1', '3']);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 2 });
    } finally {
      await locker.end();
      app.close();
      await store.close();
    }
  });

  /**
   * Instance A reads the session for an evaluation, then waits (a slow event loop, a GC pause)
   * until instance B's erasure of the session has committed; then A's evaluation goes on.
   */
  async function evaluationAcrossErasure(yaml: string, params: Record<string, unknown>, rewrite?: string) {
    const schema = freshSchema();
    const a = await openPostgresStore({ connectionString: url!, schema });
    const b = await openPostgresStore({ connectionString: url!, schema });
    let resume!: () => void;
    const resumed = new Promise<void>((r) => (resume = r));
    let readDone!: () => void;
    const read = new Promise<void>((r) => (readDone = r));
    let first = true;
    const paused: Store = {
      ...a,
      listItems: async (tenantId, sessionId) => {
        const items = await a.listItems(tenantId, sessionId);
        if (first) {
          first = false;
          readDone();
          await resumed;
        }
        return items;
      },
    };
    const policy = compilePolicy(yaml);
    const ghA = createGatehouse({ store: paused, policy });
    const ghB = createGatehouse({ store: b, policy });
    try {
      await ghB.recordState(item('4321'));
      const pending = ghA.evaluate({ session_id: 's1', action: 'payments.transfer', params });
      await read;
      const erasure = await ghB.eraseSession({ session_id: 's1' });
      if (rewrite !== undefined) await ghB.recordState(item(rewrite));
      resume();
      const decision = await pending;
      const events = await b.queryEvents('default', { order: 'asc', limit: 100 });
      return { decision, erasure, events, verified: await ghB.verifyHistory() };
    } finally {
      await a.close();
      await b.close();
    }
  }

  it('an evaluation on one instance racing an erasure on another neither quotes nor decides on the erased value', async () => {
    const { decision, erasure, events, verified } = await evaluationAcrossErasure(BUDGET_POLICY, {
      amount: 5000,
    });
    const after = events.filter((e) => e.seq > erasure.erasure!.seq);
    expect(after.map((e) => e.type)).toEqual(['gate_evaluation']);
    // Neither the answer nor the history after the erasure carries the erased budget.
    expect(JSON.stringify(decision)).not.toMatch(ERASED);
    expect(JSON.stringify(after)).not.toMatch(ERASED);
    // The decision is the one the state after the erasure gives: the required budget is gone.
    expect(decision.verdict).toBe('Block');
    expect(decision.reasons.map((r) => r.rule)).toContain('required_missing');
    expect(verified).toMatchObject({ ok: true, checked: 3 });
  });

  it('an evaluation racing an erasure and a new write on another instance decides on the new value', async () => {
    const { decision, erasure, events, verified } = await evaluationAcrossErasure(
      BUDGET_POLICY,
      { amount: 5000 },
      '9999',
    );
    const after = events.filter((e) => e.seq > erasure.erasure!.seq);
    expect(after.map((e) => e.type)).toEqual(['state_change', 'gate_evaluation']);
    expect(JSON.stringify(decision)).not.toMatch(ERASED);
    expect(JSON.stringify(after)).not.toMatch(ERASED);
    expect(decision).toMatchObject({ verdict: 'Allow', state_versions: { 'budget.limit': 2 } });
    expect(verified).toMatchObject({ ok: true, checked: 4 });
  });

  it('a held evaluation racing an erasure on another instance asks for no approval of the erased state', async () => {
    const { decision, erasure, events, verified } = await evaluationAcrossErasure(APPROVAL_POLICY, {
      amount: 5000,
    });
    const after = events.filter((e) => e.seq > erasure.erasure!.seq);
    expect(after.map((e) => e.type)).toEqual(['gate_evaluation']);
    expect(JSON.stringify(decision)).not.toMatch(ERASED);
    expect(JSON.stringify(after)).not.toMatch(ERASED);
    expect(decision.approval).toBeUndefined();
    expect(verified).toMatchObject({ ok: true, checked: 3 });
  });

  /**
   * A loopback TCP proxy to PostgreSQL that can go silent on the connections whose startup names
   * `application_name` `gatehouse-keys:…` (the LISTEN connections): bytes are dropped both ways
   * and nothing is closed, as when a firewall forgets a flow or a host vanishes.
   */
  async function silenceableProxy(): Promise<{ url: string; silence(): void; close(): Promise<void> }> {
    const target = new URL(url!);
    let silent = false;
    const sockets = new Set<Socket>();
    const server: Server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      sockets.add(client).add(upstream);
      let listener: boolean | undefined;
      client.on('data', (chunk: Buffer) => {
        listener ??= chunk.includes('gatehouse-keys');
        if (!(silent && listener)) upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (!(silent && listener)) client.write(chunk);
      });
      const end = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('close', end).on('error', end);
      upstream.on('close', end).on('error', end);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const proxied = new URL(url!);
    proxied.host = `127.0.0.1:${port}`;
    return {
      url: proxied.toString(),
      silence: () => {
        silent = true;
      },
      close: async () => {
        for (const s of sockets) s.destroy();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  }

  it('an instance whose LISTEN connection went silent stops answering from its key cache within seconds', async () => {
    const schema = freshSchema();
    const proxy = await silenceableProxy();
    const a = await openPostgresStore({ connectionString: url!, schema });
    const b = await openPostgresStore({ connectionString: proxy.url, schema });
    try {
      const { secret, key } = await createApiKey(a, deps(), { scopes: ['state:read'] });
      // b caches the key while it hears revocations.
      await authenticateApiKey(b, secret);
      await authenticateApiKey(b, secret);
      // b's LISTEN connection goes silent: no NOTIFY, no error, no close reaches b.
      proxy.silence();
      expect(await a.revokeApiKey(key.id, new Date().toISOString())).toBe(true);
      const revokedAt = performance.now();
      for (;;) {
        const refused = await authenticateApiKey(b, secret).then(
          () => false,
          () => true,
        );
        if (refused) break;
        // Without a heartbeat b would answer from its cache for as long as the socket looks open.
        expect(performance.now() - revokedAt).toBeLessThan(6000);
        await new Promise((r) => setTimeout(r, 100));
      }
      await expect(authenticateApiKey(b, secret)).rejects.toMatchObject({ code: 'unauthorized' });
    } finally {
      await a.close();
      await b.close();
      await proxy.close();
    }
  }, 15_000);
});
