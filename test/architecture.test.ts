/**
 * Architecture rules, read from the source tree: dependencies point inward, and nothing imports
 * in a circle.
 *
 * The import graph comes from dependency-cruiser with the swc parser: its TypeScript parser needs
 * the compiler API that TypeScript 7's main entry no longer has, while swc parses the source
 * as written, so type-only imports (`import type`) are edges too — a circle of type imports is
 * still a circle for the reader.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cruise, type IForbiddenRuleType, type IViolation } from 'dependency-cruiser';
import { beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

/** What the core may import besides itself and node builtins: the libraries of the domain. */
const CORE_LIBRARIES = ['zod', 'yaml', 'picomatch', 'canonicalize', 'ulid', '@marcbachmann/cel-js'];

/**
 * The stores' shared SQL module: not a face and without a public entry, so only the stores import
 * it, and they may import any of its files.
 */
const SQL_SHARED = '^adapters/sql/';

const RULES: IForbiddenRuleType[] = [
  { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
  { name: 'core-not-to-adapters', severity: 'error', from: { path: '^src/' }, to: { path: '^adapters/' } },
  {
    name: 'core-only-domain-libraries',
    severity: 'error',
    from: { path: '^src/' },
    to: {
      dependencyTypesNot: ['core'],
      pathNot: ['^src/', `^node_modules/(${CORE_LIBRARIES.join('|')})/`],
    },
  },
  {
    name: 'adapters-through-core-entry',
    severity: 'error',
    from: { path: '^adapters/' },
    to: { path: '^src/', pathNot: '^src/index\\.ts$' },
  },
  {
    name: 'adapter-not-into-other-adapter-internals',
    severity: 'error',
    // `$1` is the importing adapter's folder: its own files are fair game.
    from: { path: '^adapters/([^/]+)/' },
    to: { path: '^adapters/', pathNot: ['^adapters/$1/', '^adapters/[^/]+/index\\.ts$', SQL_SHARED] },
  },
  {
    name: 'sql-module-only-for-stores',
    severity: 'error',
    from: { path: '^adapters/', pathNot: '^adapters/(sql|sqlite|postgres)/' },
    to: { path: SQL_SHARED },
  },
];

function describeViolation(v: IViolation): string {
  const cycle = v.cycle?.map((step) => step.name).join(' → ');
  return `${v.rule.name}: ${v.from} → ${cycle ?? v.to}`;
}

/** Cruises `src/` and `adapters/` (those that exist) under `dir` against {@link RULES}. */
async function cruiseTree(dir: string): Promise<{ violations: IViolation[]; modules: number }> {
  const previous = process.cwd();
  // dependency-cruiser names modules relative to the working directory.
  process.chdir(dir);
  try {
    const result = await cruise(
      ['src', 'adapters'].filter((d) => existsSync(join(dir, d))),
      {
        parser: 'swc',
        tsPreCompilationDeps: true,
        doNotFollow: { path: 'node_modules' },
        validate: true,
        ruleSet: { forbidden: RULES },
      },
    );
    if (typeof result.output === 'string') throw new Error('dependency-cruiser returned text, not a result');
    return { violations: result.output.summary.violations, modules: result.output.summary.totalCruised };
  } finally {
    process.chdir(previous);
  }
}

let violations: IViolation[] = [];
let modules = 0;

beforeAll(async () => {
  ({ violations, modules } = await cruiseTree(root));
});

function offences(rule: string): string[] {
  return violations.filter((v) => v.rule.name === rule).map(describeViolation);
}

describe('layering', () => {
  it('reads the whole tree', () => {
    // A parser that cannot read TypeScript would find no imports and so no offences.
    expect(modules).toBeGreaterThan(100);
  });

  it('nothing imports in a circle, type-only imports included', () => {
    expect(offences('no-circular')).toEqual([]);
  });

  it('the circle rule sees a circle made of type-only imports', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-arch-'));
    try {
      mkdirSync(join(dir, 'src'));
      writeFileSync(join(dir, 'src/a.ts'), "import type { B } from './b.js';\nexport interface A { b: B }\n");
      writeFileSync(
        join(dir, 'src/b.ts'),
        "import type { A } from './a.js';\nexport interface B { a?: A }\n",
      );
      const found = await cruiseTree(dir);
      expect(found.violations.map(describeViolation)).toEqual([
        'no-circular: src/a.ts → src/b.ts → src/a.ts',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('nothing under src/ imports adapters/ or an adapter dependency', () => {
    expect([...offences('core-not-to-adapters'), ...offences('core-only-domain-libraries')]).toEqual([]);
  });

  it('adapters import the core only through its public entry', () => {
    expect(offences('adapters-through-core-entry')).toEqual([]);
  });

  it("an adapter imports another adapter only through that adapter's index", () => {
    expect([
      ...offences('adapter-not-into-other-adapter-internals'),
      ...offences('sql-module-only-for-stores'),
    ]).toEqual([]);
  });
});
