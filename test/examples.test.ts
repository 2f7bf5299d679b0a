/**
 * The examples are runnable and self-checking; run them as a user would (after the build).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');

describe('examples', () => {
  it('webhook-receiver demo: a blocked action arrives verified, exactly once', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'examples/webhook-receiver/demo.js')], {
      timeout: 30_000,
    });
    expect(stdout).toContain('received 1 blocked action(s): Transfer of 9000 exceeds');
    expect(stdout).toContain('demo ok');
  });
});
