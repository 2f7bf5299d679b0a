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
const CORE_LIBRARIES = [
  'zod',
  'yaml',
  'safe-stable-stringify',
  'ulid',
  '@marcbachmann/cel-js',
  'standardwebhooks',
  // Access-token verification is core, like API-key checks: jose has no dependencies of its own.
  'jose',
  // Spans and metrics through the API only: no-ops until a host registers an SDK.
  '@opentelemetry/api',
];

/**
 * Modules that the named adapters (the owner among them) may import beyond an index: declarations
 * shared by several faces or backends, which would otherwise pull one adapter's dependencies
 * into another through its entry.
 */
const SHARED_MODULES: { path: string; importers: string[] }[] = [
  // The stores' statements and dialects (no face, no public entry).
  { path: '^adapters/sql/', importers: ['sql', 'sqlite', 'postgres'] },
  // The /v1 route table, declared once for the server, the OpenAPI document and the client.
  { path: '^adapters/http/routes?\\.ts$', importers: ['http', 'client'] },
];

/**
 * Modules that must not import an agent framework: the tool-call gate every framework face shares
 * (a face must not load another's framework), and the AI SDK face, whose declarations are written
 * as the shapes both majors of `ai` share (importing one major's types would break the other's apps).
 */
const FRAMEWORK_FREE = '^adapters/(toolgate|ai-sdk)/';
// Resolved (`node_modules/…`) or, where the package is not installed, as written.
const FRAMEWORKS = '^(node_modules/)?(ai|ai-v6|@ai-sdk/[^/]+|langchain|@langchain/[^/]+|@openai/[^/]+)(/|$)';

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
  { name: 'framework-free', severity: 'error', from: { path: FRAMEWORK_FREE }, to: { path: FRAMEWORKS } },
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
    to: {
      path: '^adapters/',
      pathNot: ['^adapters/$1/', '^adapters/[^/]+/index\\.ts$', ...SHARED_MODULES.map((m) => m.path)],
    },
  },
  ...SHARED_MODULES.map(
    (m): IForbiddenRuleType => ({
      name: 'shared-module-only-for-its-importers',
      severity: 'error',
      from: { path: '^adapters/', pathNot: `^adapters/(${m.importers.join('|')})/` },
      to: { path: m.path },
    }),
  ),
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

  it('nothing under src/ imports adapters/ or an adapter dependency', () => {
    expect([...offences('core-not-to-adapters'), ...offences('core-only-domain-libraries')]).toEqual([]);
  });

  it('the shared tool-call gate and the AI SDK face import no agent framework', () => {
    expect(offences('framework-free')).toEqual([]);
  });

  it('adapters import the core only through its public entry', () => {
    expect(offences('adapters-through-core-entry')).toEqual([]);
  });

  it('the rules see a circle of type-only imports and an adapter reaching into another', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-arch-'));
    const files: Record<string, string> = {
      'src/a.ts': "import type { B } from './b.js';\nexport interface A { b: B }\n",
      'src/b.ts': "import type { A } from './a.js';\nexport interface B { a?: A }\n",
      'adapters/http/app.ts': "import { routes } from './routes.js';\nexport const app = routes;\n",
      'adapters/http/routes.ts': 'export const routes = [];\n',
      'adapters/http/index.ts': "export { app } from './app.js';\n",
      'adapters/sql/rows.ts': 'export const rows = [];\n',
      'adapters/client/client.ts': "import { routes } from '../http/routes.js';\nexport const c = routes;\n",
      'adapters/mcp/server.ts':
        "import { app } from '../http/app.js';\nimport { app as ok } from '../http/index.js';\nexport const s = [app, ok];\n",
      'adapters/cli/main.ts': "import { rows } from '../sql/rows.js';\nexport const m = rows;\n",
      'adapters/toolgate/gate.ts':
        "import type { Tool } from '@langchain/core/tools';\nexport type T = Tool;\n",
    };
    try {
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(join(dir, file, '..'), { recursive: true });
        writeFileSync(join(dir, file), text);
      }
      const found = await cruiseTree(dir);
      expect(found.violations.map(describeViolation).sort()).toEqual([
        'adapter-not-into-other-adapter-internals: adapters/mcp/server.ts → adapters/http/app.ts',
        'framework-free: adapters/toolgate/gate.ts → @langchain/core/tools',
        'no-circular: src/a.ts → src/b.ts → src/a.ts',
        'shared-module-only-for-its-importers: adapters/cli/main.ts → adapters/sql/rows.ts',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an adapter imports another adapter only through that adapter's index", () => {
    expect([
      ...offences('adapter-not-into-other-adapter-internals'),
      ...offences('shared-module-only-for-its-importers'),
    ]).toEqual([]);
  });
});
