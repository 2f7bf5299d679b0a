/**
 * A 5-second run of the soak (scripts/soak.js; the 60-second one is `npm run soak`): the real
 * service under a mixed workload at a fixed rate answers every request, its chain verifies and
 * every webhook delivery arrives. No timing is asserted here; the figures are the soak's job.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { root } from './fixtures.js';

const run = promisify(execFile);

it('five seconds of mixed load: zero errors, chain intact, deliveries complete', async () => {
  const { stdout } = await run(
    process.execPath,
    [join(root, 'scripts/soak.js'), '--duration', '5', '--rate', '100', '--sample', '1', '--json'],
    { timeout: 90_000 },
  ).catch((e: { stdout?: string; stderr?: string }) => {
    throw new Error(`soak failed:\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  });
  const summary = JSON.parse(stdout.trim().split('\n').at(-1)!);
  expect(summary.failures).toEqual([]);
  expect(summary).toMatchObject({
    ok: true,
    errors: { status: 0, network: 0, missed: 0 },
    history: { ok: true },
  });
  expect(summary.ok_responses).toBe(summary.requests);
  expect(summary.requests).toBeGreaterThan(300);
  expect(summary.webhooks.delivered).toBe(summary.webhooks.deliveries);
  expect(summary.webhooks.deliveries).toBeGreaterThan(0);
  expect(Object.keys(summary.by_kind).sort()).toEqual([
    'decision',
    'evaluate',
    'history',
    'items',
    'versions',
    'write',
  ]);
}, 120_000);
