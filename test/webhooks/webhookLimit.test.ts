/**
 * A tenant has at most MAX_WEBHOOKS_PER_TENANT webhooks: every event is queued once per matching
 * webhook in the transaction that records it, so without a bound one tenant could make each of its
 * evaluations write thousands of rows. Creations at once count one after the other, on one store
 * and across PostgreSQL instances.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../adapters/postgres/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse, GatehouseError, type Store } from '../../src/index.js';
import { MAX_WEBHOOKS_PER_TENANT } from '../../src/operations/webhookOperations.js';

const url = process.env['GATEHOUSE_TEST_DATABASE_URL'];
const schemas: string[] = [];
afterAll(async () => {
  if (!url || schemas.length === 0) return;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

const hook = { url: 'https://hooks.example.com/h', events: ['*'] as ['*'] };
const gatehouseOn = (store: Store) => createGatehouse({ store, checkWebhookUrl: async () => undefined });

/** Creates `count` webhooks at once through `stores` in turn; the outcomes, in order. */
async function createAtOnce(stores: readonly Store[], count: number, tenantId: string) {
  const instances = stores.map(gatehouseOn);
  return Promise.allSettled(
    Array.from({ length: count }, (_, n) =>
      instances[n % instances.length]!.createWebhook(hook, { tenantId }),
    ),
  );
}

describe('webhooks per tenant', () => {
  it('refuses one more than the limit with a clear message, per tenant, and takes one again after a delete', async () => {
    const store = openSqliteStore();
    try {
      const gh = gatehouseOn(store);
      const made = await createAtOnce([store], MAX_WEBHOOKS_PER_TENANT, 'acme');
      expect(made.every((r) => r.status === 'fulfilled')).toBe(true);
      const refused = await gh.createWebhook(hook, { tenantId: 'acme' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(GatehouseError);
      expect(refused).toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining(`at most ${MAX_WEBHOOKS_PER_TENANT} webhooks`),
      });
      expect(await gh.listWebhooks({ tenantId: 'acme' })).toHaveLength(MAX_WEBHOOKS_PER_TENANT);
      // Another tenant's count is its own.
      await expect(gh.createWebhook(hook, { tenantId: 'other' })).resolves.toMatchObject({
        status: 'active',
      });
      const [first] = await gh.listWebhooks({ tenantId: 'acme' });
      await gh.deleteWebhook(first!.id, { tenantId: 'acme' });
      await expect(gh.createWebhook(hook, { tenantId: 'acme' })).resolves.toMatchObject({ status: 'active' });
    } finally {
      await store.close();
    }
  });

  it.skipIf(!url)('two PostgreSQL instances creating at once stop at the limit together', async () => {
    const schema = `gh_hooklimit_${randomBytes(6).toString('hex')}`;
    schemas.push(schema);
    const a = await openPostgresStore({ connectionString: url!, schema });
    const b = await openPostgresStore({ connectionString: url!, schema });
    try {
      const outcomes = await createAtOnce([a, b], MAX_WEBHOOKS_PER_TENANT + 8, 'acme');
      expect(outcomes.filter((r) => r.status === 'fulfilled')).toHaveLength(MAX_WEBHOOKS_PER_TENANT);
      expect(await gatehouseOn(a).listWebhooks({ tenantId: 'acme' })).toHaveLength(MAX_WEBHOOKS_PER_TENANT);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
