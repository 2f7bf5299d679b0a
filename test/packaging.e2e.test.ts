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
  // The LangChain face's peers, as a LangChain app already has them; the optional peers of the
  // other faces (pg, Redis, better-sqlite3) are left out, as most consumers would.
  const peers = ['@langchain/core', 'langchain'].map((name) => `${name}@${pkg.peerDependencies[name]}`);
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
  });

  it.each(subpaths)('%s imports and exports something', (subpath) => {
    const out = run(process.execPath, [
      '--input-type=module',
      '-e',
      `const m = await import(${JSON.stringify(subpath)}); console.log(Object.keys(m).length);`,
    ]);
    expect(Number(out.trim())).toBeGreaterThan(0);
  });
});
