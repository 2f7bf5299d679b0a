/**
 * Architecture rules, read from the source tree: dependencies point inward.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);
}

/** What the core may import: node builtins and the libraries of the domain itself. */
const CORE_ALLOWED = new Set([
  'zod',
  'yaml',
  'picomatch',
  'canonicalize',
  'ulid',
  '@marcbachmann/cel-js',
  'standardwebhooks',
]);

describe('layering', () => {
  it('nothing under src/ imports adapters/ or an adapter dependency', () => {
    const offences: string[] = [];
    for (const file of tsFiles(join(root, 'src'))) {
      for (const spec of imports(file)) {
        const bad = spec.startsWith('.')
          ? /(^|\/)adapters\//.test(join(relative(root, join(file, '..')), spec))
          : !spec.startsWith('node:') && !CORE_ALLOWED.has(spec);
        if (bad) offences.push(`${relative(root, file)} imports ${spec}`);
      }
    }
    expect(offences).toEqual([]);
  });

  it('adapters import the core only through its public entry', () => {
    const offences: string[] = [];
    for (const file of tsFiles(join(root, 'adapters'))) {
      for (const spec of imports(file)) {
        if (!spec.startsWith('.')) continue;
        const target = join(file, '..', spec);
        const rel = relative(root, target);
        if (rel.startsWith('src/') && rel !== 'src/index.js')
          offences.push(`${relative(root, file)} imports ${spec}`);
      }
    }
    expect(offences).toEqual([]);
  });
});
