/**
 * The SQLite store's API-key cache: every authenticated request looks its key up, so active keys
 * are remembered; a revocation through this store, another store on the same file (another
 * process) or raw SQL is refused at the very next lookup.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from '../../adapters/sqlite/index.js';
import {
  authenticateApiKey,
  createApiKey,
  createIdGenerator,
  GatehouseError,
  systemRandomBytes,
} from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-keycache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** Counts the lookups that reach SQLite (the prepared statement behind findApiKeyByHash). */
function countLookups(store: SqliteStore): () => number {
  let lookups = 0;
  const db = store.database as { prepare: SqliteStore['database']['prepare'] };
  const prepare = db.prepare.bind(db);
  db.prepare = (sql) => {
    const statement = prepare(sql);
    if (!sql.includes('FROM api_keys WHERE hash')) return statement;
    const get = statement.get.bind(statement);
    return {
      ...statement,
      get: (...args: unknown[]) => {
        lookups += 1;
        return get(...args);
      },
    };
  };
  return () => lookups;
}

async function twoStores() {
  const filename = join(dir, `keys-${n++}.db`);
  const a = openSqliteStore({ filename });
  const b = openSqliteStore({ filename });
  const { secret, key } = await createApiKey(
    a,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['gate:evaluate'] },
  );
  return { a, b, secret, key, close: async () => Promise.all([a.close(), b.close()]) };
}

const refused = (p: Promise<unknown>) =>
  expect(p).rejects.toSatisfy((e) => e instanceof GatehouseError && e.code === 'unauthorized');

describe('SQLite API-key cache', () => {
  it('looks an active key up once, then answers from the cache', async () => {
    const { a, secret, close } = await twoStores();
    const lookups = countLookups(a);
    for (let i = 0; i < 5; i++)
      expect((await authenticateApiKey(a, secret)).scopes).toEqual(['gate:evaluate']);
    expect(lookups()).toBe(1);
    await close();
  });

  it('refuses a key at once after another store on the same file revoked it', async () => {
    const { a, b, secret, key, close } = await twoStores();
    await authenticateApiKey(a, secret);
    await authenticateApiKey(a, secret);
    expect(await b.revokeApiKey(key.id, new Date().toISOString())).toBe(true);
    await refused(authenticateApiKey(a, secret));
    await close();
  });

  it('refuses a key at once after this store or raw SQL revoked it', async () => {
    const { a, secret, key, close } = await twoStores();
    await authenticateApiKey(a, secret);
    expect(await a.revokeApiKey(key.id, new Date().toISOString())).toBe(true);
    await refused(authenticateApiKey(a, secret));

    const other = await createApiKey(a, {
      ids: createIdGenerator(),
      randomBytes: systemRandomBytes,
      now: new Date(),
    });
    await authenticateApiKey(a, other.secret);
    a.database.exec(
      `UPDATE api_keys SET revoked_at = '2026-01-01T00:00:00.000Z' WHERE id = '${other.key.id}'`,
    );
    await refused(authenticateApiKey(a, other.secret));
    await close();
  });

  it('accepts a key created by another store at once (misses are never remembered)', async () => {
    const { a, b, close } = await twoStores();
    const fixed = () => new Uint8Array(32).fill(7);
    const token = `gh_${Buffer.alloc(32, 7).toString('base64url')}`;
    await refused(authenticateApiKey(a, token));
    const made = await createApiKey(b, { ids: createIdGenerator(), randomBytes: fixed, now: new Date() });
    expect(made.secret).toBe(token);
    expect((await authenticateApiKey(a, made.secret)).keyId).toBe(made.key.id);
    await close();
  });
});
