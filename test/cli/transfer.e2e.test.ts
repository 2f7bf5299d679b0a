/**
 * `gatehouse export` and `gatehouse import`: moving an embedded database to another store,
 * through the real CLI.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../adapters/postgres/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse, type Store } from '../../src/index.js';

const run = promisify(execFile);
const cli = join(import.meta.dirname, '../../dist/adapters/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-transfer-'));
const source = join(dir, 'source.db');
const dump = join(dir, 'dump.jsonl');
const pgUrl = process.env['GATEHOUSE_TEST_DATABASE_URL'];

beforeAll(async () => {
  const store = openSqliteStore({ filename: source });
  const gh = createGatehouse({ store });
  await gh.recordState({
    session_id: 's',
    key: 'budget.limit',
    value: '5000',
    type: 'fact',
    source: 'user_input',
  });
  await gh.recordState({
    session_id: 's',
    key: 'budget.limit',
    value: '1',
    type: 'fact',
    source: 'tool_output',
  });
  await gh.evaluate({ session_id: 's', action: 'payments.transfer', params: { amount: 9000 } });
  await store.close();
  await run(process.execPath, [cli, 'export', '--database', source, '--output', dump]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The moved store goes on: a new decision chains on the last moved event. */
async function appendsAfterMove(store: Store) {
  try {
    const gh = createGatehouse({ store });
    await gh.evaluate({ session_id: 's', action: 'files.read' });
    expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 4 });
  } finally {
    await store.close();
  }
}

async function history(args: string[]) {
  return (await run(process.execPath, [cli, 'history', '--json', ...args])).stdout;
}

describe('export and import', () => {
  it('moves a SQLite database into a new SQLite file with the same history', async () => {
    const target = join(dir, 'target.db');
    const { stdout } = await run(process.execPath, [cli, 'import', dump, '--database', target]);
    expect(stdout).toMatch(/imported \d+ rows/);
    expect(stdout).toContain('tenant default: chain ok, 3 events');
    expect(await history(['--database', target])).toBe(await history(['--database', source]));
    const again = await run(process.execPath, [cli, 'import', dump, '--database', target]).catch((e) => e);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('not empty');
    await appendsAfterMove(openSqliteStore({ filename: target }));
  });

  describe.skipIf(!pgUrl)('into PostgreSQL', () => {
    const schema = `gh_transfer_${randomBytes(4).toString('hex')}`;
    const target = () => ['--database-url', pgUrl!, '--database-schema', schema];
    afterAll(async () => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    });

    it('moves a SQLite database into PostgreSQL with the same history', async () => {
      const { stdout } = await run(process.execPath, [cli, 'import', dump, ...target()]);
      expect(stdout).toContain('tenant default: chain ok, 3 events');
      expect(await history(target())).toBe(await history(['--database', source]));
      await appendsAfterMove(await openPostgresStore({ connectionString: pgUrl!, schema }));
    });
  });
});
