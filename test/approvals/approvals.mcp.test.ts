/**
 * Approvals through MCP: the real SDK Client over Streamable HTTP on loopback, with the agent's
 * key. `evaluate_gate` tells the model the action is held and must not be done; a person
 * approves over /v1 with their own key; `wait_for_approval` sees it and evaluates the caller's
 * own call again. Another agent's key cannot wait on (or read over /v1) an approval it never
 * asked for.
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
/** Another agent of the same tenant, with its own key: it never asked for the first agent's approvals. */
let otherClient: Client;
let agentKey: string;
let otherKey: string;
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
  agentKey = await newKey({ scopes: ['gate:evaluate', 'state:write'], sources: ['user_input'] });
  otherKey = await newKey({ scopes: ['gate:evaluate', 'state:write'], sources: ['user_input'] });
  financeKey = await newKey({ scopes: ['approvals:decide'], labels: ['finance'] });
  client = await connect(agentKey);
  otherClient = await connect(otherKey);
  for (const session of ['m1', 'm2']) {
    await client.callTool({
      name: 'record_state',
      arguments: {
        session_id: session,
        key: 'budget.limit',
        value: '5000',
        type: 'fact',
        source: 'user_input',
      },
    });
  }
});
afterAll(async () => {
  await client?.close();
  await otherClient?.close();
  await server?.close();
  await gh?.store.close();
});

async function connect(key: string): Promise<Client> {
  const mcp = new Client({ name: 'approvals-test', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  return mcp;
}

const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
const transfer = { session_id: 'm1', action: 'payments.transfer', params: { amount: 9000 } };
const approver = () => createGatehouseClient({ baseUrl: server.url, apiKey: financeKey });

/** Holds `call` for approval as the agent; the approval's ID. */
async function hold(args: Record<string, unknown>): Promise<string> {
  const held = await call('evaluate_gate', args);
  const decision = held.structuredContent as Decision;
  expect(decision).toMatchObject({ verdict: 'Block', approval: { status: 'pending' } });
  return decision.approval!.id;
}

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
    const early = await call('wait_for_approval', { ...transfer, approval_id: id, timeout_seconds: 1 });
    expect(early.structuredContent).toMatchObject({ approval: { status: 'pending' }, decision: null });
    expect(textOf(early)).toContain('Do NOT perform');

    const waiting = call('wait_for_approval', { ...transfer, approval_id: id, timeout_seconds: 30 });
    await approver().approve(id, { comment: 'fine' });
    const released = await waiting;
    expect(released.isError).toBeFalsy();
    const out = released.structuredContent as { approval: Approval; decision: Decision };
    expect(out.approval.status).toBe('approved');
    expect(out.decision).toMatchObject({ verdict: 'Allow', approval: { id, status: 'used' } });
    expect(textOf(released)).toContain('You may now perform payments.transfer');

    // The approval was consumed by that re-evaluation: waiting again releases nothing.
    const twice = await call('wait_for_approval', { ...transfer, approval_id: id, timeout_seconds: 1 });
    expect(twice.structuredContent).toMatchObject({ approval: { status: 'used' }, decision: null });
    expect(textOf(twice)).toContain('already used');
    // The request records the MCP client's key as the one who asked.
    expect((await gh.getApproval(id)).requested_by).toMatch(/^key_/);
  });

  it('a denial reaches the model; bad arguments are isError, never a crash', async () => {
    const denial = { ...transfer, params: { amount: 7777 } };
    const id = await hold(denial);
    await approver().deny(id, { comment: 'no' });
    const denied = await call('wait_for_approval', { ...denial, approval_id: id, timeout_seconds: 5 });
    expect(textOf(denied)).toContain('DENIED');
    expect(textOf(denied)).toContain('Do NOT perform');

    const unknown = await call('wait_for_approval', {
      ...denial,
      approval_id: 'apr_nothing',
      timeout_seconds: 1,
    });
    expect(unknown.isError).toBe(true);
    expect(textOf(unknown)).toMatch(/^not_found:/);
    const tooLong = await call('wait_for_approval', { ...denial, approval_id: id, timeout_seconds: 600 });
    expect(tooLong.isError).toBe(true);
    // The call is required again: the approval ID alone is not a call.
    const idOnly = await call('wait_for_approval', { approval_id: id, timeout_seconds: 1 });
    expect(idOnly.isError).toBe(true);
    expect(textOf(idOnly)).toContain('action');
  });

  it("evaluates the caller's own call again, with its params (a secret included) and context", async () => {
    // A secret in the params is masked in the approval; the call the agent makes is not.
    const secretCall = {
      session_id: 'm1',
      action: 'payments.transfer',
      params: { amount: 9100, api_key: 'sk_live_abcdefghijklmnopqrstuvwx' },
    };
    const id = await hold(secretCall);
    const stored = await gh.getApproval(id);
    expect(JSON.stringify(stored.params)).not.toContain('sk_live_abcdefghijklmnopqrstuvwx');
    await approver().approve(id);
    const pendingCount = async () => (await gh.listApprovals({ status: 'pending' })).approvals.length;
    const pendingBefore = await pendingCount();
    const context = { tool_call_id: 'call-42' };
    const released = await call('wait_for_approval', {
      ...secretCall,
      context,
      approval_id: id,
      timeout_seconds: 5,
    });
    expect(released.isError, textOf(released)).toBeFalsy();
    const out = released.structuredContent as { approval: Approval; decision: Decision };
    expect(out.decision).toMatchObject({ verdict: 'Allow', allowed: true, approval: { id, status: 'used' } });
    expect(textOf(released)).toContain('You may now perform payments.transfer');
    // Nothing new was held, and the decision was recorded with the caller's context.
    expect(await pendingCount()).toBe(pendingBefore);
    expect((await gh.getDecision(out.decision.decision_id)).context).toEqual(context);
  });

  it('another session, or another agent key, is answered like an approval that does not exist', async () => {
    const theirs = { ...transfer, params: { amount: 9200 } };
    const id = await hold(theirs);
    const unknown = await call('wait_for_approval', {
      ...theirs,
      approval_id: 'apr_nothing',
      timeout_seconds: 1,
    });
    expect(textOf(unknown)).toBe(`not_found: Approval 'apr_nothing' was not found.`);
    const notFound = (result: Awaited<ReturnType<Client['callTool']>>) => {
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(`not_found: Approval '${id}' was not found.`);
    };
    const otherAgent = (timeout: number) =>
      otherClient.callTool({
        name: 'wait_for_approval',
        arguments: { ...theirs, approval_id: id, timeout_seconds: timeout },
      });

    // While it is pending, both are refused at once, without waiting the 30 s asked for.
    const started = performance.now();
    notFound(
      await call('wait_for_approval', { ...theirs, session_id: 'm2', approval_id: id, timeout_seconds: 30 }),
    );
    notFound(await otherAgent(30));
    expect(performance.now() - started).toBeLessThan(5000);

    // Approved: another agent's key with the exact call is refused, and the approval is not spent.
    await approver().approve(id);
    notFound(await otherAgent(1));
    notFound(
      await call('wait_for_approval', { ...theirs, session_id: 'm2', approval_id: id, timeout_seconds: 1 }),
    );
    expect((await gh.getApproval(id)).status).toBe('approved');
    // The approval's own action is required; another one is named as the mistake.
    const otherAction = await call('wait_for_approval', {
      ...theirs,
      action: 'payments.refund',
      approval_id: id,
      timeout_seconds: 1,
    });
    expect(textOf(otherAction)).toMatch(/^invalid_request: .*holds payments\.transfer, not payments\.refund/);

    // The agent that asked still gets its release.
    const mine = await call('wait_for_approval', { ...theirs, approval_id: id, timeout_seconds: 1 });
    expect(mine.structuredContent).toMatchObject({
      decision: { verdict: 'Allow', approval: { id, status: 'used' } },
    });
  });
});

describe('reading an approval over /v1', () => {
  it('a gate:evaluate key reads only the approvals its evaluations asked for; deciders read all', async () => {
    const asked = { ...transfer, params: { amount: 9300, note: 'asked by two' } };
    const id = await hold(asked);
    const read = (key: string) =>
      fetch(`${server.url}/v1/approvals/${id}`, { headers: { Authorization: `Bearer ${key}` } });
    const other = await read(otherKey);
    expect(other.status).toBe(404);
    const problem = (await other.json()) as { code: string; detail: string };
    const missing = await fetch(`${server.url}/v1/approvals/apr_nothing`, {
      headers: { Authorization: `Bearer ${otherKey}` },
    });
    expect(missing.status).toBe(404);
    expect(problem).toMatchObject({ code: 'not_found', detail: `Approval '${id}' was not found.` });
    // Long-polling is refused the same way, at once.
    const started = performance.now();
    expect(
      (
        await fetch(`${server.url}/v1/approvals/${id}?wait=30`, {
          headers: { Authorization: `Bearer ${otherKey}` },
        })
      ).status,
    ).toBe(404);
    expect(performance.now() - started).toBeLessThan(5000);

    const mine = await read(agentKey);
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as Approval).params).toEqual(asked.params);
    expect((await read(financeKey)).status).toBe(200);
    const auditor = await newKey({ scopes: ['gate:evaluate', 'history:read'] });
    expect((await read(auditor)).status).toBe(200);
    const admin = await newKey({ scopes: ['admin'] });
    expect((await read(admin)).status).toBe(200);

    // Once the other agent evaluates the same call, it asked too, and may read it.
    const again = await otherClient.callTool({ name: 'evaluate_gate', arguments: asked });
    expect((again.structuredContent as Decision).approval?.id).toBe(id);
    expect((await read(otherKey)).status).toBe(200);
  });
});
