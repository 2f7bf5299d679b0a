import { describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../adapters/postgres/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse, GatehouseError, type Store } from '../../src/index.js';
import { MAX_WEBHOOKS_PER_TENANT } from '../../src/operations/webhookOperations.js';
import { freshSchemas, testDatabaseUrl } from '../support/pgSchemas.js';

const url = testDatabaseUrl;
const freshSchema = freshSchemas('gh_hooklimit');

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
    const schema = freshSchema();
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
