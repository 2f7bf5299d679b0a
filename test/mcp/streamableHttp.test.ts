/**
 * MCP over Streamable HTTP on loopback: `/mcp` of the real HTTP app, behind bearer auth, with the
 * real SDK Client and StreamableHTTPClientTransport.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { createMcpHttpHandler } from '../../adapters/mcp/index.js';
import {
  type CreateApiKeyOptions,
  createApiKey,
  createIdGenerator,
  type Decision,
  type Gatehouse,
  type HistoryPage,
  systemRandomBytes,
} from '../../src/index.js';
import {
  BUDGET_POLICY_YAML,
  budgetGatehouse,
  connectMcpHttp,
  startMcpHttpServer,
  textOf,
} from './fixtures.js';

let gh: Gatehouse;
let server: RunningServer;
const clients: Client[] = [];

const ALL_SCOPES: CreateApiKeyOptions['scopes'] = [
  'state:write',
  'state:read',
  'gate:evaluate',
  'history:read',
];

async function newKey(options: CreateApiKeyOptions): Promise<string> {
  const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
  return (await createApiKey(gh.store, deps, options)).secret;
}

async function connect(key: string | undefined): Promise<Client> {
  const client = await connectMcpHttp(server.url, key, 'gatehouse-http-test');
  clients.push(client);
  return client;
}

beforeAll(async () => {
  gh = budgetGatehouse();
  server = await startMcpHttpServer(gh);
});

afterAll(async () => {
  for (const client of clients) await client.close();
  await server.close();
  await gh.store.close();
});

describe('MCP over Streamable HTTP', () => {
  it("describes record_state from the tenant's policy in force, and from the next one once it is activated", async () => {
    const tenantId = 'trusting';
    const client = await connect(await newKey({ tenantId, scopes: ALL_SCOPES }));
    const describedSources = async () =>
      /You may claim: (.*?)\. Any other/.exec(
        (await client.listTools()).tools.find((t) => t.name === 'record_state')!.description!,
      )?.[1];
    // The instance's policy until the tenant activates its own.
    expect(await describedSources()).toContain('user_input (trust 3');
    const activate = async (userInputTrust: number) => {
      const { revision } = await gh.getActivePolicy({ tenantId });
      const policy = `${BUDGET_POLICY_YAML}sources: { system: 9, user_input: ${userInputTrust}, tool_output: 2, retrieval: 1, agent_inference: 1 }\n`;
      await gh.activatePolicy({ policy, expected_revision: revision }, { tenantId });
    };
    await activate(7);
    expect(await describedSources()).toContain('user_input (trust 7');
    await activate(8);
    expect(await describedSources()).toContain('user_input (trust 8');
    // What the tenant's client is told is what the core applies to its writes.
    const recorded = await client.callTool({
      name: 'record_state',
      arguments: { session_id: 'p1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' },
    });
    expect(recorded.structuredContent).toMatchObject({ outcome: 'created', item: { trust: 8 } });
  });

  it('a valid key lists and calls the tools', async () => {
    const client = await connect(await newKey({ tenantId: 'acme', scopes: ALL_SCOPES }));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'evaluate_gate',
      'list_state',
      'read_history',
      'record_state',
      'resolve_conflict',
      'wait_for_approval',
    ]);
    // A key's sources (here the default: everything but system) are what its client may claim.
    expect(tools.find((t) => t.name === 'record_state')?.description).toContain(
      'You may claim: user_input (trust 3',
    );

    const recorded = await client.callTool({
      name: 'record_state',
      arguments: { session_id: 'h1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' },
    });
    expect(recorded.isError).toBeFalsy();
    expect(recorded.structuredContent).toMatchObject({ outcome: 'created', item: { trust: 3 } });
    const gate = await client.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 'h1', action: 'payments.transfer', params: { amount: 9000 } },
    });
    expect(gate.isError).toBeFalsy();
    expect(gate.structuredContent).toMatchObject({ verdict: 'Block', allowed: false });
    expect(textOf(gate)).toMatch(
      /^Block: Transfer of 9000 exceeds the budget of 5000\. \(decision dec_\w+; keys budget\.limit\)/,
    );
    // The write landed in the key's tenant.
    expect((await gh.getItem('h1', 'budget.limit', { tenantId: 'acme' })).value).toBe('5000');
  });

  it('a missing or invalid key cannot connect (401)', async () => {
    await expect(connect(undefined)).rejects.toMatchObject({ code: 401 });
    await expect(connect('gh_not-a-real-key')).rejects.toMatchObject({ code: 401 });
    const res = await fetch(`${server.url}/mcp`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('a key without gate:evaluate gets forbidden from evaluate_gate', async () => {
    const client = await connect(await newKey({ tenantId: 'acme', scopes: ['state:read', 'history:read'] }));
    const result = await client.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 'h1', action: 'payments.transfer', params: { amount: 1 } },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("forbidden: This API key lacks the 'gate:evaluate' scope.");
    const write = await client.callTool({
      name: 'record_state',
      arguments: { session_id: 'h1', key: 'a.b', value: '1', type: 'fact', source: 'tool_output' },
    });
    expect(textOf(write)).toBe("forbidden: This API key lacks the 'state:write' scope.");
    const read = await client.callTool({ name: 'list_state', arguments: { session_id: 'h1' } });
    expect(read.isError).toBeFalsy();
  });

  it("a key's sources cap the trust its client may claim", async () => {
    const client = await connect(
      await newKey({ tenantId: 'acme', scopes: ALL_SCOPES, sources: ['tool_output'] }),
    );
    const result = await client.callTool({
      name: 'record_state',
      arguments: { session_id: 'h2', key: 'budget.limit', value: '1', type: 'fact', source: 'user_input' },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      "forbidden: This caller may not write state with source 'user_input'; it may use: tool_output.",
    );
  });

  it('a key of tenant B sees nothing of tenant A', async () => {
    const a = await connect(await newKey({ tenantId: 'tenant-a', scopes: ALL_SCOPES }));
    const b = await connect(await newKey({ tenantId: 'tenant-b', scopes: ALL_SCOPES }));
    await a.callTool({
      name: 'record_state',
      arguments: {
        session_id: 'shared',
        key: 'budget.limit',
        value: '5000',
        type: 'fact',
        source: 'user_input',
      },
    });
    const decided = await a.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 'shared', action: 'payments.transfer', params: { amount: 10 } },
    });
    const decisionId = (decided.structuredContent as Decision).decision_id;
    expect((decided.structuredContent as Decision).verdict).toBe('Allow');

    const history = await b.callTool({ name: 'read_history', arguments: { session_id: 'shared' } });
    expect(history.isError).toBeFalsy();
    expect((history.structuredContent as HistoryPage).events).toEqual([]);
    const byDecision = await b.callTool({ name: 'read_history', arguments: { decision_id: decisionId } });
    expect((byDecision.structuredContent as HistoryPage).events).toEqual([]);
    const state = await b.callTool({ name: 'list_state', arguments: { session_id: 'shared' } });
    expect(state.structuredContent).toMatchObject({ items: [], conflicts: [] });
    // B's gate decides on B's (empty) state: the required budget is missing.
    const gate = await b.callTool({
      name: 'evaluate_gate',
      arguments: { session_id: 'shared', action: 'payments.transfer', params: { amount: 10 } },
    });
    const decision = gate.structuredContent as Decision;
    expect(decision.verdict).toBe('Block');
    expect(decision.reasons[0]).toMatchObject({ rule: 'required_missing', keys: ['budget.limit'] });

    const own = await a.callTool({ name: 'read_history', arguments: { session_id: 'shared' } });
    expect((own.structuredContent as HistoryPage).events.map((e) => e.type)).toEqual([
      'gate_evaluation',
      'state_change',
    ]);
  });

  it('MCP and HTTP give the same decision for the same state and action', async () => {
    const key = await newKey({ tenantId: 'same', scopes: ALL_SCOPES });
    const client = await connect(key);
    const ctx = { tenantId: 'same' };
    await gh.recordState(
      { session_id: 'd1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' },
      ctx,
    );
    await gh.recordState(
      { session_id: 'd1', key: 'budget.limit', value: '6000', type: 'fact', source: 'user_input' },
      ctx,
    );
    await gh.recordState(
      { session_id: 'd2', key: 'budget.limit', value: '100', type: 'fact', source: 'user_input' },
      ctx,
    );
    await gh.recordState(
      { session_id: 'd2', key: 'budget.limit', value: '999', type: 'fact', source: 'retrieval' },
      ctx,
    );

    const cases = [
      { session_id: 'd1', action: 'payments.transfer', params: { amount: 9000 } },
      { session_id: 'd1', action: 'payments.transfer', params: { amount: 10 } },
      { session_id: 'd2', action: 'payments.refund', params: { amount: 50 } },
      { session_id: 'd2', action: 'email.send', context: { channel: 'chat' } },
      { session_id: 'd3', action: 'payments.transfer', params: { amount: 1 } },
    ];
    const verdicts: string[] = [];
    for (const input of cases) {
      const res = await fetch(`${server.url}/v1/gates/evaluate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(input),
      });
      expect(res.status).toBe(200);
      const viaHttp = (await res.json()) as Decision;
      const viaMcp = await client.callTool({ name: 'evaluate_gate', arguments: input });
      expect(viaMcp.isError).toBeFalsy();
      const decision = viaMcp.structuredContent as Decision;
      const comparable = (d: Decision) => ({
        verdict: d.verdict,
        allowed: d.allowed,
        reason: d.reason,
        reasons: d.reasons,
        shadow: d.shadow,
        state_versions: d.state_versions,
        policy: d.policy,
        session_id: d.session_id,
        action: d.action,
      });
      expect(comparable(decision)).toEqual(comparable(viaHttp));
      expect(Object.keys(decision).sort()).toEqual(Object.keys(viaHttp).sort());
      expect(decision.decision_id).not.toBe(viaHttp.decision_id);
      verdicts.push(decision.verdict);
    }
    // The cases cover every verdict, including the budget read at its second version.
    expect(verdicts).toEqual(['Block', 'Allow', 'Block', 'Warn', 'Block']);
  });

  it('is stateless: a bare tools/call POST works, GET and DELETE are 405', async () => {
    const key = await newKey({ tenantId: 'raw', scopes: ALL_SCOPES });
    const headers = {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'evaluate_gate', arguments: { session_id: 'r1', action: 'email.send' } },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const body = (await res.json()) as { id: number; result: { structuredContent: Decision } };
    expect(body.id).toBe(1);
    expect(body.result.structuredContent).toMatchObject({ verdict: 'Allow', session_id: 'r1' });

    for (const method of ['GET', 'DELETE']) {
      const other = await fetch(`${server.url}/mcp`, { method, headers });
      expect(other.status, method).toBe(405);
      expect(other.headers.get('allow')).toBe('POST');
    }
  });

  it('rejects a request body over the limit with 413', async () => {
    const key = await newKey({ tenantId: 'raw', scopes: ALL_SCOPES });
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(70_000) } }),
    });
    expect(res.status).toBe(413);
  });
});

describe('MCP request errors: body read by the app or by the transport, the same answers', () => {
  // `server` reads the body itself (node:http) and hands the transport the parsed message; here
  // the handler gets no body reader, so the SDK transport reads `request.body` as it would alone.
  let sdkReads: RunningServer;
  beforeAll(async () => {
    const handler = createMcpHttpHandler({ gatehouse: gh });
    const app = createHttpApp({
      gatehouse: gh,
      mcp: (request, principal) => handler(request, principal),
      rateLimit: false,
    });
    sdkReads = await startHttpServer(app.fetch, { port: 0 });
  });
  afterAll(async () => {
    await sdkReads.close();
  });

  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(70_000) } });
  const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  /** A body sent in chunks without Content-Length, so only the read itself can find it too large. */
  const chunked = (text: string) => ({
    body: new ReadableStream({
      start(controller) {
        const bytes = new TextEncoder().encode(text);
        for (let at = 0; at < bytes.length; at += 16_384) controller.enqueue(bytes.slice(at, at + 16_384));
        controller.close();
      },
    }),
    duplex: 'half',
  });
  const cases: Record<
    string,
    { status: number; headers: Record<string, string>; init: Record<string, unknown> }
  > = {
    'a ping': {
      status: 200,
      headers: json,
      init: { body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }) },
    },
    'invalid JSON': { status: 400, headers: json, init: { body: '{"jsonrpc": "2.0", ' } },
    'JSON that is not JSON-RPC': { status: 400, headers: json, init: { body: '{"hello": "world"}' } },
    'a notification only': {
      status: 202,
      headers: json,
      init: { body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) },
    },
    'too large, Content-Length given': { status: 413, headers: json, init: { body: big } },
    'too large, chunked': { status: 413, headers: json, init: chunked(big) },
    'Accept without text/event-stream, too large': {
      status: 406,
      headers: { ...json, accept: 'application/json' },
      init: { body: big },
    },
    'Content-Type text/plain, invalid JSON': {
      status: 415,
      headers: { ...json, 'content-type': 'text/plain; a=application/json' },
      init: { body: '{' },
    },
  };

  for (const [name, { status, headers, init }] of Object.entries(cases)) {
    it(name, async () => {
      const key = await newKey({ tenantId: 'raw', scopes: ALL_SCOPES });
      const send = async (to: RunningServer) => {
        const res = await fetch(`${to.url}/mcp`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, ...headers },
          ...(init.body instanceof ReadableStream ? chunked(big) : init),
        } as RequestInit);
        return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
      };
      const viaApp = await send(server);
      expect(viaApp.status).toBe(status);
      expect(viaApp).toEqual(await send(sdkReads));
    });
  }
});
