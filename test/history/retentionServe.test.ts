/**
 * `gatehouse serve`'s scheduled retention keeps each prune's checkpoint as `retention run` does:
 * a file `<tenant>-<seq>.json` in `--checkpoint-dir` that verifies the kept history with the
 * public key; a directory it cannot write to is logged with the checkpoint, and the service goes on.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readServeConfig } from '../../adapters/cli/config.js';
import { startService } from '../../adapters/cli/serve.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createGatehouse,
  generateCheckpointKeyPair,
  loadCheckpointPublicKey,
  loadCheckpointSigner,
  parseCheckpoint,
} from '../../src/index.js';
import { memoryLogger } from '../reliability/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-serve-retention-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const key = generateCheckpointKeyPair();

/** A database of 600 state changes made long before the floor, and a policy that prunes them. */
async function oldDatabase(name: string): Promise<{ database: string; policy: string }> {
  const database = join(dir, `${name}.db`);
  const store = openSqliteStore({ filename: database });
  const gh = createGatehouse({ store, clock: () => new Date('2025-01-01T00:00:00.000Z') });
  for (let i = 0; i < 600; i += 1) {
    await gh.recordState({
      session_id: 's',
      key: 'agent.note',
      value: `v${i}`,
      type: 'fact',
      source: 'user_input',
    });
  }
  await store.close();
  const policy = join(dir, `${name}.yaml`);
  writeFileSync(policy, 'version: 1\nretention:\n  history_after: 200d\n');
  return { database, policy };
}

async function serve(files: { database: string; policy: string }, checkpointDir: string) {
  const { logger, text } = memoryLogger();
  const service = await startService(
    {
      ...readServeConfig({ ...files, port: '0', host: '127.0.0.1', rateLimit: '0' }),
      checkpointKeys: { checkpointSigner: loadCheckpointSigner(key.privateKey) },
      retentionIntervalMinutes: 60,
      checkpointDir,
    },
    logger,
  );
  return { service, log: text };
}

describe('gatehouse serve: scheduled retention', () => {
  it('writes each prune checkpoint to --checkpoint-dir, and it verifies the kept history', async () => {
    const checkpoints = join(dir, 'checkpoints');
    const { service, log } = await serve(await oldDatabase('written'), checkpoints);
    try {
      await service.runRetention();
      const checkpoint = parseCheckpoint(readFileSync(join(checkpoints, 'default-600.json'), 'utf8'));
      expect(checkpoint).toMatchObject({ tenant_id: 'default', seq: 600, event_count: 600 });
      expect(
        await service.gatehouse.verifyFromCheckpoint({
          checkpoint,
          public_key: loadCheckpointPublicKey(key.publicKey),
        }),
      ).toMatchObject({ ok: true, pruned_through: 600 });
      expect(log()).toMatch(/"msg":"checkpoint written"/);
    } finally {
      await service.close();
    }
  }, 60_000);

  it('logs the checkpoint when its file cannot be written, and keeps serving', async () => {
    const blocker = join(dir, 'not-a-directory');
    writeFileSync(blocker, '');
    const { service, log } = await serve(await oldDatabase('unwritable'), join(blocker, 'checkpoints'));
    try {
      await service.runRetention();
      const line = log()
        .split('\n')
        .find((l) => l.includes('checkpoint file not written'));
      expect(JSON.parse(line!)).toMatchObject({ level: 50, checkpoint: { seq: 600, tenant_id: 'default' } });
      const res = await fetch(`${service.url}/healthz`);
      expect(res.status).toBe(200);
    } finally {
      await service.close();
    }
  }, 60_000);
});
