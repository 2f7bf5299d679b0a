/**
 * `gatehouse serve`'s scheduled retention keeps each prune's checkpoint as `retention run` does:
 * a file `<tenant>-<seq>.json` in `--checkpoint-dir` that verifies the kept history with the
 * public key; while that directory cannot be written no prune runs (erasures do), and the service goes on.
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

  it('prunes nothing while --checkpoint-dir cannot be written, says why, and prunes once it can', async () => {
    const blocker = join(dir, 'not-a-directory');
    writeFileSync(blocker, '');
    const checkpoints = join(blocker, 'checkpoints');
    const { service, log } = await serve(await oldDatabase('unwritable'), checkpoints);
    try {
      await service.runRetention();
      const line = log()
        .split('\n')
        .find((l) => l.includes('retention run failed'));
      expect(JSON.parse(line!)).toMatchObject({ level: 50, tenantId: 'default' });
      expect(line).toContain(
        `prune of events 1-600 left for a later run: the checkpoint directory ${checkpoints} cannot be written (ENOTDIR)`,
      );
      expect(log()).not.toContain('retention.pruned');
      const verified = await service.gatehouse.verifyHistory();
      expect(verified.ok).toBe(true);
      expect(verified.pruned_through).toBeUndefined();
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);

      // Once the directory can be made, the next run prunes and writes the checkpoint.
      rmSync(blocker);
      await service.runRetention();
      const checkpoint = parseCheckpoint(readFileSync(join(checkpoints, 'default-600.json'), 'utf8'));
      expect(checkpoint).toMatchObject({ tenant_id: 'default', seq: 600 });
    } finally {
      await service.close();
    }
  }, 60_000);
});
