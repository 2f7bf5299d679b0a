/**
 * Client mistakes in a request's params are answered as such: -32602 (Invalid params) with a
 * one-line message, never -32603 (Internal error) with a zod dump; a tool name that is an
 * Object.prototype member reads like any unknown name. Driven by the real SDK Client over the
 * in-memory pair, Streamable HTTP on loopback and the built `gatehouse mcp` over stdio.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ClientRequestSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RunningServer } from '../../adapters/http/index.js';
import { createMcpServer } from '../../adapters/mcp/index.js';
import { createApiKey, createIdGenerator, type Gatehouse, systemRandomBytes } from '../../src/index.js';
import { BUDGET_POLICY_YAML, budgetGatehouse, startMcpHttpServer } from './fixtures.js';

/** The probe's malformed calls, each with the answer a client should get. */
const MALFORMED: ReadonlyArray<{ method: string; params: Record<string, unknown>; message: string }> = [
  {
    method: 'tools/call',
    params: { name: 'record_state', arguments: [] },
    message: 'tools/call: arguments must be an object, received array',
  },
  {
    method: 'tools/call',
    params: { name: 'record_state', arguments: 'x' },
    message: 'tools/call: arguments must be an object, received string',
  },
  {
    method: 'tools/call',
    params: { name: 1 },
    message: 'tools/call: name must be a string, received number',
  },
  { method: 'tools/call', params: { arguments: {} }, message: 'tools/call: name is required' },
  {
    method: 'resources/read',
    params: { uri: 'constructor' },
    message: 'resources/read: uri must be an absolute URI (scheme:…), received "constructor"',
  },
];

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];

const anyResult = z.looseObject({});

/** What a request got: its result, or its JSON-RPC error's code and message. */
async function outcome(client: Client, method: string, params: Record<string, unknown>) {
  try {
    return { result: await client.request({ method, params } as never, anyResult) };
  } catch (error) {
    if (!(error instanceof McpError)) throw error;
    return { code: error.code, message: error.message };
  }
}

/** The same two tests on each transport's client. */
function itAnswersLikeTheProbeExpects(getClient: () => Client): void {
  it('answers malformed params with -32602 and one precise line', async () => {
    const client = getClient();
    for (const { method, params, message } of MALFORMED) {
      expect(await outcome(client, method, params), JSON.stringify(params)).toEqual({
        code: ErrorCode.InvalidParams,
        message: `MCP error -32602: ${message}`,
      });
    }
    // Well-formed calls still reach the tools.
    const listed = await client.callTool({ name: 'list_state', arguments: { session_id: 's1' } });
    expect(listed.isError).toBeFalsy();
  });

  it('answers a tool name that is an Object.prototype member as it answers any unknown name', async () => {
    const client = getClient();
    const unknown = (name: string) => ({
      content: [{ type: 'text', text: `MCP error -32602: Tool ${name} not found` }],
      isError: true,
    });
    expect(await client.callTool({ name: 'nope', arguments: {} })).toEqual(unknown('nope'));
    for (const name of PROTOTYPE_NAMES) {
      expect(await client.callTool({ name, arguments: {} }), name).toEqual(unknown(name));
    }
  });
}

describe('malformed requests (in-memory)', () => {
  let gh: Gatehouse;
  let client: Client;
  beforeAll(async () => {
    gh = budgetGatehouse();
    const server = createMcpServer({ gatehouse: gh });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    client = new Client({ name: 'gatehouse-malformed-test', version: '1.0.0' });
    await client.connect(clientSide);
  });
  afterAll(async () => {
    await client.close();
    await gh.store.close();
  });

  itAnswersLikeTheProbeExpects(() => client);

  it('answers no client request with -32603 for params of the wrong type', async () => {
    // Every field any client request has, each of a type none of them accepts.
    const junk = {
      name: 1,
      uri: 1,
      cursor: 1,
      arguments: [],
      protocolVersion: 1,
      capabilities: 1,
      clientInfo: 1,
      level: 1,
      ref: 1,
      argument: 1,
      taskId: 1,
    };
    const methods = ClientRequestSchema.options.map((schema) => schema.shape.method.value);
    expect(methods).toContain('tools/call');
    for (const method of methods) {
      const answer = await outcome(client, method, junk);
      if ('code' in answer) {
        expect([ErrorCode.InvalidParams, ErrorCode.MethodNotFound], method).toContain(answer.code);
        expect(answer.message, method).not.toContain('\n');
      }
    }
  });
});

describe('malformed requests (Streamable HTTP)', () => {
  let gh: Gatehouse;
  let server: RunningServer;
  let key: string;
  let client: Client;
  beforeAll(async () => {
    gh = budgetGatehouse();
    server = await startMcpHttpServer(gh);
    const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
    key = (
      await createApiKey(gh.store, deps, {
        tenantId: 'acme',
        scopes: ['state:write', 'state:read', 'gate:evaluate', 'history:read'],
      })
    ).secret;
    client = new Client({ name: 'gatehouse-malformed-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
  });
  afterAll(async () => {
    await client.close();
    await server.close();
    await gh.store.close();
  });

  itAnswersLikeTheProbeExpects(() => client);

  it("answers the probe's exact body, alone and in a batch with a valid request", async () => {
    const post = (body: unknown) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(body),
      });
    const probe = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'record_state', arguments: [] },
    };
    const invalid = {
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: 'tools/call: arguments must be an object, received array' },
    };
    const alone = await post(probe);
    expect(alone.status).toBe(200);
    expect(await alone.json()).toEqual(invalid);

    const batch = await post([probe, { jsonrpc: '2.0', id: 2, method: 'ping' }]);
    expect(batch.status).toBe(200);
    expect(await batch.json()).toEqual([invalid, { jsonrpc: '2.0', id: 2, result: {} }]);
  });
});

describe('malformed requests (stdio, `gatehouse mcp`)', () => {
  const CLI = join(import.meta.dirname, '../../dist/adapters/cli/main.js');
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-malformed-'));
  let client: Client;
  beforeAll(async () => {
    if (!existsSync(CLI))
      throw new Error(`${CLI} is missing: run \`npm run build\` first (\`npm test\` does).`);
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, BUDGET_POLICY_YAML);
    client = new Client({ name: 'gatehouse-malformed-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp', '--database', join(dir, 'stdio.db'), '--policy', policy],
        stderr: 'ignore',
      }),
    );
  });
  afterAll(async () => {
    await client?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  itAnswersLikeTheProbeExpects(() => client);
});
