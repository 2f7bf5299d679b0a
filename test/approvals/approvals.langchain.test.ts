/**
 * Approvals on a real LangChain `createAgent` with a fake model: `interrupt` pauses the graph
 * (MemorySaver) and a resume is evaluated again — the resume payload never approves anything;
 * `wait` polls a real server through the /v1 client; `block` answers with the approval ID.
 */
import { Command, MemorySaver } from '@langchain/langgraph';
import { createAgent } from 'langchain';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGatehouseClient } from '../../adapters/client/index.js';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import {
  type ApprovalInterrupt,
  type BlockedToolContent,
  GatehouseCallbackHandler,
  type GateOptions,
  gatehouseMiddleware,
  inProcessBackend,
} from '../../adapters/langchain/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  type CallContext,
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  systemRandomBytes,
} from '../../src/index.js';
import { recordBudget, scriptedModel, toolMessages, transferTool } from '../langchain/agentFixtures.js';

const POLICY = `
version: 1
actions:
  transfer_money:
    requires:
      - key: budget.limit
        min_trust: user_input
    rules:
      - name: over_budget
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}"
        approval: { expires_in: 15m, approvers: [finance] }
`;

const finance: CallContext = { keyId: 'key_finance', scopes: ['approvals:decide'], labels: ['finance'] };
const args = { amount: 9000, to: 'acct-9' };

let gh: Gatehouse;
beforeEach(async () => {
  gh = createGatehouse({ store: openSqliteStore(), policy: compilePolicy(POLICY) });
});

/**
 * An agent that calls `transfer_money` once, gated with `onApproval: 'interrupt'` on a
 * MemorySaver, and its middleware (whose `flush` waits for the outcome reports).
 */
function interruptingAgent(
  backend: GateOptions['backend'],
  transfer: ReturnType<typeof transferTool>['transfer'],
) {
  const gate = gatehouseMiddleware({ backend, onApproval: 'interrupt' });
  const agent = createAgent({
    model: scriptedModel('transfer_money', args),
    tools: [transfer],
    middleware: [gate],
    checkpointer: new MemorySaver(),
  });
  return { agent, gate };
}

describe("onApproval: 'interrupt' (middleware, MemorySaver)", () => {
  it('pauses with the approval request; a resume before approval pauses again; after approval the tool runs once', async () => {
    const backend = inProcessBackend(gh, { keyId: 'key_agent' });
    await recordBudget(backend, 'thread-1');
    const { transfer, calls } = transferTool();
    const { agent, gate } = interruptingAgent(backend, transfer);
    const config = { configurable: { thread_id: 'thread-1' } };

    const first = await agent.invoke({ messages: [{ role: 'user', content: 'pay 9000' }] }, config);
    const request = (first as unknown as { __interrupt__: Array<{ value: ApprovalInterrupt }> })
      .__interrupt__[0]!.value;
    expect(request).toMatchObject({
      type: 'gatehouse.approval_required',
      action: 'transfer_money',
      session_id: 'thread-1',
      params: args,
      tool_call_id: 'call_1',
    });
    expect(request.approval_id).toMatch(/^apr_/);
    expect(calls).toEqual([]);

    // Resuming with anything that looks like an approval does not approve: evaluated again, still held.
    const early = await agent.invoke(
      new Command({
        resume: { approved: true, approval_id: request.approval_id, decisions: [{ type: 'approve' }] },
      }),
      config,
    );
    expect((early as unknown as { __interrupt__?: unknown[] }).__interrupt__).toHaveLength(1);
    expect(calls).toEqual([]);
    expect((await gh.getApproval(request.approval_id)).status).toBe('pending');

    await gh.approve(request.approval_id, { comment: 'ok' }, finance);
    const done = await agent.invoke(new Command({ resume: 'go on' }), config);
    expect(calls).toEqual([9000]);
    expect(done.messages.at(-1)!.content).toBe('done');
    expect((await gh.getApproval(request.approval_id)).status).toBe('used');
    await gate.flush();
    const outcome = await gh.readHistory({ session_id: 'thread-1', type: 'action_outcome' });
    expect(outcome.events).toHaveLength(1);
    expect(await gh.verifyHistory()).toMatchObject({ ok: true });
  });

  it('a denial ends the pause with a Block the model reads', async () => {
    const backend = inProcessBackend(gh, { keyId: 'key_agent' });
    await recordBudget(backend, 'thread-2');
    const { transfer, calls } = transferTool();
    const { agent } = interruptingAgent(backend, transfer);
    const config = { configurable: { thread_id: 'thread-2' } };
    const first = await agent.invoke({ messages: [{ role: 'user', content: 'pay' }] }, config);
    const id = (first as unknown as { __interrupt__: Array<{ value: ApprovalInterrupt }> }).__interrupt__[0]!
      .value.approval_id;
    await gh.deny(id, { comment: 'no' }, finance);
    const done = await agent.invoke(new Command({ resume: true }), config);
    expect(calls).toEqual([]);
    const [message] = toolMessages(done.messages);
    const content = JSON.parse(String(message!.content)) as BlockedToolContent;
    expect(content).toMatchObject({ blocked: true, approval: { id, status: 'denied' } });
  });
});

describe("onApproval: 'block' (the default) and the callback handler", () => {
  it('the middleware answers with the approval ID; the tool does not run', async () => {
    const backend = inProcessBackend(gh, { keyId: 'key_agent' });
    await recordBudget(backend, 'thread-3');
    const { transfer, calls } = transferTool();
    const agent = createAgent({
      model: scriptedModel('transfer_money', args),
      tools: [transfer],
      middleware: [gatehouseMiddleware({ backend })],
    });
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: 'pay' }] },
      { configurable: { thread_id: 'thread-3' } },
    );
    const content = JSON.parse(String(toolMessages(result.messages)[0]!.content)) as BlockedToolContent;
    expect(content.approval).toMatchObject({ status: 'pending' });
    expect(content.reason).toContain(content.approval!.id);
    expect(calls).toEqual([]);
  });

  it("the callback handler refuses 'interrupt' at construction", () => {
    expect(
      () => new GatehouseCallbackHandler({ backend: inProcessBackend(gh), onApproval: 'interrupt' }),
    ).toThrow(/needs gatehouseMiddleware/);
  });
});

describe("onApproval: 'wait' against a real server", () => {
  let server: RunningServer;
  let remote: Gatehouse;
  let agentKey: string;
  let financeKey: string;

  beforeAll(async () => {
    remote = createGatehouse({ store: openSqliteStore(), policy: compilePolicy(POLICY) });
    server = await startHttpServer(createHttpApp({ gatehouse: remote, rateLimit: false }).fetch, { port: 0 });
    const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
    agentKey = (await createApiKey(remote.store, deps, { scopes: ['gate:evaluate', 'state:write'] })).secret;
    financeKey = (
      await createApiKey(remote.store, deps, { scopes: ['approvals:decide'], labels: ['finance'] })
    ).secret;
  });
  afterAll(async () => {
    await server?.close();
    await remote?.store.close();
  });

  it('the callback handler waits for the decision, then the tool runs once', async () => {
    const backend = createGatehouseClient({ baseUrl: server.url, apiKey: agentKey });
    const approver = createGatehouseClient({ baseUrl: server.url, apiKey: financeKey });
    await recordBudget(backend, 'thread-4');
    const { transfer, calls } = transferTool();
    const handler = new GatehouseCallbackHandler({ backend, onApproval: 'wait', approvalTimeoutMs: 30_000 });
    const agent = createAgent({ model: scriptedModel('transfer_money', args), tools: [transfer] });
    // The person approves as soon as the request shows up.
    const person = (async () => {
      for (;;) {
        const [pending] = (await approver.listApprovals({ status: 'pending', session_id: 'thread-4' }))
          .approvals;
        if (pending) return approver.approve(pending.id, { comment: 'seen' });
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: 'pay' }] },
      { callbacks: [handler], configurable: { thread_id: 'thread-4' } },
    );
    const approved = await person;
    expect(calls).toEqual([9000]);
    expect(result.messages.at(-1)!.content).toBe('done');
    expect((await approver.getApproval(approved.id)).status).toBe('used');
  });

  it('times out to a Block when nobody decides', async () => {
    const backend = createGatehouseClient({ baseUrl: server.url, apiKey: agentKey });
    await recordBudget(backend, 'thread-5');
    const { transfer, calls } = transferTool();
    const agent = createAgent({
      model: scriptedModel('transfer_money', args),
      tools: [transfer],
      middleware: [gatehouseMiddleware({ backend, onApproval: 'wait', approvalTimeoutMs: 1000 })],
    });
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: 'pay' }] },
      { configurable: { thread_id: 'thread-5' } },
    );
    const content = JSON.parse(String(toolMessages(result.messages)[0]!.content)) as BlockedToolContent;
    expect(content.approval).toMatchObject({ status: 'pending' });
    expect(calls).toEqual([]);
  });
});
