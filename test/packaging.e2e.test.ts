/**
 * The package as a consumer gets it: `npm pack`'s tarball installed into a fresh project, every
 * subpath export imported and type-checked without `skipLibCheck`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string>;
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const subpaths = Object.keys(pkg.exports)
  .filter((s) => s !== './package.json')
  .map((s) => (s === '.' ? 'gatehouse' : `gatehouse/${s.slice(2)}`));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

let dir: string;
let files: string[];

function run(command: string, args: string[], cwd = dir): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-consumer-'));
  // `npm test` has just built dist/; pack without running `prepare` scripts again.
  const packed = JSON.parse(
    run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], root),
  ) as [{ filename: string; files: { path: string }[] }];
  files = packed[0].files.map((f) => f.path);
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
  );
  // The framework faces' peers, as an app of each framework already has them: LangChain, and
  // OpenAI Agents (which brings @openai/agents-core, whose types and runner parser the face uses).
  // The AI SDK face imports nothing from `ai` (its types are the shapes both majors share), so `ai`
  // is left out, as are the optional peers of the stores (pg, Redis, better-sqlite3): every subpath
  // must still import and type-check.
  const peers = ['@langchain/core', 'langchain', '@openai/agents'].map(
    (name) => `${name}@${pkg.peerDependencies[name]}`,
  );
  run('npm', [
    'install',
    '--no-audit',
    '--no-fund',
    '--prefer-offline',
    '--ignore-scripts',
    join(dir, packed[0].filename),
    ...peers,
    `@types/node@${pkg.devDependencies['@types/node']}`,
  ]);
}, 300_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the published package', () => {
  it('ships the licence, compiled code with self-contained source maps, and no TypeScript sources', () => {
    expect(files).toContain('LICENSE');
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    const map = JSON.parse(
      readFileSync(join(dir, 'node_modules', 'gatehouse', 'dist', 'src', 'index.js.map'), 'utf8'),
    ) as { sourcesContent?: string[] };
    expect(map.sourcesContent?.[0]).toContain('export');
  });

  it('type-checks in a consumer without skipLibCheck', () => {
    writeFileSync(
      join(dir, 'index.ts'),
      subpaths
        .map((s, n) => `import * as m${n} from '${s}';\nexport const x${n} = Object.keys(m${n});\n`)
        .join(''),
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          skipLibCheck: false,
          noEmit: true,
          types: ['node'],
        },
        files: ['index.ts'],
      }),
    );
    let output = '';
    try {
      run(process.execPath, [tsc, '-p', '.']);
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    expect(output).toBe('');
    // tsc over every subpath's declarations and their dependencies': ~10 s idle, 3-4× that on a
    // loaded two-core machine.
  }, 120_000);

  it.each(subpaths)('%s imports and exports something', (subpath) => {
    const out = run(process.execPath, [
      '--input-type=module',
      '-e',
      `const m = await import(${JSON.stringify(subpath)}); console.log(Object.keys(m).length);`,
    ]);
    expect(Number(out.trim())).toBeGreaterThan(0);
  });

  it('runs the core on the embedded store, or says what Node 20 needs', () => {
    const script = `
      import { createGatehouse } from 'gatehouse';
      import { openSqliteStore } from 'gatehouse/sqlite';
      try {
        const gatehouse = createGatehouse({ store: openSqliteStore() });
        await gatehouse.recordState({ session_id: 's', key: 'budget.limit', value: '5', type: 'fact', source: 'user_input' });
        const decision = await gatehouse.evaluate({ session_id: 's', action: 'payments.transfer' });
        console.log(JSON.stringify({ verdict: decision.verdict }));
        await gatehouse.store.close();
      } catch (error) {
        console.log(JSON.stringify({ error: error.message }));
      }`;
    const out = JSON.parse(run(process.execPath, ['--input-type=module', '-e', script])) as {
      verdict?: string;
      error?: string;
    };
    // node:sqlite arrived unflagged in 22.13; before it, better-sqlite3 is an optional peer the
    // consumer did not install.
    const hasNodeSqlite = process.getBuiltinModule?.('node:sqlite') !== undefined;
    if (hasNodeSqlite) expect(out).toEqual({ verdict: 'Allow' });
    else
      expect(out.error).toBe(
        'On Node 20 the SQLite store needs better-sqlite3@12: npm install better-sqlite3@12',
      );
  });

  it('says which optional peer the PostgreSQL store needs', () => {
    const script = `
      import { openPostgresStore } from 'gatehouse/postgres';
      await openPostgresStore({ connectionString: 'postgres://127.0.0.1:1/none' }).catch((e) => console.log(e.message));`;
    expect(run(process.execPath, ['--input-type=module', '-e', script]).trim()).toBe(
      'The PostgreSQL store needs pg: npm install pg@8',
    );
  });

  it('says which optional peer a Redis-backed serve needs', () => {
    let stderr = '';
    try {
      run(process.execPath, [
        join(dir, 'node_modules', 'gatehouse', 'dist', 'adapters', 'cli', 'main.js'),
        'serve',
        '--port',
        '0',
        '--database',
        join(dir, 'serve.db'),
        '--redis-url',
        'redis://127.0.0.1:1',
      ]);
    } catch (error) {
      stderr = String((error as { stderr?: string }).stderr);
    }
    expect(stderr).toContain('REDIS_URL (--redis-url) needs @keyv/redis: npm install @keyv/redis@5');
  });
});
