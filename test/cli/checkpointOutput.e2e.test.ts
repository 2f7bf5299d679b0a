/**
 * The checkpoint files of `prune --checkpoint-out`, `checkpoint create --out` and `retention run
 * --checkpoint-dir`, through the real CLI on real SQLite files. A prune cannot be repeated, and a
 * pruned history is verified from its checkpoint: an output that cannot be written is refused
 * before anything changes, and a write that still fails hands the checkpoint over on stderr.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse } from '../../src/index.js';
import { gatehouse, tempDir } from './runCli.js';

const dir = tempDir('checkpoint-output');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A SQLite database with `events` old state changes in each tenant. */
async function databaseWith(name: string, tenants: string[], events: number): Promise<string> {
  const store = openSqliteStore({ filename: join(dir, name) });
  const gh = createGatehouse({ store, clock: () => new Date('2024-01-01T00:00:00.000Z') });
  for (const tenantId of tenants) {
    for (let i = 0; i < events; i += 1) {
      await gh.recordState(
        { session_id: 's', key: 'agent.note', value: `v${i}`, type: 'fact', source: 'user_input' },
        { tenantId },
      );
    }
  }
  await store.close();
  return name;
}

/** The seqs of a tenant's history, oldest first. */
async function seqs(db: string, tenant = 'default'): Promise<number[]> {
  const r = await gatehouse(dir, [
    'history',
    '--database',
    db,
    '--tenant',
    tenant,
    '--json',
    '--limit',
    '100',
  ]);
  expect(r.code).toBe(0);
  return r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).seq as number)
    .reverse();
}

/** Rows of the checkpoints table. */
async function storedCheckpoints(db: string): Promise<number> {
  const store = openSqliteStore({ filename: join(dir, db) });
  let n = 0;
  for await (const record of store.dumpRows()) if (record.table === 'checkpoints') n += 1;
  await store.close();
  return n;
}

/** The checkpoint JSON printed after the first line of stderr. */
function checkpointOnStderr(stderr: string): Record<string, unknown> {
  return JSON.parse(stderr.slice(stderr.indexOf('\n') + 1));
}

beforeAll(async () => {
  expect((await gatehouse(dir, ['checkpoint', 'keygen', '--out', 'ck.pem'])).code).toBe(0);
});

describe('prune --checkpoint-out', () => {
  it('refuses a path that cannot be written before deleting anything; a retry then works', async () => {
    const db = await databaseWith('prune.db', ['default'], 8);
    const out = join('no-such-dir', 'cp.json');
    const refused = await gatehouse(dir, [
      'prune',
      '--database',
      db,
      '--through',
      '5',
      '--checkpoint-key',
      'ck.pem',
      '--checkpoint-out',
      out,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /--checkpoint-out no-such-dir\/cp\.json cannot be written \(ENOENT\): nothing was changed/,
    );
    expect(await seqs(db)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(await storedCheckpoints(db)).toBe(0);
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);

    // A prune the core refuses leaves no empty file where the checkpoint was to go.
    const early = await gatehouse(dir, [
      'prune',
      '--database',
      db,
      '--through',
      '99',
      '--checkpoint-key',
      'ck.pem',
      '--checkpoint-out',
      'cp.json',
    ]);
    expect(early.code).toBe(1);
    expect(existsSync(join(dir, 'cp.json'))).toBe(false);

    const retry = await gatehouse(dir, [
      'prune',
      '--database',
      db,
      '--through',
      '5',
      '--checkpoint-key',
      'ck.pem',
      '--checkpoint-out',
      'cp.json',
    ]);
    expect(retry.code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'cp.json'), 'utf8'))).toMatchObject({
      seq: 5,
      signature: expect.any(String),
    });
  });

  it.skipIf(!existsSync('/dev/full'))(
    'a write that fails after the prune prints the checkpoint on stderr and says the prune is done',
    async () => {
      const db = await databaseWith('full.db', ['default'], 8);
      const r = await gatehouse(dir, [
        'prune',
        '--database',
        db,
        '--through',
        '5',
        '--checkpoint-key',
        'ck.pem',
        '--checkpoint-out',
        '/dev/full',
      ]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/pruned events 1-5 \(5\)/);
      expect(r.stderr).toMatch(
        /^gatehouse: the checkpoint could not be written to \/dev\/full \(\w+\); the prune is done\. Keep this checkpoint elsewhere:\n/,
      );
      const checkpoint = checkpointOnStderr(r.stderr);
      expect(checkpoint).toMatchObject({ tenant_id: 'default', seq: 5, signature: expect.any(String) });
      // The printed checkpoint is the one to verify from.
      writeFileSync(join(dir, 'kept.json'), JSON.stringify(checkpoint));
      const verified = await gatehouse(dir, [
        'verify',
        '--database',
        db,
        '--checkpoint',
        'kept.json',
        '--public-key',
        'ck.pem.pub',
      ]);
      expect(verified.stdout).toMatch(/ok, \d+ events after the checkpoint at seq 5/);
      expect(verified.code).toBe(0);
    },
  );
});

describe('checkpoint create --out', () => {
  it('refuses a path that cannot be written before storing the checkpoint', async () => {
    const db = await databaseWith('create.db', ['default'], 2);
    const r = await gatehouse(dir, [
      'checkpoint',
      'create',
      '--database',
      db,
      '--checkpoint-key',
      'ck.pem',
      '--out',
      join('no-such-dir', 'c.json'),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--out no-such-dir\/c\.json cannot be written \(ENOENT\): nothing was changed/);
    expect(await storedCheckpoints(db)).toBe(0);
  });
});

describe('retention run --checkpoint-dir', () => {
  const policy = 'retention.yaml';
  beforeAll(() => writeFileSync(join(dir, policy), 'version: 1\nretention:\n  history_after: 200d\n'));

  it('refuses a directory that cannot be made before pruning any tenant', async () => {
    const db = await databaseWith('ret-refused.db', ['a', 'b'], 3);
    writeFileSync(join(dir, 'a-file'), '');
    const r = await gatehouse(dir, [
      'retention',
      'run',
      '--database',
      db,
      '--policy',
      policy,
      '--checkpoint-key',
      'ck.pem',
      '--checkpoint-dir',
      join('a-file', 'checkpoints'),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /--checkpoint-dir a-file\/checkpoints cannot be written \(ENOTDIR\): nothing was changed/,
    );
    expect(await seqs(db, 'a')).toEqual([1, 2, 3]);
    expect(await seqs(db, 'b')).toEqual([1, 2, 3]);
  });

  it('goes on with the other tenants when one file cannot be written, prints its checkpoint, exits 1', async () => {
    const db = await databaseWith('ret.db', ['a', 'b'], 3);
    // Tenant a's checkpoint file is taken by a directory.
    mkdirSync(join(dir, 'ret-checkpoints', 'a-3.json'), { recursive: true });
    const r = await gatehouse(dir, [
      'retention',
      'run',
      '--database',
      db,
      '--policy',
      policy,
      '--checkpoint-key',
      'ck.pem',
      '--checkpoint-dir',
      'ret-checkpoints',
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/tenant a: .*pruned events 1-3/);
    expect(r.stdout).toMatch(/tenant b: .*pruned events 1-3/);
    expect(r.stderr).toMatch(
      /could not be written to ret-checkpoints\/a-3\.json \(EISDIR\); the prune of tenant a is done/,
    );
    expect(checkpointOnStderr(r.stderr)).toMatchObject({
      tenant_id: 'a',
      seq: 3,
      signature: expect.any(String),
    });
    expect(JSON.parse(readFileSync(join(dir, 'ret-checkpoints', 'b-3.json'), 'utf8'))).toMatchObject({
      tenant_id: 'b',
      seq: 3,
    });
  });
});
