/**
 * The runnable example, run as a user would (`node examples/langchain-agent/agent.js` on the
 * built package), including its self-check.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const example = join(root, 'examples', 'langchain-agent', 'agent.js');
const BUILT = [
  'src/index.js',
  'adapters/client/index.js',
  'adapters/langchain/index.js',
  'adapters/sqlite/index.js',
].map((file) => join(root, 'dist', file));

function newestSource(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return Math.max(newest, newestSource(path));
    return entry.name.endsWith('.ts') ? Math.max(newest, statSync(path).mtimeMs) : newest;
  }, 0);
}

/** `npm test` builds first; a bare `vitest run` may find dist/ missing or older than the sources. */
function ensureBuilt(): void {
  const sources = Math.max(newestSource(join(root, 'src')), newestSource(join(root, 'adapters')));
  const stale = BUILT.some((file) => !existsSync(file) || statSync(file).mtimeMs < sources);
  if (!stale) return;
  // tsc emits even when another file has a type error; the typecheck is a separate step.
  spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
    {
      cwd: root,
      stdio: 'ignore',
    },
  );
  for (const file of BUILT) expect(existsSync(file), `${file} after the build`).toBe(true);
}

function runExample(env: Record<string, string> = {}) {
  const clean = { ...process.env };
  for (const name of ['EXAMPLE_MODEL', 'EXAMPLE_BUDGET', 'GATEHOUSE_URL', 'GATEHOUSE_API_KEY'])
    delete clean[name];
  return spawnSync(process.execPath, [example], {
    cwd: root,
    env: { ...clean, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

beforeAll(() => {
  ensureBuilt();
}, 120_000);

describe('examples/langchain-agent', () => {
  it('blocks the over-budget transfer, pays the small one, prints the trail and exits 0', () => {
    const run = runExample();
    expect(run.stderr).not.toContain('SELF-CHECK FAILED');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/gate_evaluation transfer_money \{"amount":9000,"to":"Acme Ltd"\} -> Block/);
    expect(run.stdout).toMatch(/gate_evaluation transfer_money \{"amount":300,"to":"Acme Ltd"\} -> Allow/);
    expect(run.stdout).toMatch(/action_outcome\s+transfer_money succeeded/);
    expect(run.stdout).toContain('Hash chain: intact');
  });

  it('exits non-zero when nothing was blocked (self-check)', () => {
    const run = runExample({ EXAMPLE_BUDGET: '20000' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('SELF-CHECK FAILED');
  });
});
