/**
 * Remote mode: the same agent, gated through the /v1 client against the real HTTP app on
 * loopback — the in-process core and the client are interchangeable backends.
 */
import { createAgent } from 'langchain';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGatehouseClient, type GatehouseClient } from '../../adapters/client/index.js';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import {
  type BlockedToolContent,
  createRecordStateTool,
  type GateBackend,
  GatehouseCallbackHandler,
  gatehouseMiddleware,
} from '../../adapters/langchain/index.js';
import { createApiKey, createIdGenerator, type Gatehouse, systemRandomBytes } from '../../src/index.js';
import {
  createTestGatehouse,
  historyOf,
  recordBudget,
  scriptedModel,
  toolMessages,
  transferTool,
} from './agentFixtures.js';

let gatehouse: Gatehouse;
let server: RunningServer;
let client: GatehouseClient;

beforeAll(async () => {
  gatehouse = createTestGatehouse();
  server = await startHttpServer(createHttpApp({ gatehouse, rateLimit: false }).fetch, { port: 0 });
  const { secret } = await createApiKey(
    gatehouse.store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['admin'], sources: ['user_input', 'tool_output'] },
  );
  client = createGatehouseClient({ baseUrl: server.url, apiKey: secret, timeoutMs: 5000 });
  await recordBudget(client, 'remote-1');
});

afterAll(async () => {
  await server?.close(0);
  await gatehouse?.store.close();
});

const ask = { messages: [{ role: 'user' as const, content: 'pay' }] };

describe('remote mode through createGatehouseClient', () => {
  it('the client is a GateBackend as it is', () => {
    const backend: GateBackend = client;
    expect(typeof backend.evaluate).toBe('function');
  });

  it('middleware: blocks over budget, runs under budget, outcome in the remote history', async () => {
    const blocked = transferTool();
    const blockAgent = createAgent({
      model: scriptedModel('transfer_money', { amount: 9000, to: 'mallory' }),
      tools: [blocked.transfer],
      middleware: [gatehouseMiddleware({ backend: client })],
    });
    const result = await blockAgent.invoke(ask, { configurable: { thread_id: 'remote-1' } });
    expect(blocked.calls).toEqual([]);
    const content = JSON.parse(String(toolMessages(result.messages)[0]?.content)) as BlockedToolContent;
    expect(content).toMatchObject({ blocked: true, verdict: 'Block' });
    expect((await client.getDecision(content.decision_id)).verdict).toBe('Block');

    const allowed = transferTool();
    const allowGate = gatehouseMiddleware({ backend: client });
    const allowAgent = createAgent({
      model: scriptedModel('transfer_money', { amount: 200, to: 'bob' }),
      tools: [allowed.transfer],
      middleware: [allowGate],
    });
    await allowAgent.invoke(ask, { configurable: { thread_id: 'remote-1' } });
    expect(allowed.calls).toEqual([200]);
    await allowGate.flush();

    const events = await historyOf(client, 'remote-1');
    const lastGate = events.filter((e) => e.type === 'gate_evaluation').at(-1)!;
    const outcome = events.find((e) => e.type === 'action_outcome')!;
    expect(lastGate.data).toMatchObject({ verdict: 'Allow', params: { amount: 200 } });
    expect(outcome.data).toMatchObject({ decision_id: lastGate.data['decision_id'], outcome: 'succeeded' });
  });

  it('callback handler: blocks over budget and records the allowed call', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    await recordBudget(client, 'remote-2', '1000');
    const handler = new GatehouseCallbackHandler({ backend: client });

    const blocked = transferTool();
    const blockAgent = createAgent({
      model: scriptedModel('transfer_money', { amount: 5000, to: 'mallory' }),
      tools: [blocked.transfer],
    });
    const result = await blockAgent.invoke(ask, {
      callbacks: [handler],
      configurable: { thread_id: 'remote-2' },
    });
    expect(blocked.calls).toEqual([]);
    expect(String(toolMessages(result.messages)[0]?.content)).toContain('Blocked by Gatehouse');

    const allowed = transferTool();
    const allowAgent = createAgent({
      model: scriptedModel('transfer_money', { amount: 50, to: 'bob' }),
      tools: [allowed.transfer],
    });
    await allowAgent.invoke(ask, { callbacks: [handler], configurable: { thread_id: 'remote-2' } });
    expect(allowed.calls).toEqual([50]);
    await handler.flush();

    const types = (await historyOf(client, 'remote-2')).map((e) => e.type);
    expect(types).toEqual(['state_change', 'gate_evaluation', 'gate_evaluation', 'action_outcome']);
    expect(await client.verifyHistory()).toMatchObject({ ok: true });
    vi.restoreAllMocks();
  });

  it('record_state tool: writes with the source the key allows, never one the model picks', async () => {
    const recordState = createRecordStateTool({ backend: client, source: 'tool_output' });
    const agent = createAgent({
      model: scriptedModel('record_state', {
        key: 'Trip.City',
        value: 'Oslo',
        type: 'fact',
        source: 'user_input',
      }),
      tools: [recordState],
    });
    const result = await agent.invoke(ask, { configurable: { thread_id: 'remote-3' } });
    expect(JSON.parse(String(toolMessages(result.messages)[0]?.content))).toMatchObject({
      recorded: true,
      key: 'trip.city',
      version: 1,
    });
    expect(await client.getItem('remote-3', 'trip.city')).toMatchObject({
      value: 'Oslo',
      source: 'tool_output',
    });
  });
});
