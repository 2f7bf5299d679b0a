/**
 * Runs the built `gatehouse` CLI as an operator would, for the test/cli suites: a real process
 * in a directory of its own, its exit code returned rather than thrown.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from '../reliability/fixtures.js';

/** What a run of the CLI printed, and how it ended. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** A new temporary directory for one suite's files. */
export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `gatehouse-${prefix}-`));
}

/** Runs `gatehouse ...args` in `cwd`, without the checkpoint keys of the caller's environment. */
export function gatehouse(cwd: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cli, ...args],
      {
        cwd,
        timeout: 60_000,
        maxBuffer: 16 * 2 ** 20,
        env: {
          ...process.env,
          GATEHOUSE_CHECKPOINT_KEY: '',
          GATEHOUSE_CHECKPOINT_PUBLIC_KEY: '',
          GATEHOUSE_LOG_LEVEL: 'warn',
          ...env,
        },
      },
      (error, stdout, stderr) => {
        const code = error ? (error as { code?: unknown }).code : 0;
        resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
      },
    );
  });
}
