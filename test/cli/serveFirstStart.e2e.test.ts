/**
 * `gatehouse serve`'s first start as the README quick start meets it, through real processes on
 * loopback: a start that cannot bind leaves no admin key nobody saw (the next start still prints
 * one), and the key the banner says to export as GATEHOUSE_KEY works for `gatehouse approvals`.
 */

import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, stopServe } from '../reliability/fixtures.js';
import { gatehouse, tempDir } from './runCli.js';

const dir = tempDir('serve-first-start');
let blocker: Server | undefined;
afterAll(async () => {
  await new Promise((r) => (blocker ? blocker.close(r) : r(undefined)));
  rmSync(dir, { recursive: true, force: true });
});

describe('serve: the first start', () => {
  it('fails to bind without creating a key; the next start prints the admin key, which approvals accepts as GATEHOUSE_KEY', async () => {
    const taken = createServer();
    blocker = taken;
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    const db = join(dir, 'db.sqlite');

    const failed = await gatehouse(dir, ['serve', '--database', db, '--port', String(port)]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/EADDRINUSE/);
    expect((await gatehouse(dir, ['keys', 'list', '--database', db])).stdout).toBe('no keys\n');

    const serve = await startServe(['--database', db], { cwd: dir });
    try {
      expect(serve.key).toMatch(/^gh_/);
      expect(serve.stdout()).toContain(`export GATEHOUSE_KEY=${serve.key}`);
      // As the banner says: `export GATEHOUSE_KEY=…`, and nothing else.
      const listed = await gatehouse(dir, ['approvals', 'list'], {
        GATEHOUSE_URL: serve.url,
        GATEHOUSE_KEY: serve.key!,
        GATEHOUSE_API_KEY: '',
      });
      expect(listed.stderr).toBe('');
      expect(listed.code).toBe(0);
    } finally {
      await stopServe(serve);
    }
  });
});
