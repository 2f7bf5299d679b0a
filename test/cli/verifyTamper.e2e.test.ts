/**
 * `gatehouse verify` on a SQLite file someone changed directly: events deleted at the start of a
 * chain that was never pruned are a break, not a "pruned history" awaiting its key; events deleted
 * at the end are named against a checkpoint kept elsewhere.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse } from '../../src/index.js';
import { gatehouse, tempDir } from './runCli.js';

const dir = tempDir('verify-tamper');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A database of six state changes at `file`; `sql` then run on it behind the store's back. */
async function database(file: string, sql?: string): Promise<void> {
  const store = openSqliteStore({ filename: join(dir, file) });
  const gh = createGatehouse({ store });
  for (let i = 0; i < 6; i += 1) {
    await gh.recordState({
      session_id: 's1',
      key: 'agent.note',
      value: `v${i}`,
      type: 'fact',
      source: 'user_input',
    });
  }
  if (sql !== undefined) store.database.exec(sql);
  await store.close();
}

beforeAll(async () => {
  expect((await gatehouse(dir, ['checkpoint', 'keygen', '--out', 'ck.pem'])).code).toBe(0);
});

describe('gatehouse verify after a direct change to the database', () => {
  it('reports a prefix deleted without a prune as BROKEN, without a public key too', async () => {
    await database(
      'prefix.db',
      'DROP TRIGGER events_no_delete; DELETE FROM event_values WHERE seq <= 3; DELETE FROM events WHERE seq <= 3;',
    );
    const r = await gatehouse(dir, ['verify', '--database', 'prefix.db']);
    expect(r.stdout).toMatch(/^tenant default: BROKEN at seq 4: events before seq 4 are missing/);
    expect(r.stdout).not.toMatch(/cannot verify/);
    expect(r.code).toBe(1);
  });

  it('names the first missing seq when events after a checkpoint kept elsewhere were deleted', async () => {
    await database('head.db');
    const cp = await gatehouse(dir, [
      'checkpoint',
      'create',
      '--database',
      'head.db',
      '--checkpoint-key',
      'ck.pem',
      '--out',
      'head.json',
    ]);
    expect(cp.code).toBe(0);
    // The stored checkpoint at the head even lets the table take the DELETE.
    const store = openSqliteStore({ filename: join(dir, 'head.db') });
    store.database.exec('DELETE FROM event_values WHERE seq >= 5; DELETE FROM events WHERE seq >= 5;');
    await store.close();
    const r = await gatehouse(dir, [
      'verify',
      '--database',
      'head.db',
      '--checkpoint',
      'head.json',
      '--public-key',
      'ck.pem.pub',
    ]);
    expect(r.stdout).toMatch(
      /^tenant default: BROKEN at seq 5: the chain ends before the checkpoint at seq 6/,
    );
    expect(r.code).toBe(1);
  });
});
