/**
 * The MCP face under hostile input and the auth matrix: every tool, called by the real SDK Client
 * with fuzzed arguments (wrong types, unicode with lone surrogates, deep nesting, prototype keys),
 * answers with a result or an `isError` result (or the SDK's invalid-params error) and never an
 * internal failure; the server keeps serving. `/mcp` refuses missing, malformed, unknown and
 * revoked keys like /v1 does, a key without a tool's scope gets `forbidden`, and another tenant's
 * conflict is indistinguishable from one that does not exist.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../adapters/http/index.js';
import { createMcpHttpHandler, createMcpServer } from '../../adapters/mcp/index.js';
import { compilePolicy } from '../../src/index.js';
import { createWorld, memoryLogger, POLICY, type World } from './fixtures.js';

const RUNS = Number(process.env['GATEHOUSE_FUZZ_RUNS'] ?? 120);
const log = memoryLogger();
let world: World;
let client: Client;
let close: () => Promise<void>;

beforeAll(async () => {
  world = await createWorld({ policy: compilePolicy(POLICY) });
  const server = createMcpServer({ gatehouse: world.gh, logger: log.logger });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  client = new Client({ name: 'reliability', version: '1.0.0' });
  await client.connect(clientSide);
  close = async () => {
    await client.close();
    await server.close();
  };
});
afterAll(async () => {
  await close();
  await world.store.close();
});

// ---- fuzzed arguments ---------------------------------------------------------------------------

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const text = fc.string({
  unit: fc.oneof(
    { weight: 5, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
    { weight: 1, arbitrary: loneSurrogate },
    { weight: 1, arbitrary: fc.constantFrom('\u0000', '.', '..', '__proto__', 'budget.limit', 'user_input') },
  ),
  maxLength: 20,
});
const protoKey = fc.constantFrom('__proto__', 'constructor', 'prototype');
const { value } = fc.letrec<{ value: unknown; object: unknown }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 4, depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, 'fact', 'tool_output', 'keep_current', 's1'),
    text,
    fc.array(tie('value'), { maxLength: 4 }),
    tie('object'),
  ),
  object: fc
    .array(fc.tuple(fc.oneof(protoKey, text), tie('value')), { maxLength: 4 })
    // JSON.parse keeps `__proto__` an own key, as it arrives over a real transport.
    .map((entries) =>
      JSON.parse(
        `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`,
      ),
    ),
}));
const deep = fc
  .integer({ min: 30, max: 3000 })
  .map((n) => JSON.parse(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`));

const TOOLS: Record<string, Record<string, unknown>> = {
  record_state: { session_id: 's1', key: 'budget.note', value: 'x', type: 'fact', source: 'tool_output' },
  evaluate_gate: { session_id: 's1', action: 'payments.transfer', params: { amount: 10 } },
  read_history: { session_id: 's1', limit: 5 },
  list_state: { session_id: 's1' },
  resolve_conflict: { conflict_id: 'cfl_x', resolution: 'keep_current' },
  wait_for_approval: {
    approval_id: 'apr_x',
    session_id: 's1',
    action: 'payments.transfer',
    params: { amount: 10 },
    timeout_seconds: 1,
  },
};

function argumentsFor(tool: string) {
  const base = TOOLS[tool]!;
  const fields = [
    ...Object.keys(base),
    'metadata',
    'params',
    'context',
    'note',
    'cursor',
    'order',
    '__proto__',
  ];
  return fc
    .array(
      fc.tuple(
        fc.constantFrom(...fields),
        fc.oneof({ weight: 6, arbitrary: value }, { weight: 1, arbitrary: deep }),
        fc.boolean(),
      ),
      {
        maxLength: 3,
      },
    )
    .map((edits) => {
      const args: Record<string, unknown> = { ...base };
      for (const [field, v, drop] of edits) {
        if (drop) delete args[field];
        else
          Object.defineProperty(args, field, {
            value: v,
            enumerable: true,
            writable: true,
            configurable: true,
          });
      }
      return args;
    });
}

describe('every MCP tool under fuzzed arguments', () => {
  it.each(Object.keys(TOOLS))('%s: a result or isError, never an internal failure', async (tool) => {
    await fc.assert(
      fc.asyncProperty(argumentsFor(tool), async (args) => {
        let result: Awaited<ReturnType<Client['callTool']>>;
        try {
          result = await client.callTool({ name: tool, arguments: args });
        } catch (error) {
          // The SDK refuses arguments that break the tool's input schema before the tool runs.
          expect(error).toBeInstanceOf(McpError);
          expect((error as McpError).code).toBe(ErrorCode.InvalidParams);
          return;
        }
        const content = result.content as Array<{ type: string; text?: string }>;
        expect(content[0]?.type).toBe('text');
        if (result.isError) expect(content[0]!.text).not.toMatch(/^internal/);
        else expect(result.structuredContent).toBeTypeOf('object');
      }),
      { numRuns: RUNS },
    );
  });

  it('the server still serves, nothing was logged as an internal failure, no prototype is polluted', async () => {
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(Object.keys(TOOLS).length);
    const ok = await client.callTool({ name: 'list_state', arguments: { session_id: 's1' } });
    expect(ok.isError).toBeFalsy();
    expect(log.text()).not.toMatch(/MCP tool failed/);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('a');
  });
});

// ---- /mcp: auth ---------------------------------------------------------------------------------

describe('/mcp auth', () => {
  let app: ReturnType<typeof createHttpApp>;
  beforeAll(() => {
    app = createHttpApp({
      gatehouse: world.gh,
      rateLimit: false,
      mcp: createMcpHttpHandler({ gatehouse: world.gh }),
    });
  });

  /** One JSON-RPC `tools/call` over `/mcp`, stateless. */
  async function callTool(key: string | null, name: string, args: Record<string, unknown>) {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (key !== null) headers['authorization'] = `Bearer ${key}`;
    const res = await app.request('/mcp', {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name, arguments: args },
      }),
    });
    return { status: res.status, headers: res.headers, json: (await res.json()) as any };
  }

  it('raw JSON-RPC bodies, valid or not, never get a 5xx', async () => {
    const body = fc.oneof(
      fc
        .record({
          jsonrpc: fc.constantFrom('2.0', '1.0', 2),
          id: fc.oneof(fc.integer(), text, fc.constant(null)),
          method: fc.constantFrom(
            'tools/call',
            'tools/list',
            'initialize',
            'ping',
            'resources/read',
            'nope',
            '__proto__',
          ),
          params: fc.oneof(
            value,
            fc.record({
              name: fc.constantFrom(...Object.keys(TOOLS), 'nope', '__proto__'),
              arguments: value,
            }),
          ),
        })
        .map((m) => JSON.stringify(m)),
      fc
        .array(fc.constant('{"jsonrpc":"2.0","id":1,"method":"tools/list"}'), { maxLength: 3 })
        .map((b) => `[${b.join(',')}]`),
      text,
      deep.map((d) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: d })),
    );
    const accept = fc.constantFrom(
      'application/json, text/event-stream',
      'application/json',
      '*/*',
      'text/html',
    );
    await fc.assert(
      fc.asyncProperty(body, accept, async (b, a) => {
        const res = await app.request('/mcp', {
          method: 'POST',
          headers: {
            authorization: `Bearer ${world.keys.admin}`,
            'content-type': 'application/json',
            accept: a,
          },
          body: b,
        });
        expect(res.status, await res.text()).toBeLessThan(500);
      }),
      { numRuns: RUNS },
    );
  });

  it('missing, malformed, unknown and revoked keys: 401 problem+json with WWW-Authenticate', async () => {
    for (const key of [null, 'not-a-key', 'gh_unknownunknownunknownunknown', world.keys.revoked]) {
      const r = await callTool(key, 'list_state', { session_id: 's1' });
      expect(r.status).toBe(401);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer /);
    }
  });

  it.each([
    ['record_state', 'state:write', TOOLS['record_state']!],
    ['evaluate_gate', 'gate:evaluate', TOOLS['evaluate_gate']!],
    ['read_history', 'history:read', TOOLS['read_history']!],
    ['list_state', 'state:read', TOOLS['list_state']!],
    ['resolve_conflict', 'state:write', TOOLS['resolve_conflict']!],
  ] as const)(
    '%s needs %s: other keys get forbidden, the right one is not refused',
    async (tool, scope, args) => {
      for (const [held, key] of Object.entries(world.keys.scoped)) {
        const r = await callTool(key, tool, args);
        expect(r.status).toBe(200);
        const text = r.json.result.content[0].text as string;
        if (held === scope || held === 'admin') expect(text).not.toMatch(/^forbidden/);
        else {
          expect(r.json.result.isError).toBe(true);
          expect(text).toMatch(/^forbidden/);
        }
      }
    },
  );

  it("another tenant's conflict answers exactly like a conflict that does not exist", async () => {
    const other = world.keys.otherTenant;
    const real = await callTool(other, 'resolve_conflict', {
      conflict_id: world.ids.conflict,
      resolution: 'keep_current',
    });
    const madeUp = `cfl_${'z'.repeat(world.ids.conflict.length - 4)}`;
    const fake = await callTool(other, 'resolve_conflict', {
      conflict_id: madeUp,
      resolution: 'keep_current',
    });
    expect(real.json.result.isError).toBe(true);
    expect(real.json.result.content[0].text).toMatch(/^not_found/);
    expect(JSON.stringify(real.json).split(world.ids.conflict).join('<id>')).toBe(
      JSON.stringify(fake.json).split(madeUp).join('<id>'),
    );
    // And our conflict is still open.
    expect((await world.gh.getConflict(world.ids.conflict)).status).toBe('open');
  });
});
