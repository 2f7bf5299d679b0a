import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../adapters/http/index.js';
import { openPostgresStore, POSTGRES_MIGRATIONS, type PostgresStore } from '../../adapters/postgres/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  authenticateApiKey,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type DumpRecord,
  GatehouseError,
  type Store,
  type StoreTx,
  systemRandomBytes,
} from '../../src/index.js';
import { runStoreContract } from '../store/contract.js';
import { freshSchemas } from '../support/pgSchemas.js';

const url = process.env['GATEHOUSE_TEST_DATABASE_URL'];
const UNREACHABLE = 'postgres://postgres@127.0.0.1:1/test';

const freshSchema = freshSchemas('gh_test');
const open = (schema = freshSchema()) =>
  openPostgresStore({ connectionString: url!, schema, pool: { max: 5 } });

if (!url) {
  describe('PostgreSQL store', () => {
    it.skip('GATEHOUSE_TEST_DATABASE_URL not set: PostgreSQL tests skipped', () => {});
  });
}

describe.skipIf(!url)('PostgreSQL', () => {
  runStoreContract({
    name: 'PostgreSQL',
    open: () => open(),
    exec: async (store: Store, sql: string) => {
      await (store as PostgresStore).pool.query(sql);
    },
  });

  describe('PostgreSQL store specifics', () => {
    const item = (value: string) => ({
      session_id: 's1',
      key: 'budget.limit',
      value,
      type: 'fact',
      source: 'user_input',
    });

    /** A state item version 1 of `key`, as a store writes it. */
    const row = (key: string) => ({
      session_id: 's1',
      key,
      value: 'v',
      type: 'fact',
      source: 'user_input',
      trust: 3,
      sensitivity: 'public' as const,
      category: 'k',
      version: 1,
      status: 'current' as const,
      metadata: {},
      updated_at: new Date().toISOString(),
    });

    /** Two instances of the service on one schema: two pools, two Gatehouses. */
    async function twoInstances() {
      const schema = freshSchema();
      const a = await open(schema);
      const b = await open(schema);
      return {
        stores: [a, b] as const,
        ghs: [createGatehouse({ store: a }), createGatehouse({ store: b })] as const,
        close: async () => {
          await a.close();
          await b.close();
        },
      };
    }

    it('concurrent writes to one key from two instances get versions 1..N, no gaps, no duplicates', async () => {
      const { ghs, close } = await twoInstances();
      try {
        const n = 40;
        const results = await Promise.all(
          Array.from({ length: n }, (_, i) => ghs[i % 2]!.recordState(item(String(i + 1)))),
        );
        expect(results.map((r) => r.item.version).sort((x, y) => x - y)).toEqual(
          Array.from({ length: n }, (_, i) => i + 1),
        );
        const versions = await ghs[0].listItemVersions('s1', 'budget.limit');
        expect(versions.map((v) => v.version)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
        expect(versions.filter((v) => v.status === 'current')).toHaveLength(1);
        const verified = await ghs[1].verifyHistory();
        expect(verified).toMatchObject({ ok: true, checked: n });
      } finally {
        await close();
      }
    });

    it("hands out a session's remembered items only while unchanged, whoever changed them; reads asked together share one statement", async () => {
      const { stores, ghs, close } = await twoInstances();
      try {
        const [a] = stores;
        expect(await a.listItems('default', 's1')).toEqual([]);
        await ghs[1].recordState(item('100'));
        const first = await a.listItems('default', 's1');
        expect(first.map((i) => [i.value, i.version, i.status])).toEqual([['100', 1, 'current']]);
        // Unchanged: the same frozen objects, in a new array.
        const again = await a.listItems('default', 's1');
        expect(again).not.toBe(first);
        expect(again[0]).toBe(first[0]);
        expect(Object.isFrozen(again[0])).toBe(true);
        // Another instance's new version, new key and status change are each seen at once.
        await ghs[1].recordState(item('200'));
        expect((await a.listItems('default', 's1')).map((i) => [i.value, i.version])).toEqual([['200', 2]]);
        await ghs[1].recordState({ ...item('x'), key: 'budget.currency' });
        expect((await a.listItems('default', 's1')).map((i) => i.key)).toEqual([
          'budget.currency',
          'budget.limit',
        ]);
        await ghs[1].recordState({ ...item('300'), source: 'tool_output' });
        const conflicted = await a.listItems('default', 's1');
        expect(conflicted.map((i) => [i.key, i.value, i.status])).toEqual([
          ['budget.currency', 'x', 'current'],
          ['budget.limit', '200', 'conflicted'],
        ]);
        // Reads of one session asked for together share one statement, each caller its own array.
        const pool = a.pool as unknown as { query: (...args: unknown[]) => unknown };
        const query = pool.query.bind(pool);
        let statements = 0;
        pool.query = (...args: unknown[]) => {
          statements += 1;
          return query(...args);
        };
        const together = await Promise.all(Array.from({ length: 5 }, () => a.listItems('default', 's1')));
        expect(statements).toBe(1);
        expect(new Set(together).size).toBe(5);
        for (const items of together) expect(items).toEqual(conflicted);
        // Other sessions and tenants are apart.
        expect(await a.listItems('default', 's2')).toEqual([]);
        expect(await a.listItems('other', 's1')).toEqual([]);
      } finally {
        await close();
      }
    });

    it('concurrent evaluations from two instances chain seqs 1..N exactly once', async () => {
      const { ghs, close } = await twoInstances();
      try {
        const n = 40;
        await Promise.all(
          Array.from({ length: n }, (_, i) =>
            ghs[i % 2]!.evaluate({ session_id: `s${i % 3}`, action: 'files.read', params: { i } }),
          ),
        );
        const seqs: number[] = [];
        let cursor: string | undefined;
        do {
          const page = await ghs[0].readHistory({ order: 'asc', limit: 500, ...(cursor ? { cursor } : {}) });
          seqs.push(...page.events.map((e) => e.seq));
          cursor = page.next_cursor ?? undefined;
        } while (cursor);
        expect(seqs).toEqual(Array.from({ length: n }, (_, i) => i + 1));
        expect(await ghs[1].verifyHistory()).toMatchObject({ ok: true, checked: n });
      } finally {
        await close();
      }
    });

    it('commits the transactions of one event-loop turn in one COMMIT, visible to other instances once settled', async () => {
      const { stores, close } = await twoInstances();
      try {
        const pool = stores[0].pool as unknown as { connect: () => Promise<pg.PoolClient> };
        const connect = pool.connect.bind(pool);
        const counted = new WeakSet<object>();
        let commits = 0;
        pool.connect = async () => {
          const client = await connect();
          if (!counted.has(client)) {
            counted.add(client);
            const query = client.query.bind(client) as (...args: unknown[]) => unknown;
            (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
              if (args[0] === 'COMMIT') commits += 1;
              return query(...args);
            };
          }
          return client;
        };
        const items = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            stores[0].transaction(
              async (tx) => {
                expect(await tx.lockItem('t', 's1', `k.v${i}`)).toBeNull();
                await tx.insertItemVersion('t', row(`k.v${i}`));
                return `k.v${i}`;
              },
              { tenantId: 't' },
            ),
          ),
        );
        expect(commits).toBe(1);
        // Settled means committed: the other instance sees every write.
        for (const key of items) expect((await stores[1].getItem('t', 's1', key))?.value).toBe('v');
      } finally {
        await close();
      }
    });

    /**
     * Records, per database transaction of `store`, the statements its connection was asked to
     * run (BEGIN to COMMIT or ROLLBACK), as their first words.
     */
    function recordTransactions(store: PostgresStore): string[][] {
      const pool = store.pool as unknown as { connect: (...args: unknown[]) => unknown };
      const connect = pool.connect.bind(pool);
      const seen = new WeakSet<object>();
      const transactions: string[][] = [];
      const watch = (client: { query: (...args: unknown[]) => unknown }) => {
        if (seen.has(client)) return client;
        seen.add(client);
        const query = client.query.bind(client);
        let current: string[] | undefined;
        client.query = (...args: unknown[]) => {
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text;
          const words = text.replace(/\s+/g, ' ').trim().split(' ').slice(0, 4).join(' ');
          if (text === 'BEGIN') {
            current = [];
            transactions.push(current);
          }
          current?.push(words);
          if (text === 'COMMIT' || text === 'ROLLBACK') current = undefined;
          return query(...args);
        };
        return client;
      };
      // pool.query checks out with a callback; transactions with the promise form.
      pool.connect = (...args: unknown[]) => {
        const callback = args[0] as ((e: unknown, c?: unknown, done?: unknown) => void) | undefined;
        if (typeof callback === 'function') {
          return connect((e: unknown, c: { query: (...a: unknown[]) => unknown }, done: unknown) =>
            callback(e, c && watch(c), done),
          );
        }
        return (connect() as Promise<{ query: (...a: unknown[]) => unknown }>).then(watch);
      };
      return transactions;
    }

    it('commits a batch of evaluations with five statements however many callers it holds', async () => {
      const store = await open();
      try {
        const gh = createGatehouse({ store });
        await gh.evaluate({ session_id: 's1', action: 'files.read' });
        const transactions = recordTransactions(store);
        await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            gh.evaluate({ session_id: 's1', action: 'files.read', params: { i } }),
          ),
        );
        // BEGIN, the chain head's lock and the webhook list (sent together), then every caller's
        // event in one INSERT that moves the chain head, and COMMIT (sent together).
        expect(transactions.length).toBeLessThan(12);
        for (const t of transactions) {
          expect(t).toEqual([
            'BEGIN',
            'INSERT INTO chain_heads (tenant_id,',
            'SELECT id, url, events,',
            'WITH w0 AS (INSERT',
            'COMMIT',
          ]);
        }
        expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 13 });
      } finally {
        await store.close();
      }
    });

    it('locks and reads the items a batch of state writes declared with its first statements', async () => {
      const store = await open();
      try {
        const gh = createGatehouse({ store });
        await gh.recordState(item('1'));
        const transactions = recordTransactions(store);
        await Promise.all(
          Array.from({ length: 6 }, (_, i) => gh.recordState({ ...item('2'), key: `k.v${i}` })),
        );
        expect(transactions.length).toBeLessThan(6);
        for (const t of transactions) {
          // BEGIN, the chain head, the webhooks, then every declared item's lock, read and open
          // conflicts, one statement each for the whole batch; no caller sent a statement of its
          // own, so none needed a savepoint.
          const first = ['BEGIN', 'INSERT INTO chain_heads', 'SELECT id, url,'];
          const declared = [
            'SELECT pg_advisory_xact_lock(',
            'SELECT w.n, v.session_id,',
            'SELECT w.n, c.conflict_id,',
          ];
          expect(t.slice(0, 6).map((w, i) => w.startsWith([...first, ...declared][i]!))).toEqual(
            Array(6).fill(true),
          );
          expect(t.filter((w) => w.startsWith('SELECT pg_advisory_xact_lock'))).toHaveLength(1);
          expect(t.some((w) => w.includes('SAVEPOINT'))).toBe(false);
          expect(t.at(-1)).toBe('COMMIT');
        }
        const items = await Promise.all(
          Array.from({ length: 6 }, (_, i) => store.getItem('default', 's1', `k.v${i}`)),
        );
        expect(items.map((x) => x?.value)).toEqual(Array(6).fill('2'));
        // Lower-trust writes conflict: their open conflicts were read with the items, so these
        // callers send no statement of their own either.
        transactions.length = 0;
        const conflicting = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            gh.recordState({ ...item('3'), key: `k.v${i}`, source: 'tool_output' }),
          ),
        );
        expect(conflicting.map((r) => r.outcome)).toEqual(Array(6).fill('conflict'));
        expect(transactions.length).toBeGreaterThan(0);
        for (const t of transactions) {
          expect(t.some((w) => w.includes('SAVEPOINT'))).toBe(false);
          expect(t.at(-1)).toBe('COMMIT');
        }
        expect(await gh.listConflicts({ session_id: 's1', status: 'open' })).toHaveLength(6);
        expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 13 });
      } finally {
        await store.close();
      }
    });

    it('undoes a caller whose statement fails after writes it held back, and only that caller', async () => {
      const store = await open();
      try {
        const gh = createGatehouse({ store });
        const w = await gh.createWebhook({ url: 'https://hooks.example.com/p', events: ['*'] });
        const stored = (await store.getWebhook('default', w.id))!;
        const opts = { tenantId: 'default' };
        const transactions = recordTransactions(store);
        const results = await Promise.allSettled([
          store.transaction((tx) => tx.insertItemVersion('default', row('k.first')), opts),
          store.transaction(async (tx) => {
            await tx.insertItemVersion('default', row('k.failed'));
            await tx.insertWebhook('default', stored); // the same id again: refused by the database
          }, opts),
          store.transaction((tx) => tx.insertItemVersion('default', row('k.second')), opts),
        ]);
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect(transactions).toHaveLength(1);
        expect(await store.getItem('default', 's1', 'k.first')).not.toBeNull();
        expect(await store.getItem('default', 's1', 'k.failed')).toBeNull();
        expect(await store.getItem('default', 's1', 'k.second')).not.toBeNull();
      } finally {
        await store.close();
      }
    });

    it('fails every caller of a batch whose held-back writes the database refuses at COMMIT, and writes nothing', async () => {
      const store = await open();
      try {
        const gh = createGatehouse({ store });
        await gh.recordState(item('100'));
        // A refusal no input can cause (inputs are checked storable, keys unique by construction):
        // what a full disk or a lost connection would do to the batch's last statement.
        await store.pool.query(
          `ALTER TABLE state_versions ADD CONSTRAINT refuse_test CHECK (value <> 'refused')`,
        );
        const opts = { tenantId: 'default' };
        const results = await Promise.allSettled([
          store.transaction((tx) => tx.insertItemVersion('default', row('k.one')), opts),
          store.transaction(
            (tx) => tx.insertItemVersion('default', { ...row('k.bad'), value: 'refused' }),
            opts,
          ),
          store.transaction((tx) => tx.insertItemVersion('default', row('k.two')), opts),
        ]);
        expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
        for (const key of ['k.one', 'k.bad', 'k.two'])
          expect(await store.getItem('default', 's1', key)).toBeNull();
        // The connection went back healthy and the chain goes on.
        await gh.recordState(item('200'));
        expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 2 });
      } finally {
        await store.close();
      }
    });

    it('refuses the writes of a transaction used after it ended, held-back ones too', async () => {
      const store = await open();
      try {
        let kept: StoreTx | undefined;
        await store.transaction(
          async (tx) => {
            kept = tx;
          },
          { tenantId: 't' },
        );
        await expect(kept!.insertItemVersion('t', row('k.late'))).rejects.toThrow(/already ended/);
        await expect(kept!.getItem('t', 's1', 'k.late')).rejects.toThrow(/already ended/);
        expect(await store.getItem('t', 's1', 'k.late')).toBeNull();
      } finally {
        await store.close();
      }
    });

    it('refuses a transaction that declared one tenant and appends to another', async () => {
      const store = await open();
      try {
        await expect(store.transaction((tx) => tx.lockChainHead('b'), { tenantId: 'a' })).rejects.toThrow(
          /declared tenant 'a' but appends to tenant 'b'/,
        );
        // Undeclared, it may (it runs alone).
        expect(await store.transaction((tx) => tx.lockChainHead('b'))).toBeNull();
      } finally {
        await store.close();
      }
    });

    it('two instances, two tenants, the same keys: no deadlock, versions gap-free, both chains verify', async () => {
      const { ghs, close } = await twoInstances();
      try {
        const n = 48;
        await Promise.all(
          Array.from({ length: n }, (_, i) => {
            const ctx = { tenantId: i % 4 < 2 ? 'a' : 'b' };
            return i % 3 === 0
              ? ghs[i % 2]!.evaluate({ session_id: 's1', action: 'files.read', params: { i } }, ctx)
              : ghs[i % 2]!.recordState({ ...item(String(i)), key: `k.v${i % 3}` }, ctx);
          }),
        );
        for (const tenantId of ['a', 'b']) {
          for (const key of ['k.v1', 'k.v2']) {
            const versions = (await ghs[0].listItemVersions('s1', key, { tenantId })).map((v) => v.version);
            expect(versions).toEqual(Array.from({ length: versions.length }, (_, i) => i + 1));
          }
          expect((await ghs[1].verifyHistory({ tenantId })).ok).toBe(true);
        }
      } finally {
        await close();
      }
    });

    describe('API-key cache', () => {
      const deps = () => ({ ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() });
      /** Counts the key lookups that reach PostgreSQL through this store's pool. */
      function countLookups(store: PostgresStore): () => number {
        let lookups = 0;
        const pool = store.pool as unknown as { query: (...args: unknown[]) => unknown };
        const query = pool.query.bind(pool);
        pool.query = (...args: unknown[]) => {
          // A text, or a query config (the store names its prepared statements).
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
          if (text?.includes('FROM api_keys WHERE hash')) lookups += 1;
          return query(...args);
        };
        return () => lookups;
      }
      const refused = (p: Promise<unknown>) =>
        expect(p).rejects.toSatisfy((e) => e instanceof GatehouseError && e.code === 'unauthorized');

      it('answers from the cache while listening; refuses a revoked key at once here and on NOTIFY elsewhere', async () => {
        const { stores, close } = await twoInstances();
        try {
          const [a, b] = stores;
          const { secret, key } = await createApiKey(a, deps(), { scopes: ['gate:evaluate'] });
          const lookups = countLookups(b);
          for (let i = 0; i < 5; i++) await authenticateApiKey(b, secret);
          expect(lookups()).toBe(1);
          await authenticateApiKey(a, secret);
          expect(await a.revokeApiKey(key.id, new Date().toISOString())).toBe(true);
          await refused(authenticateApiKey(a, secret));
          // The other instance hears the same NOTIFY; until its socket is read it may still answer
          // from its cache (the documented bound), never longer.
          for (let i = 0; ; i++) {
            const ok = await authenticateApiKey(b, secret).then(
              () => true,
              () => false,
            );
            if (!ok) break;
            expect(i).toBeLessThan(100);
            await new Promise((r) => setTimeout(r, 10));
          }
          await refused(authenticateApiKey(b, secret));
        } finally {
          await close();
        }
      });

      it('stops caching when its LISTEN connection drops, so a revocation it cannot hear is still refused', async () => {
        const { stores, close } = await twoInstances();
        try {
          const [a, b] = stores;
          const { secret, key } = await createApiKey(a, deps());
          const lookups = countLookups(b);
          await authenticateApiKey(b, secret);
          await authenticateApiKey(b, secret);
          expect(lookups()).toBe(1);
          const dropped = await a.pool.query(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
            [`gatehouse-keys:${b.schema}`],
          );
          expect(dropped.rowCount).toBeGreaterThan(0);
          // Until b notices the drop it may answer from its cache; after that, from the database.
          for (let i = 0; lookups() < 2; i++) {
            expect(i).toBeLessThan(100);
            await new Promise((r) => setTimeout(r, 20));
            await authenticateApiKey(b, secret);
          }
          expect(await a.revokeApiKey(key.id, new Date().toISOString())).toBe(true);
          await refused(authenticateApiKey(b, secret));
        } finally {
          await close();
        }
      });

      it('ends a history stream on one instance once its key is revoked on another', async () => {
        const { stores, ghs, close } = await twoInstances();
        const app = createHttpApp({ gatehouse: ghs[1], rateLimit: false, historyStream: { pollMs: 60_000 } });
        try {
          const [a, b] = stores;
          const reader = await createApiKey(a, deps(), { scopes: ['history:read'] });
          const writer = await createApiKey(a, deps(), { scopes: ['admin'] });
          const res = await app.request('/v1/history/stream', {
            headers: { authorization: `Bearer ${reader.secret}` },
          });
          expect(res.status).toBe(200);
          const body = res.body!.pipeThrough(new TextDecoderStream()).getReader();
          expect((await body.read()).value).toContain(': following after seq 0');
          expect(await a.revokeApiKey(reader.key.id, new Date().toISOString())).toBe(true);
          // b hears the NOTIFY when its listening socket is read (the documented bound).
          for (let i = 0; ; i++) {
            const ok = await authenticateApiKey(b, reader.secret).then(
              () => true,
              () => false,
            );
            if (!ok) break;
            expect(i).toBeLessThan(100);
            await new Promise((r) => setTimeout(r, 10));
          }
          const written = await app.request('/v1/state/items', {
            method: 'POST',
            headers: { authorization: `Bearer ${writer.secret}`, 'content-type': 'application/json' },
            body: JSON.stringify(item('1')),
          });
          expect(written.status).toBe(201);
          expect((await body.read()).value).toBe(': closed: the API key was revoked\n\n');
          expect((await body.read()).done).toBe(true);
        } finally {
          app.close();
          await close();
        }
      });
    });

    it('two instances opening a fresh schema at once both succeed and migrate once', async () => {
      const schema = freshSchema();
      const [a, b] = await Promise.all([open(schema), open(schema)]);
      try {
        const { rows } = await a.pool.query('SELECT version FROM schema_migrations ORDER BY version');
        expect(rows.map((r) => Number(r.version))).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
        await createGatehouse({ store: b }).recordState(item('1'));
        expect((await createGatehouse({ store: a }).getItem('s1', 'budget.limit')).value).toBe('1');
      } finally {
        await a.close();
        await b.close();
      }
      const again = await open(schema);
      expect((await again.pool.query('SELECT count(*)::int AS n FROM schema_migrations')).rows[0]).toEqual({
        n: POSTGRES_MIGRATIONS.length,
      });
      await again.close();
    });

    it('dispatchers on two instances never claim the same delivery', async () => {
      const { stores, ghs, close } = await twoInstances();
      try {
        await ghs[0].createWebhook({ url: 'https://hooks.example.com/gh', events: ['*'] });
        const n = 30;
        for (let i = 0; i < n; i++) await ghs[i % 2]!.recordState({ ...item('1'), key: `k.n${i}` });
        const now = new Date(Date.now() + 1000).toISOString();
        const lease = new Date(Date.now() + 60_000).toISOString();
        const claimAll = async (store: PostgresStore) => {
          const ids: string[] = [];
          for (;;) {
            const batch = await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 3 });
            if (batch.length === 0) return ids;
            ids.push(...batch.map((c) => c.delivery.delivery_id));
          }
        };
        const [fromA, fromB] = await Promise.all([claimAll(stores[0]), claimAll(stores[1])]);
        const all = [...fromA, ...fromB];
        expect(all).toHaveLength(n);
        expect(new Set(all).size).toBe(n);
      } finally {
        await close();
      }
    });

    it('returns seq, version, trust and attempts as numbers and event data exactly as written', async () => {
      const store = await open();
      try {
        const gh = createGatehouse({ store });
        await gh.recordState({ ...item('5000'), metadata: { z: 1, a: [1, 'x'], m: { b: null } } });
        const [event] = await store.queryEvents('default', { order: 'asc', limit: 1 });
        expect(typeof event!.seq).toBe('number');
        expect(Object.keys(event!.data['metadata'] as object)).toEqual(['z', 'a', 'm']);
        const { value: sealed } = await store.scanEvents('default')[Symbol.asyncIterator]().next();
        const raw = await store.pool.query('SELECT data FROM events WHERE seq = 1');
        expect(raw.rows[0].data).toBe(JSON.stringify(sealed![0]!.data));
        const current = await store.getItem('default', 's1', 'budget.limit');
        expect(current).toMatchObject({ version: 1, trust: 3 });
        expect(Object.keys(current!.metadata)).toEqual(['z', 'a', 'm']);
      } finally {
        await store.close();
      }
    });

    it('refuses TRUNCATE on events too', async () => {
      const store = await open();
      try {
        await createGatehouse({ store }).recordState(item('1'));
        await expect(store.pool.query('TRUNCATE events')).rejects.toThrow(/append-only/);
      } finally {
        await store.close();
      }
    });

    it('ping answers while the database is up; rejects when it is unreachable; close is safe twice', async () => {
      const store = await open();
      await expect(store.ping()).resolves.toBeUndefined();
      await store.close();
      await store.close();
      await expect(store.ping()).rejects.toMatchObject({ code: 'unavailable' });

      const down = await openPostgresStore({ connectionString: UNREACHABLE, migrate: false });
      await expect(down.ping()).rejects.toMatchObject({ code: 'unavailable' });
      await down.close();
      await expect(openPostgresStore({ connectionString: UNREACHABLE })).rejects.toThrow();
    });

    it('keeps its schema when the URL carries its own startup options', async () => {
      const schema = freshSchema();
      const withOptions = `${url}${url!.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c statement_timeout=4321')}`;
      const store = await openPostgresStore({ connectionString: withOptions, schema });
      try {
        await createGatehouse({ store }).recordState(item('1'));
        expect((await store.pool.query('SHOW statement_timeout')).rows[0].statement_timeout).toBe('4321ms');
        const { rows } = await store.pool.query(`SELECT count(*)::int AS n FROM "${schema}".events`);
        expect(rows[0]).toEqual({ n: 1 });
      } finally {
        await store.close();
      }
    });

    const collect = async (rows: AsyncIterable<DumpRecord>) => {
      const out: DumpRecord[] = [];
      for await (const r of rows) out.push(r);
      return out;
    };

    it('moves a dump from SQLite to PostgreSQL and back, row for row, chain intact', async () => {
      const sqlite = openSqliteStore();
      const pgStore = await open();
      const back = openSqliteStore();
      try {
        const gh = createGatehouse({ store: sqlite });
        await gh.createWebhook({ url: 'https://hooks.example.com/a', events: ['*'] });
        await gh.recordState({ ...item('5000'), metadata: { note: 'é ✓ "quoted"' } });
        await gh.recordState(item('1'));
        await gh.recordState({ ...item('2'), source: 'tool_output' });
        await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 12.5 } });
        const original = await collect(sqlite.dumpRows());
        expect(await pgStore.loadRows(sqlite.dumpRows())).toBe(original.length);
        expect(await collect(pgStore.dumpRows({ pageSize: 3 }))).toEqual(original);
        expect((await createGatehouse({ store: pgStore }).verifyHistory()).ok).toBe(true);
        expect(await back.loadRows(pgStore.dumpRows())).toBe(original.length);
        expect(await collect(back.dumpRows())).toEqual(original);
      } finally {
        await sqlite.close();
        await pgStore.close();
        await back.close();
      }
    });

    it('loads large tables in batches and refuses unknown tables and columns', async () => {
      const store = await open();
      try {
        const versions: DumpRecord[] = Array.from({ length: 1234 }, (_, i) => ({
          table: 'state_versions',
          row: {
            tenant_id: 'default',
            session_id: 's1',
            key: `k.n${String(i).padStart(5, '0')}`,
            version: 1,
            value: String(i),
            type: 'fact',
            source: 'user_input',
            trust: 3,
            sensitivity: 'public',
            category: 'k',
            metadata: '{}',
            updated_at: '2026-01-01T00:00:00.000Z',
          },
        }));
        const items: DumpRecord[] = versions.map(({ row }) => ({
          table: 'state_items',
          row: { tenant_id: 'default', session_id: 's1', key: row['key']!, version: 1, status: 'current' },
        }));
        async function* rows() {
          yield* versions;
          yield* items;
        }
        expect(await store.loadRows(rows())).toBe(2468);
        expect(await store.listItems('default', 's1')).toHaveLength(1234);
        expect(await collect(store.dumpRows({ pageSize: 500 }))).toEqual([...versions, ...items]);

        const empty = await open();
        try {
          async function* bad(record: DumpRecord) {
            yield record;
          }
          const evil = { table: 'events; DROP TABLE events', row: {} } as unknown as DumpRecord;
          await expect(empty.loadRows(bad(evil))).rejects.toMatchObject({ code: 'invalid_request' });
          const badColumn = { table: 'api_keys', row: { 'id) VALUES (1); --': 'x' } } as DumpRecord;
          await expect(empty.loadRows(bad(badColumn))).rejects.toMatchObject({ code: 'invalid_request' });
          expect(await collect(empty.dumpRows())).toEqual([]);
        } finally {
          await empty.close();
        }
      } finally {
        await store.close();
      }
    });

    it('dumps one consistent snapshot while another instance keeps appending', async () => {
      const { stores, ghs, close } = await twoInstances();
      try {
        for (let i = 0; i < 5; i++) await ghs[0].recordState({ ...item('1'), key: `k.n${i}` });
        const dump = stores[0].dumpRows({ pageSize: 1 })[Symbol.asyncIterator]();
        const first = await dump.next();
        for (let i = 5; i < 8; i++) await ghs[1].recordState({ ...item('1'), key: `k.n${i}` });
        const rows = [first.value as DumpRecord];
        for (let r = await dump.next(); !r.done; r = await dump.next()) rows.push(r.value);
        const events = rows.filter((r) => r.table === 'events');
        const [head] = rows.filter((r) => r.table === 'chain_heads');
        expect(events.map((e) => e.row['seq'])).toEqual([1, 2, 3, 4, 5]);
        expect(head!.row['seq']).toBe(5);
      } finally {
        await close();
      }
    });

    it('gives the connection back when a dump is abandoned half-way', async () => {
      const store = await openPostgresStore({
        connectionString: url!,
        schema: freshSchema(),
        pool: { max: 1, connectionTimeoutMillis: 2000 },
      });
      try {
        const gh = createGatehouse({ store });
        for (let i = 0; i < 3; i++) await gh.recordState({ ...item('1'), key: `k.n${i}` });
        for await (const _ of store.dumpRows({ pageSize: 1 })) break;
        expect(await store.listItems('default', 's1')).toHaveLength(3);
      } finally {
        await store.close();
      }
    });

    it('refuses a schema name that is not a plain identifier', async () => {
      await expect(
        openPostgresStore({ connectionString: url!, schema: 'x; DROP TABLE y' }),
      ).rejects.toMatchObject({
        code: 'invalid_request',
      });
    });
  });
});
