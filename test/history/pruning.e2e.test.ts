/**
 * Pruning through the real CLI (after the build), on SQLite and on PostgreSQL when configured:
 * `checkpoint keygen`, `prune` writing the checkpoint to a file, `verify` from the stored
 * checkpoint and from the file, and `verify --checkpoint` failing once the suffix and the stored
 * checkpoint are both rewritten under another key.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createGatehouse,
  generateCheckpointKeyPair,
  hashEvent,
  loadCheckpointSigner,
  type SealedEvent,
  type Store,
  signCheckpoint,
} from '../../src/index.js';
import { cli } from '../reliability/fixtures.js';
import { STORE_TARGETS, type StoreTarget } from './storeTargets.js';

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-prune-'));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  for (const t of STORE_TARGETS) await t.cleanup();
});

async function gatehouse(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [cli, ...args], {
      cwd: dir,
      timeout: 60_000,
      env: { ...process.env, GATEHOUSE_CHECKPOINT_KEY: '', GATEHOUSE_CHECKPOINT_PUBLIC_KEY: '' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function databaseFlags(target: StoreTarget, place: string): string[] {
  if (target.name === 'sqlite') return ['--database', place];
  return ['--database-url', process.env['GATEHOUSE_TEST_DATABASE_URL']!, '--database-schema', place];
}

/** 1,000 state changes made a year ago (the clock is injected): older than the floor. */
async function writeOld(store: Store) {
  const gh = createGatehouse({ store, clock: () => new Date('2025-06-01T00:00:00.000Z') });
  for (let i = 0; i < 1000; i += 1) {
    await gh.recordState({
      session_id: 's',
      key: 'agent.note',
      value: `v${i}`,
      type: 'fact',
      source: 'user_input',
    });
  }
}

describe.each(STORE_TARGETS)('gatehouse prune and verify on $name', (target) => {
  it('prunes behind a signed checkpoint kept in a file, verifies from it, and fails on a forged rewrite', async () => {
    const place = target.place();
    const store = await target.open(place);
    await writeOld(store);
    await store.close();
    const db = databaseFlags(target, place);
    const key = join(dir, `${target.name}.pem`);
    const checkpointFile = join(dir, `${target.name}-checkpoint.json`);

    expect((await gatehouse('checkpoint', 'keygen', '--out', key)).code).toBe(0);
    const refused = await gatehouse('prune', ...db, '--through', '600', '--checkpoint-out', checkpointFile);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/No checkpoint key is configured/);

    const pruned = await gatehouse(
      'prune',
      ...db,
      '--through',
      '600',
      '--checkpoint-key',
      key,
      '--checkpoint-out',
      checkpointFile,
    );
    expect(pruned.stderr).toBe('');
    expect(pruned.stdout).toMatch(/pruned events 1-600 \(600\)/);
    expect(JSON.parse(readFileSync(checkpointFile, 'utf8'))).toMatchObject({ seq: 600, event_count: 600 });

    const verified = await gatehouse('verify', ...db, '--public-key', `${key}.pub`);
    expect(verified.stdout).toMatch(/tenant default: ok, 401 events after the checkpoint at seq 600/);
    const unkeyed = await gatehouse('verify', ...db);
    expect(unkeyed.code).toBe(1);
    expect(unkeyed.stdout).toMatch(/no checkpoint public key is configured/);
    const external = await gatehouse(
      'verify',
      ...db,
      '--checkpoint',
      checkpointFile,
      '--public-key',
      `${key}.pub`,
    );
    expect(external.code).toBe(0);

    // Rewrite the suffix onto a forged prefix and re-sign the stored checkpoint with another key.
    const attacker = generateCheckpointKeyPair();
    const again = await target.open(place);
    try {
      const events: SealedEvent[] = [];
      for await (const page of again.scanEvents('default')) events.push(...page);
      let prev = 'e'.repeat(64);
      const updates = [
        target.name === 'sqlite'
          ? 'DROP TRIGGER events_no_update;'
          : 'ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete;',
      ];
      for (const e of events) {
        const { values: _v, hash: _h, ...fields } = e;
        const hash = hashEvent({ tenant_id: 'default', ...fields, prev_hash: prev });
        updates.push(`UPDATE events SET prev_hash = '${prev}', hash = '${hash}' WHERE seq = ${e.seq};`);
        prev = hash;
      }
      const forged = signCheckpoint(
        {
          tenant_id: 'default',
          seq: 600,
          hash: 'e'.repeat(64),
          event_count: 600,
          created_at: '2026-01-01T00:00:00.000Z',
        },
        loadCheckpointSigner(attacker.privateKey),
      );
      updates.push(
        `DELETE FROM checkpoints; INSERT INTO checkpoints VALUES ('default', 600, '${forged.hash}', 600, '${forged.created_at}', '${forged.key_id}', '${forged.signature}');`,
      );
      await target.exec(again, updates.join('\n'));
    } finally {
      await again.close();
    }
    const broken = await gatehouse(
      'verify',
      ...db,
      '--checkpoint',
      checkpointFile,
      '--public-key',
      `${key}.pub`,
    );
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/BROKEN at seq 601: .* does not link to the previous hash/);
    const storedBroken = await gatehouse('verify', ...db, '--public-key', `${key}.pub`);
    expect(storedBroken.code).toBe(1);
    expect(storedBroken.stdout).toMatch(/BROKEN at seq 600: .*not by the configured key/);
  }, 180_000);

  it('retention run applies the policy: erases old values, prunes old history, writes the checkpoint', async () => {
    const place = target.place();
    const store = await target.open(place);
    await writeOld(store);
    await store.close();
    const db = databaseFlags(target, place);
    const key = join(dir, `${target.name}-retention.pem`);
    expect((await gatehouse('checkpoint', 'keygen', '--out', key)).code).toBe(0);
    const policy = join(dir, 'retention.yaml');
    writeFileSync(policy, 'version: 1\nretention:\n  values_after: 30d\n  history_after: 200d\n');
    const checkpoints = join(dir, `${target.name}-checkpoints`);

    const unkeyed = await gatehouse(
      'retention',
      'run',
      ...db,
      '--policy',
      policy,
      '--checkpoint-dir',
      checkpoints,
    );
    expect(unkeyed.code).toBe(1);
    expect(unkeyed.stdout).toMatch(
      /erased 2000 field\(s\) of 1000 event\(s\), cleared 1 state item\(s\); prune refused: No checkpoint key/,
    );

    const run = await gatehouse(
      'retention',
      'run',
      ...db,
      '--policy',
      policy,
      '--checkpoint-key',
      key,
      '--checkpoint-dir',
      checkpoints,
    );
    expect(run.stderr).toBe('');
    // The run's erasure events are new: only the 1,000 old events go.
    expect(run.stdout).toMatch(
      /tenant default: erased 0 field\(s\) of 0 event\(s\), pruned events 1-1000 behind checkpoint/,
    );
    expect(existsSync(join(checkpoints, 'default-1000.json'))).toBe(true);
    const verified = await gatehouse('verify', ...db, '--public-key', `${key}.pub`);
    // After the checkpoint: the two value erasures, the state item's, and the prune's event.
    expect(verified.stdout).toMatch(/ok, 4 events after the checkpoint at seq 1000/);

    // The pruned history moves with its checkpoint, and verifies after the move with the key.
    const dump = join(dir, `${target.name}-pruned.jsonl`);
    expect((await gatehouse('export', ...db, '--output', dump)).code).toBe(0);
    const moved = await gatehouse(
      'import',
      dump,
      '--database',
      join(dir, `${target.name}-moved.db`),
      '--public-key',
      `${key}.pub`,
    );
    expect(moved.stdout).toMatch(/chain ok, 4 events after the checkpoint at seq 1000/);
    expect(moved.code).toBe(0);
  }, 180_000);
});
