/**
 * `gatehouse export` and `gatehouse import` guarding the data they move, through the real CLI on
 * real SQLite files: export never writes over the database it reads; a dump ends with an end
 * record, so one cut short is refused rather than loaded as a smaller database; a line that is
 * not a record is named; a pruned history without its public key is refused before anything is
 * committed, and `verify` words a missing key as such, not as a broken chain.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse } from '../../src/index.js';
import { gatehouse, tempDir } from './runCli.js';

const dir = tempDir('dump-integrity');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lines = (file: string) => readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean);

beforeAll(async () => {
  const store = openSqliteStore({ filename: join(dir, 'src.db') });
  const gh = createGatehouse({ store, clock: () => new Date('2024-01-01T00:00:00.000Z') });
  for (let i = 0; i < 6; i += 1) {
    await gh.recordState({
      session_id: 's1',
      key: 'agent.note',
      value: `v${i}`,
      type: 'fact',
      source: 'user_input',
    });
  }
  await gh.tagSession({ session_id: 's1', subject: 'p-1' });
  await gh.placeHold({ reference: 'CASE-7', session_id: 's2' }, { actor: 'test' });
  await store.close();
  expect((await gatehouse(dir, ['export', '--database', 'src.db', '--output', 'dump.jsonl'])).code).toBe(0);
});

describe('export --output', () => {
  it.each(['src.db', 'src.db-wal', 'src.db-shm', './sub/../src.db'])(
    'refuses %s, and the database still verifies',
    async (output) => {
      const r = await gatehouse(dir, ['export', '--database', 'src.db', '--output', output]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^gatehouse: --output .* is the database('s \w+ file| being exported): write the dump to another file/,
      );
      const v = await gatehouse(dir, ['verify', '--database', 'src.db']);
      expect(v.stdout).toMatch(/tenant default: ok/);
      expect(v.code).toBe(0);
    },
  );

  it('ends the dump with an end record counting its rows', () => {
    const all = lines('dump.jsonl');
    expect(JSON.parse(all.at(-1)!)).toEqual({ end: { rows: all.length - 1 } });
  });
});

describe('import of a dump that is not whole', () => {
  it('refuses a dump cut short at a line boundary, and commits nothing', async () => {
    const all = lines('dump.jsonl');
    const cut = all.findIndex((l) => l.startsWith('{"table":"session_subjects"'));
    expect(cut).toBeGreaterThan(0);
    writeFileSync(join(dir, 'cut.jsonl'), `${all.slice(0, cut).join('\n')}\n`);

    const r = await gatehouse(dir, ['import', 'cut.jsonl', '--database', 'cut.db']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /cut\.jsonl: the file ends before its end record: cut short, or written by an older gatehouse export/,
    );
    // Nothing committed: the whole dump then loads into the same database.
    const whole = await gatehouse(dir, ['import', 'dump.jsonl', '--database', 'cut.db']);
    expect(whole.code).toBe(0);
    expect((await gatehouse(dir, ['hold', 'list', '--database', 'cut.db'])).stdout).toMatch(/CASE-7/);
  });

  it('loads a dump of an older version, without the end record, only with --no-end-record', async () => {
    writeFileSync(join(dir, 'older.jsonl'), `${lines('dump.jsonl').slice(0, -1).join('\n')}\n`);
    const refused = await gatehouse(dir, ['import', 'older.jsonl', '--database', 'older.db']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/rerun with --no-end-record/);
    const loaded = await gatehouse(dir, [
      'import',
      'older.jsonl',
      '--database',
      'older.db',
      '--no-end-record',
    ]);
    expect(loaded.stdout).toMatch(/tenant default: chain ok/);
    expect(loaded.code).toBe(0);
  });

  it('refuses an end record whose count differs from the rows before it', async () => {
    const all = lines('dump.jsonl');
    const cut = all.findIndex((l) => l.startsWith('{"table":"legal_holds"'));
    writeFileSync(join(dir, 'gap.jsonl'), `${[...all.slice(0, cut), ...all.slice(cut + 1)].join('\n')}\n`);
    const r = await gatehouse(dir, ['import', 'gap.jsonl', '--database', 'gap.db']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/gap\.jsonl:\d+: the end record counts \d+ rows but the file holds \d+/);
  });

  it.each([
    ['null', 'null'],
    ['an array', '[]'],
    ['an object without row', '{"table":"events"}'],
  ])('names the line of a JSON line that is %s', async (_what, line) => {
    writeFileSync(join(dir, 'bad.jsonl'), `${lines('dump.jsonl')[0]}\n${line}\n`);
    const r = await gatehouse(dir, ['import', 'bad.jsonl', '--database', 'bad.db']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('gatehouse: bad.jsonl:2: not a record written by gatehouse export.\n');
  });
});

describe('a pruned history', () => {
  beforeAll(async () => {
    expect((await gatehouse(dir, ['checkpoint', 'keygen', '--out', 'ck.pem'])).code).toBe(0);
    const p = await gatehouse(dir, [
      'prune',
      '--database',
      'src.db',
      '--through',
      '3',
      '--checkpoint-key',
      'ck.pem',
      '--checkpoint-out',
      'cp.json',
    ]);
    expect(p.code).toBe(0);
    expect((await gatehouse(dir, ['export', '--database', 'src.db', '--output', 'pruned.jsonl'])).code).toBe(
      0,
    );
  });

  it('is refused by import without --public-key before anything is committed; with it, it loads', async () => {
    const unkeyed = await gatehouse(dir, ['import', 'pruned.jsonl', '--database', 'p.db']);
    expect(unkeyed.code).toBe(1);
    expect(unkeyed.stdout).not.toMatch(/BROKEN/);
    expect(unkeyed.stderr).toMatch(
      /pruned\.jsonl:\d+: tenant default's history is pruned: .*no checkpoint public key\. Nothing was imported: rerun with --public-key/,
    );
    const keyed = await gatehouse(dir, [
      'import',
      'pruned.jsonl',
      '--database',
      'p.db',
      '--public-key',
      'ck.pem.pub',
    ]);
    expect(keyed.stdout).toMatch(/tenant default: chain ok, \d+ events after the checkpoint at seq 3/);
    expect(keyed.code).toBe(0);
  });

  it('verify without a public key says it cannot verify, not BROKEN', async () => {
    const r = await gatehouse(dir, ['verify', '--database', 'src.db']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^tenant default: cannot verify: no checkpoint public key is configured/);
    expect(r.stdout).not.toMatch(/BROKEN/);
  });
});
