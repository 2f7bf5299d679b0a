/**
 * Approvals through MCP: the real SDK Client over Streamable HTTP on loopback, with the agent's
 * key. `evaluate_gate` tells the model the action is held and must not be done; a person
 * approves over /v1 with their own key; `wait_for_approval` sees it and re-evaluates.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatehouseClient } from '../../adapters/client/index.js';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { createMcpHttpHandler } from '../../adapters/mcp/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type Approval,
  type CreateApiKeyOptions,
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Decision,
  type Gatehouse,
  systemRandomBytes,
} from '../../src/index.js';
import { textOf } from '../mcp/fixtures.js';
import { APPROVAL_POLICY } from '../support/policies.js';

let gh: Gatehouse;
let server: RunningServer;
let client: Client;
let financeKey: string;

async function newKey(options: CreateApiKeyOptions): Promise<string> {
  const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
  return (await createApiKey(gh.store, deps, options)).secret;
}

beforeAll(async () => {
  gh = createGatehouse({ store: openSqliteStore(), policy: compilePolicy(APPROVAL_POLICY) });
  const app = createHttpApp({
    gatehouse: gh,
    mcp: createMcpHttpHandler({ gatehouse: gh }),
    rateLimit: false,
  });
  server = await startHttpServer(app.fetch, { port: 0 });
  const agentKey = await newKey({ scopes: ['gate:evaluate', 'state:write'], sources: ['user_input'] });
  financeKey = await newKey({ scopes: ['approvals:decide'], labels: ['finance'] });
  client = new Client({ name: 'approvals-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${agentKey}` } },
    }),
  );
  await client.callTool({
    name: 'record_state',
    arguments: { session_id: 'm1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' },
  });
});
afterAll(async () => {
  await client?.close();
  await server?.close();
  await gh?.store.close();
});

const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
const transfer = { session_id: 'm1', action: 'payments.transfer', params: { amount: 9000 } };

describe('approvals over MCP', () => {
  it('evaluate_gate holds; wait_for_approval waits, sees the approval and releases the action once', async () => {
    const held = await call('evaluate_gate', transfer);
    expect(held.isError).toBeFalsy();
    const decision = held.structuredContent as Decision;
    const id = decision.approval!.id;
    expect(decision).toMatchObject({ verdict: 'Block', approval: { status: 'pending' } });
    expect(textOf(held)).toContain(`HELD for approval ${id}`);
    expect(textOf(held)).toContain('Do not perform it');
    expect(textOf(held)).toContain('wait_for_approval');

    // Still pending after a short wait: the model is told not to act.
    const early = await call('wait_for_approval', { approval_id: id, timeout_seconds: 1 });
    expect(early.structuredContent).toMatchObject({ approval: { status: 'pending' }, decision: null });
    expect(textOf(early)).toContain('Do NOT perform');

    const waiting = call('wait_for_approval', { approval_id: id, timeout_seconds: 30 });
    await createGatehouseClient({ baseUrl: server.url, apiKey: financeKey }).approve(id, { comment: 'fine' });
    const released = await waiting;
    expect(released.isError).toBeFalsy();
    const out = released.structuredContent as { approval: Approval; decision: Decision };
    expect(out.approval.status).toBe('approved');
    expect(out.decision).toMatchObject({ verdict: 'Allow', approval: { id, status: 'used' } });
    expect(textOf(released)).toContain('You may now perform payments.transfer');

    // The approval was consumed by that re-evaluation: waiting again releases nothing.
    const twice = await call('wait_for_approval', { approval_id: id, timeout_seconds: 1 });
    expect(twice.structuredContent).toMatchObject({ approval: { status: 'used' }, decision: null });
    expect(textOf(twice)).toContain('already used');
    // The request records the MCP client's key as the one who asked.
    expect((await gh.getApproval(id)).requested_by).toMatch(/^key_/);
  });

  it('a denial reaches the model; bad arguments are isError, never a crash', async () => {
    const held = await call('evaluate_gate', { ...transfer, params: { amount: 7777 } });
    const id = (held.structuredContent as Decision).approval!.id;
    await createGatehouseClient({ baseUrl: server.url, apiKey: financeKey }).deny(id, { comment: 'no' });
    const denied = await call('wait_for_approval', { approval_id: id, timeout_seconds: 5 });
    expect(textOf(denied)).toContain('DENIED');
    expect(textOf(denied)).toContain('Do NOT perform');

    const unknown = await call('wait_for_approval', { approval_id: 'apr_nothing', timeout_seconds: 1 });
    expect(unknown.isError).toBe(true);
    expect(textOf(unknown)).toMatch(/^not_found:/);
    const tooLong = await call('wait_for_approval', { approval_id: id, timeout_seconds: 600 });
    expect(tooLong.isError).toBe(true);
  });
});
