/**
 * Compiled policy revisions are the tenant's own: a revision another tenant activated is not
 * found, and one tenant compiling many revisions never evicts another tenant's compiled policy.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type ActivePolicies,
  type CompiledPolicy,
  compilePolicy,
  createActivePolicies,
  createIdGenerator,
  createSaltSource,
  GatehouseError,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { appendEvents } from '../../src/operations/appendEvents.js';
import { BUDGET_POLICY } from '../support/policies.js';

const base = compilePolicy(BUDGET_POLICY);
/** A valid policy of its own revision per `n`. */
const policyNumber = (n: number) =>
  compilePolicy(`${BUDGET_POLICY}rules:\n  - { name: r${n}, when: "action == 'a.n${n}'", verdict: Block }\n`);

let store: Store;
let policies: ActivePolicies;

beforeEach(() => {
  store = openSqliteStore();
  const ids = createIdGenerator();
  policies = createActivePolicies({
    store,
    base: () => base,
    origin: undefined,
    // Every resolve reads the pointer again, so it also looks the compiled policy up again.
    refreshMs: 0,
    append: async (tx, tenantId, data) =>
      (
        await appendEvents(tx, tenantId, [{ type: 'policy.activated', session_id: '', data }], {
          ids,
          now: () => new Date().toISOString(),
          salts: createSaltSource(systemRandomBytes),
        })
      )[0]!,
  });
});
afterEach(async () => {
  await store.close();
});

async function activate(tenantId: string, policy: CompiledPolicy): Promise<void> {
  const expected = (await policies.resolve(tenantId)).revision;
  await policies.activate(tenantId, policy, { by: 'test', expected });
}

async function notFound(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatehouseError);
  expect((error as GatehouseError).code).toBe('not_found');
  return (error as GatehouseError).message;
}

describe('compiled revisions are per tenant', () => {
  it("another tenant's revision is not found, exactly like one that does not exist", async () => {
    const theirs = policyNumber(1);
    await activate('tenant-b', theirs);
    expect(await policies.compiled('tenant-b', theirs.revision)).toBe(theirs);

    const missing = 'f'.repeat(64);
    const crossMessage = await notFound(policies.compiled('tenant-a', theirs.revision));
    const missingMessage = await notFound(policies.compiled('tenant-a', missing));
    expect(crossMessage.replace(theirs.revision, '<rev>')).toBe(missingMessage.replace(missing, '<rev>'));
    // The base applies to every tenant that has not activated another revision.
    expect(await policies.compiled('tenant-a', base.revision)).toBe(base);
  });

  it("one tenant compiling many revisions does not evict another tenant's compiled policy", async () => {
    // Tenant B: an older revision (kept for replays) and the active one.
    const older = policyNumber(100);
    const active = policyNumber(101);
    await activate('tenant-b', older);
    await activate('tenant-b', active);
    const olderBefore = await policies.compiled('tenant-b', older.revision);
    for (let n = 1; n <= 80; n++) await activate('tenant-a', policyNumber(n));
    // Neither was compiled again: the very same objects come back.
    expect(await policies.compiled('tenant-b', older.revision)).toBe(olderBefore);
    expect(await policies.compiled('tenant-b', active.revision)).toBe(active);
    expect(await policies.resolve('tenant-b')).toBe(active);
  });
});
