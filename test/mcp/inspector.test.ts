/**
 * A third-party client: the MCP Inspector CLI (`@modelcontextprotocol/inspector-cli`, v1; v2 needs
 * Node >= 22.19) against the built `gatehouse mcp` (stdio) and `/mcp` (Streamable HTTP).
 * Runs only when the package is installed; it is not a dependency of the project.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../adapters/http/index.js';
import { createApiKey, createIdGenerator, type Gatehouse, systemRandomBytes } from '../../src/index.js';
import { BUDGET_POLICY_YAML, budgetGatehouse, startMcpHttpServer } from './fixtures.js';

const root = join(import.meta.dirname, '../..');
const inspectorDir = join(root, 'node_modules/@modelcontextprotocol/inspector-cli');
const inspectorCli = join(inspectorDir, 'build/cli.js');
const installed = existsSync(inspectorCli);
const CLI = join(root, 'dist/adapters/cli/main.js');

const run = promisify(execFile);

/** Runs the inspector in CLI mode; returns the JSON it prints on stdout. */
async function inspect(target: string[], method: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [inspectorCli, '--cli', ...target, '--method', ...method], {
    // inspector-cli 1.0.3 checks for `../package.json` relative to the working directory but imports it
    // relative to its module: from its own build/ folder both point at its package.json.
    cwd: join(inspectorDir, 'build'),
    timeout: 20_000,
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe.skipIf(!installed)(
  'MCP Inspector CLI (runs only when @modelcontextprotocol/inspector-cli is installed)',
  () => {
    let dir: string;
    let stdio: string[];
    let gh: Gatehouse;
    let server: RunningServer;
    let key: string;

    beforeAll(async () => {
      if (!existsSync(CLI))
        throw new Error(`${CLI} is missing: run \`npm run build\` first (\`npm test\` does).`);
      dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-inspector-'));
      const policyFile = join(dir, 'policy.yaml');
      writeFileSync(policyFile, BUDGET_POLICY_YAML);
      stdio = [
        'node',
        CLI,
        'mcp',
        '--database',
        join(dir, 'g.db'),
        '--policy',
        policyFile,
        '--session',
        's1',
      ];
      gh = budgetGatehouse();
      server = await startMcpHttpServer(gh);
      const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
      key = (await createApiKey(gh.store, deps, { scopes: ['admin'] })).secret;
      await gh.recordState({
        session_id: 'h1',
        key: 'budget.limit',
        value: '5000',
        type: 'fact',
        source: 'user_input',
      });
    });
    afterAll(async () => {
      await server?.close();
      await gh?.store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('lists, records and evaluates over stdio', async () => {
      const listed = await inspect(stdio, ['tools/list']);
      const tools = listed['tools'] as Array<{ name: string; outputSchema?: unknown }>;
      expect(tools.map((t) => t.name).sort()).toEqual([
        'evaluate_gate',
        'list_state',
        'read_history',
        'record_state',
        'resolve_conflict',
        'wait_for_approval',
      ]);
      expect(tools.every((t) => t.outputSchema !== undefined)).toBe(true);

      // The inspector JSON-parses each --tool-arg, so a numeric value must be quoted to stay a string.
      const recorded = await inspect(stdio, [
        'tools/call',
        '--tool-name',
        'record_state',
        '--tool-arg',
        'key=budget.limit',
        'value="5000"',
        'type=fact',
        'source=tool_output',
      ]);
      expect(recorded['structuredContent']).toMatchObject({ outcome: 'created', item: { session_id: 's1' } });

      const gate = await inspect(stdio, [
        'tools/call',
        '--tool-name',
        'evaluate_gate',
        '--tool-arg',
        'action=payments.transfer',
        'params={"amount":9000}',
      ]);
      expect(gate['isError']).toBeUndefined();
      expect(gate['structuredContent']).toMatchObject({ verdict: 'Block', allowed: false, session_id: 's1' });

      const unquoted = await inspect(stdio, [
        'tools/call',
        '--tool-name',
        'record_state',
        '--tool-arg',
        'key=budget.limit',
        'value=5000',
        'type=fact',
        'source=tool_output',
      ]);
      expect(unquoted['isError']).toBe(true);
      expect(JSON.stringify(unquoted['content'])).toContain('expected string, received number at value');

      const state = await inspect(stdio, ['resources/read', '--uri', 'gatehouse://sessions/s1/state']);
      const contents = state['contents'] as Array<{ text: string }>;
      expect(JSON.parse(contents[0]!.text)).toMatchObject({
        items: [{ key: 'budget.limit', value: '5000' }],
      });
    });

    it('calls evaluate_gate over Streamable HTTP with a bearer key', async () => {
      const target = [`${server.url}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${key}`];
      const gate = await inspect(target, [
        'tools/call',
        '--tool-name',
        'evaluate_gate',
        '--tool-arg',
        'session_id=h1',
        'action=payments.transfer',
        'params={"amount":9000}',
      ]);
      expect(gate['structuredContent']).toMatchObject({
        verdict: 'Block',
        reasons: [{ rule: 'over_budget' }],
      });
      await expect(inspect([`${server.url}/mcp`, '--transport', 'http'], ['tools/list'])).rejects.toThrow(
        /401/,
      );
    });
  },
);
