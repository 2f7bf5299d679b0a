/**
 * The real `gatehouse mcp` command over stdio, driven by the SDK's StdioClientTransport.
 * Runs the built CLI (`npm test` builds first).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { createGatehouse, type Decision, type HistoryPage, type RecordStateResult } from '../../src/index.js';
import { BUDGET_POLICY_YAML, textOf } from './fixtures.js';

const CLI = join(import.meta.dirname, '../../dist/adapters/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-stdio-'));
const policyFile = join(dir, 'policy.yaml');

beforeAll(() => {
  if (!existsSync(CLI))
    throw new Error(`${CLI} is missing: run \`npm run build\` first (\`npm test\` does).`);
  writeFileSync(policyFile, BUDGET_POLICY_YAML);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts `gatehouse mcp` and connects a client; collects stderr and every transport error. */
async function start(database: string, extraArgs: string[] = []) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--database', database, '--policy', policyFile, '--log-level', 'info', ...extraArgs],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  // A stdout line that is not a JSON-RPC message reaches the client's onerror (and is dropped).
  const transportErrors: Error[] = [];
  const client = new Client({ name: 'gatehouse-stdio-test', version: '1.0.0' });
  client.onerror = (error) => transportErrors.push(error);
  await client.connect(transport);
  return { client, transportErrors, stderr: () => stderr };
}

describe('gatehouse mcp (stdio)', () => {
  it('records, evaluates and reads history over stdio, with only protocol on stdout', async () => {
    const database = join(dir, 'stdio.db');
    const { client, transportErrors, stderr } = await start(database, ['--session', 's1']);

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('evaluate_gate');
    expect(tools.find((t) => t.name === 'record_state')?.inputSchema.required).toEqual([
      'key',
      'value',
      'type',
      'source',
    ]);

    const recorded = await client.callTool({
      name: 'record_state',
      arguments: { key: 'budget.limit', value: '5000', type: 'constraint', source: 'tool_output' },
    });
    expect(recorded.isError).toBeFalsy();
    expect((recorded.structuredContent as RecordStateResult).item).toMatchObject({
      session_id: 's1',
      version: 1,
    });

    // The default stdio cap: a model may not speak for the user.
    const asUser = await client.callTool({
      name: 'record_state',
      arguments: { key: 'budget.limit', value: '900000', type: 'fact', source: 'user_input' },
    });
    expect(asUser.isError).toBe(true);
    expect(textOf(asUser)).toMatch(/^forbidden: .*it may use: tool_output, retrieval, agent_inference\.$/);

    const gate = await client.callTool({
      name: 'evaluate_gate',
      arguments: { action: 'payments.transfer', params: { amount: 9000 } },
    });
    expect(gate.isError).toBeFalsy();
    const decision = gate.structuredContent as Decision;
    expect(decision).toMatchObject({
      verdict: 'Block',
      session_id: 's1',
      state_versions: { 'budget.limit': 1 },
    });
    expect(textOf(gate)).toContain('Block: Transfer of 9000 exceeds the budget of 5000.');

    const history = await client.callTool({ name: 'read_history', arguments: { order: 'asc' } });
    const page = history.structuredContent as HistoryPage;
    expect(page.events.map((e) => e.type)).toEqual(['state_change', 'gate_evaluation']);
    expect(page.events[1]?.data['decision_id']).toBe(decision.decision_id);

    await client.close();
    // Every stdout line was a JSON-RPC message: the client reported no parse error.
    expect(transportErrors).toEqual([]);
    expect(stderr()).toContain('MCP stdio server ready');

    // The process closed the store cleanly: the file holds an intact chain.
    const gh = createGatehouse({ store: openSqliteStore({ filename: database }) });
    try {
      // Three: the first use of the tenant also recorded the policy `gatehouse mcp` runs with.
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 3 });
    } finally {
      await gh.store.close();
    }
  });

  it('--sources widens the cap; stdout carries nothing but JSON-RPC lines', async () => {
    const database = join(dir, 'raw.db');
    const child = spawn(
      process.execPath,
      [CLI, 'mcp', '--database', database, '--sources', 'user_input,tool_output', '--log-level', 'debug'],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: {
        name: 'record_state',
        arguments: {
          session_id: 'r1',
          key: 'budget.limit',
          value: '5000',
          type: 'fact',
          source: 'user_input',
        },
      },
    });
    send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } });
    // Closing stdin is how a client says goodbye: the server answers what it has, then exits.
    child.stdin.end();
    expect(await exited).toBe(0);

    const lines = stdout.split('\n').filter((line) => line !== '');
    type Answer = {
      jsonrpc: string;
      id: number;
      result?: { isError?: boolean; structuredContent?: unknown };
    };
    const messages = lines.map((line) => JSON.parse(line) as Answer);
    expect(messages.every((m) => m.jsonrpc === '2.0')).toBe(true);
    // Calls run concurrently, so answers may come in any order; each request got exactly one.
    expect(messages.map((m) => m.id).sort()).toEqual([1, 2, 3]);
    const answer = (id: number) => messages.find((m) => m.id === id)?.result;
    expect(answer(2)?.structuredContent).toMatchObject({
      outcome: 'created',
      item: { source: 'user_input' },
    });
    expect(answer(3)).toMatchObject({ isError: true });
    expect(stderr).toContain('"msg":"MCP stdio server stopping"');
  });

  it('refuses to start with an unknown source or an invalid default session', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, 'mcp', '--database', join(dir, 'bad.db'), ...args]);
        let stderr = '';
        let stdout = '';
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString('utf8');
        });
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString('utf8');
        });
        child.once('exit', (code) => resolve({ code, stderr, stdout }));
        child.stdin.end();
      });
    const badSource = await run(['--sources', 'user-input']);
    expect(badSource).toMatchObject({ code: 1, stdout: '' });
    expect(badSource.stderr).toContain(
      "gatehouse: Unknown source(s) 'user-input' among the allowed sources; the policy defines: system, user_input",
    );
    const badSession = await run(['--session', 'a b']);
    expect(badSession).toMatchObject({ code: 1, stdout: '' });
    expect(badSession.stderr).toContain('session_id must be printable ASCII without spaces');
  });
});
