/**
 * docs/cli.md: a mistyped database never becomes a new, empty one. On PostgreSQL the database is
 * a schema: commands that only work on an existing database refuse a schema Gatehouse never set
 * up, naming it, and create nothing; `import` (which may create one) still does. Real PostgreSQL
 * (GATEHOUSE_TEST_DATABASE_URL), real CLI processes.
 */
import { rmSync } from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { gatehouse, tempDir } from './runCli.js';

const url = process.env['GATEHOUSE_TEST_DATABASE_URL'];
const dir = tempDir('pg-schema-typo');
const suffix = `${process.pid}_${Date.now().toString(36)}`;
const typo = `cli_typo_${suffix}`;
const real = `cli_real_${suffix}`;

async function schemaExists(schema: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (
      ((await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount ?? 0) > 0
    );
  } finally {
    await client.end();
  }
}

describe.skipIf(!url)('a PostgreSQL schema that does not exist', () => {
  afterAll(async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${typo} CASCADE`);
    await client.query(`DROP SCHEMA IF EXISTS ${real} CASCADE`);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['verify', 'export', 'history', 'keys list'])(
    '%s refuses it, naming it, and creates nothing',
    async (command) => {
      const r = await gatehouse(dir, [
        ...command.split(' '),
        '--database-url',
        url!,
        '--database-schema',
        typo,
      ]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `gatehouse: No Gatehouse database in PostgreSQL schema ${typo} (check --database-schema or GATEHOUSE_DB_SCHEMA; \`gatehouse serve\` creates one).\n`,
      );
      expect(await schemaExists(typo)).toBe(false);
    },
  );

  it('import creates one where keys list refused, and keys list then opens it', async () => {
    const before = await gatehouse(dir, ['keys', 'list', '--database-url', url!, '--database-schema', real]);
    expect(before.code).toBe(1);
    expect(await schemaExists(real)).toBe(false);
    const src = await gatehouse(dir, ['keys', 'create', '--database', 'src.db']);
    expect(src.code).toBe(0);
    expect((await gatehouse(dir, ['export', '--database', 'src.db', '--output', 'dump.jsonl'])).code).toBe(0);
    const imported = await gatehouse(dir, [
      'import',
      'dump.jsonl',
      '--database-url',
      url!,
      '--database-schema',
      real,
    ]);
    expect(imported.code).toBe(0);
    const listed = await gatehouse(dir, ['keys', 'list', '--database-url', url!, '--database-schema', real]);
    expect(listed.stdout).toMatch(/tenant=default/);
    expect(listed.code).toBe(0);
  });
});
