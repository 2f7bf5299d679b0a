/**
 * The committed package-lock.json is one `npm ci` accepts: every optional dependency a locked
 * package declares (other platforms' binaries, as Biome's) is itself in the lock. A lock written
 * without them installs with `npm install` (which rewrites it) but `npm ci` refuses it as out of
 * sync, breaking a pipeline or an image build on a clean clone. CI installs with `npm ci` too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

interface LockEntry {
  optionalDependencies?: Record<string, string>;
}

const lock = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package-lock.json'), 'utf8')) as {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
};

/** Where node's resolution finds `name` from the package at `path`: its own tree, then each parent's. */
function resolves(path: string, name: string): boolean {
  let at = path;
  for (;;) {
    if (lock.packages[`${at === '' ? '' : `${at}/`}node_modules/${name}`] !== undefined) return true;
    if (at === '') return false;
    const parent = at.lastIndexOf('/node_modules/');
    at = parent < 0 ? '' : at.slice(0, parent);
  }
}

describe('package-lock.json', () => {
  it('is a version 3 lock', () => {
    expect(lock.lockfileVersion).toBe(3);
  });

  it('holds every optional dependency of every locked package, so `npm ci` accepts it', () => {
    const missing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        if (!resolves(path, name)) missing.push(`${path || '(root)'} → ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
