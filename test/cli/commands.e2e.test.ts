/**
 * The `gatehouse` commands as a user meets them, through the real CLI (after the build): a
 * mistyped database path, problems printed once, refused sources, a reader that goes away,
 * `--version`, the options and help each command offers, and the `serve` banner.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse, DEFAULT_POLICY_YAML } from '../../src/index.js';
import { cli, root, startServe, stopServe } from '../reliability/fixtures.js';

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-commands-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI; resolves with the exit code instead of rejecting on a non-zero one. */
async function gatehouse(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [cli, ...args], { cwd: dir, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A SQLite database holding `items` state changes (each one history event). */
async function databaseWith(name: string, items: number): Promise<string> {
  const file = join(dir, name);
  const store = openSqliteStore({ filename: file });
  const gh = createGatehouse({ store });
  for (let i = 0; i < items; i += 1) {
    await gh.recordState({
      session_id: 's',
      key: `note.n${i}`,
      value: 'x'.repeat(200),
      type: 'fact',
      source: 'user_input',
    });
  }
  await store.close();
  return file;
}

describe('a SQLite path that does not exist', () => {
  const missingDir = join(dir, 'nodir');
  const missing = join(missingDir, 'x.db');

  it.each([
    'verify',
    'export',
    'history',
    'keys list',
    'keys revoke key_x',
    'policy history',
    'policy replay builtin',
  ])('%s: refused with one line naming the path, creating nothing', async (command) => {
    const r = await gatehouse(...command.split(' '), '--database', missing);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `gatehouse: No database at ${missing} (check --database or GATEHOUSE_DB; \`gatehouse serve\` creates one).\n`,
    );
    expect(existsSync(missingDir)).toBe(false);
  });

  it('keys create and import still create a new database', async () => {
    const created = await gatehouse('keys', 'create', '--database', join(dir, 'new/keys.db'));
    expect(created.code, created.stderr).toBe(0);
    expect(existsSync(join(dir, 'new/keys.db'))).toBe(true);

    const dump = join(dir, 'keys.jsonl');
    expect((await gatehouse('export', '--database', join(dir, 'new/keys.db'), '--output', dump)).code).toBe(
      0,
    );
    const imported = await gatehouse('import', dump, '--database', join(dir, 'other/imported.db'));
    expect(imported.code, imported.stderr).toBe(0);
    expect((await gatehouse('keys', 'list', '--database', join(dir, 'other/imported.db'))).stdout).toContain(
      'name=key',
    );
  });
});

describe('errors', () => {
  it('policy check and serve --policy print each problem of a policy once', async () => {
    const bad = join(dir, 'three-problems.yaml');
    writeFileSync(bad, 'version: 1\nfoo: 1\nbar: 2\nrules:\n  - name: r\n    verdict: Block\n');
    for (const r of [
      await gatehouse('policy', 'check', bad),
      await gatehouse('serve', '--port', '0', '--database', join(dir, 'never.db'), '--policy', bad),
    ]) {
      expect(r.code).toBe(1);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines[0]).toBe(`gatehouse: Invalid policy ${bad} (3 problems):`);
      expect(lines.slice(1)).toEqual([
        expect.stringMatching(/^ {2}\S+:2:1: foo: Unknown field "foo"/),
        expect.stringMatching(/^ {2}\S+:3:1: bar: Unknown field "bar"/),
        expect.stringMatching(/^ {2}\S+:5:5: rules\[0\]\.when: Required field "when" is missing$/),
      ]);
    }
  });

  it('a request with several problems names each one once', async () => {
    const tests = join(dir, 'two-problems.test.yaml');
    writeFileSync(tests, 'cases:\n  - name: x\n  - name: y\n    action: a.b\n');
    const r = await gatehouse('policy', 'test', 'builtin', tests);
    expect(r.code).toBe(1);
    const problems = r.stderr.match(/cases\[\d\]\.\w+/g) ?? [];
    expect(problems.length).toBeGreaterThanOrEqual(3);
    expect(new Set(problems).size).toBe(problems.length);
  });

  it('keys create refuses an unknown source as it refuses an unknown scope, naming the allowed ones', async () => {
    const db = join(dir, 'sources.db');
    const source = await gatehouse('keys', 'create', '--database', db, '--sources', 'system,foo');
    expect(source.code).toBe(1);
    expect(source.stderr).toBe(
      "gatehouse: --sources: unknown source 'foo'; allowed: system, user_input, tool_output, retrieval, agent_inference.\n",
    );
    const scope = await gatehouse('keys', 'create', '--database', db, '--scopes', 'bogus');
    expect(scope.code).toBe(1);
    expect(scope.stderr).toMatch(/^gatehouse: --scopes: unknown scope 'bogus'; allowed: state:write, /);
    expect((await gatehouse('keys', 'list', '--database', db)).stdout).toBe('no keys\n');

    // The sources come from the policy in effect: here a file that defines one more.
    const policy = join(dir, 'sensor.yaml');
    writeFileSync(policy, DEFAULT_POLICY_YAML.replace(/^sources:\n/m, 'sources:\n  sensor: 2\n'));
    const sensor = await gatehouse(
      'keys',
      'create',
      '--database',
      db,
      '--policy',
      policy,
      '--sources',
      'sensor',
    );
    expect(sensor.code, sensor.stderr).toBe(0);
    expect(sensor.stdout).toContain('sources sensor');
  });
});

describe('a reader that goes away', () => {
  let big = '';
  beforeAll(async () => {
    big = await databaseWith('big.db', 400);
  });

  it.each(['export', 'history --json --limit 400'])(
    '%s: stops quietly with status 141 (SIGPIPE)',
    async (command) => {
      const child = spawn(process.execPath, [cli, ...command.split(' '), '--database', big], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      // As `| head -c 300` does: read a little, then close the pipe.
      child.stdout.once('data', () => child.stdout.destroy());
      const [code] = await once(child, 'close');
      expect(stderr).toBe('');
      expect(code).toBe(141);
    },
  );
});

describe('options and help', () => {
  it('--version and -V print the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      expect(await gatehouse(flag)).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
  });

  const helpOf = async (command: string[]) => (await gatehouse(...command, '--help')).stdout;

  it('--policy is offered only by the commands that use it', async () => {
    const offered = ['serve', 'mcp', 'keys create', 'policy history'];
    const notOffered = ['keys list', 'keys revoke', 'export', 'import', 'verify', 'history', 'policy replay'];
    const helps = await Promise.all([...offered, ...notOffered].map((c) => helpOf(c.split(' '))));
    for (const [i, command] of offered.entries()) expect(helps[i], command).toContain('--policy <file>');
    for (const [i, command] of notOffered.entries()) {
      expect(helps[offered.length + i], command).not.toContain('--policy');
    }
    const refused = await gatehouse('verify', '--policy', 'x.yaml');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("error: unknown option '--policy'");
  });

  it('the help says what each argument and option is', async () => {
    const replay = await helpOf(['policy', 'replay']);
    expect(replay).toMatch(/candidate\s+the policy to try: a YAML file, 'builtin', or a/);
    const create = await helpOf(['keys', 'create']);
    expect(create).toMatch(/--name <name>\s+what to call the key: shown by `keys list`/);
    expect(create).not.toMatch(/--name <name>\s+a label/);
    expect(await helpOf(['policy', 'history'])).toMatch(/--json\s+one JSON line per activation/);
  });

  it('policy test builtin without tests says how to give them', async () => {
    const r = await gatehouse('policy', 'test', 'builtin');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "No test files: pass test files after 'builtin' (the repository's examples/policies/builtin.test.yaml tests it).",
    );
    expect(r.stdout).not.toContain('next to it');
    const lonely = join(dir, 'lonely.yaml');
    writeFileSync(lonely, DEFAULT_POLICY_YAML);
    expect((await gatehouse('policy', 'test', lonely)).stdout).toContain(
      `No test files: pass test files after the policy, or put ${join(dir, 'lonely.test.yaml')} next to it.`,
    );
  });
});

describe('the serve banner', () => {
  /** Starts serve, stops it, and returns everything it printed on stdout. */
  async function bannerOf(args: string[]): Promise<string> {
    const server = await startServe(args, { cwd: dir });
    expect(await stopServe(server)).toBe(0);
    if (!server.proc.stdout!.closed) await once(server.proc.stdout!, 'close');
    return server.stdout();
  }

  it('aligns its lines, mentions SIGHUP only for a policy file, and says when it stopped', async () => {
    const builtin = await bannerOf(['--database', join(dir, 'banner.db')]);
    const labels = builtin.split('\n').filter((l) => /^ {2}(store|policy|MCP|Console):/.test(l));
    expect(labels).toHaveLength(4);
    expect(new Set(labels.map((l) => l.search(/(?<=: +)\S/)))).toEqual(new Set([11]));
    expect(builtin).not.toContain('SIGHUP');
    expect(builtin).toMatch(/Stop with Ctrl-C\.\nGatehouse stopped\.\n$/);

    const policy = join(dir, 'banner-policy.yaml');
    writeFileSync(policy, DEFAULT_POLICY_YAML);
    const withFile = await bannerOf(['--database', join(dir, 'banner.db'), '--policy', policy]);
    expect(withFile).toContain('Reload the policy with SIGHUP (or just save the file).');
  });
});
