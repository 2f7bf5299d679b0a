/**
 * Two receiver processes on one Redis race to claim the same webhook IDs: each ID is handled by
 * exactly one of them. Runs the built package (`npm run build`) in real child processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import KeyvRedis from '@keyv/redis';
import Keyv from 'keyv';
import { afterAll, describe, expect, it } from 'vitest';

const redisUrl = process.env.GATEHOUSE_TEST_REDIS_URL;
const racer = join(import.meta.dirname, 'fixtures/dedupeRacer.mjs');

/** Starts a racer and resolves with a function that sends "go" and returns the IDs it won. */
async function startRacer(namespace: string, ids: string[]): Promise<{ go(): Promise<string[]> }> {
  const child: ChildProcess = spawn(process.execPath, [racer, redisUrl!, namespace, ids.join(',')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  expect(first.value).toBe('ready');
  return {
    async go() {
      child.stdin!.write('go\n');
      const won = await lines.next();
      child.stdin!.end();
      await new Promise((resolve) => child.once('exit', resolve));
      return JSON.parse(won.value as string) as string[];
    },
  };
}

describe.skipIf(!redisUrl)('createDeduper across processes (needs GATEHOUSE_TEST_REDIS_URL)', () => {
  const namespace = `gatehouse-race-${randomUUID()}`;

  afterAll(async () => {
    const store = new Keyv({ store: new KeyvRedis(redisUrl), namespace });
    await store.clear();
    await store.disconnect();
  });

  it('two processes claiming the same 300 webhook-ids at once: each is handled exactly once', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `evt_race_${i}`);
    const [a, b] = await Promise.all([startRacer(namespace, ids), startRacer(namespace, ids)]);
    const [wonByA, wonByB] = await Promise.all([a!.go(), b!.go()]);
    const both = wonByA.filter((id) => wonByB.includes(id));
    expect(both).toEqual([]);
    expect([...wonByA, ...wonByB].sort()).toEqual([...ids].sort());
  });
});
