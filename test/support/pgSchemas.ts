/**
 * PostgreSQL schemas for tests: a test file names fresh ones and they are all dropped after its
 * tests. Only where GATEHOUSE_TEST_DATABASE_URL points at a database it may create schemas in.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';

/** The test database, when there is one. */
export const testDatabaseUrl = process.env['GATEHOUSE_TEST_DATABASE_URL'];

/**
 * Names a fresh schema `<prefix>_<random hex>` per call; the calling file's `afterAll` drops every
 * one it named. Call it at the top of a test file.
 */
export function freshSchemas(prefix: string): () => string {
  const schemas = new Set<string>();
  afterAll(async () => {
    if (!testDatabaseUrl || schemas.size === 0) return;
    const client = new pg.Client({ connectionString: testDatabaseUrl });
    await client.connect();
    try {
      for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await client.end();
    }
  });
  return () => {
    const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
    schemas.add(schema);
    return schema;
  };
}
