/**
 * Traces through every face, with the SDK's in-memory exporter registered the way a host would
 * (NodeTracerProvider: AsyncLocalStorage context, W3C propagator): one evaluate through the core,
 * HTTP on loopback (both faces of the pipeline), MCP with the SDK client, a LangChain agent with a
 * fake model; a webhook delivery's `traceparent` in its evaluate's trace; no attribute holding a
 * secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import * as semconv from '@opentelemetry/semantic-conventions/incubating';
import { createAgent } from 'langchain';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readServeConfig } from '../../adapters/cli/config.js';
import { type RunningService, startService } from '../../adapters/cli/serve.js';
import {
  createHttpApp,
  type HttpApp,
  type RunningServer,
  startHttpServer,
} from '../../adapters/http/index.js';
import { GatehouseCallbackHandler, gatehouseMiddleware } from '../../adapters/langchain/index.js';
import { createMcpHttpHandler } from '../../adapters/mcp/index.js';
import {
  createApiKey,
  createIdGenerator,
  type Decision,
  type Gatehouse,
  GEN_AI_ATTRIBUTES,
  systemRandomBytes,
} from '../../src/index.js';
import { recordBudget, scriptedModel, transferTool } from '../langchain/agentFixtures.js';
import { budgetGatehouse } from '../mcp/fixtures.js';
import { startReceiver, waitFor } from '../reliability/fixtures.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const testTracer = trace.getTracer('test');

beforeAll(() => {
  provider.register();
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
});
afterEach(() => exporter.reset());

function spans(): ReadableSpan[] {
  return exporter.getFinishedSpans();
}

function named(name: string): ReadableSpan[] {
  return spans().filter((s) => s.name === name);
}

function one(name: string): ReadableSpan {
  const found = named(name);
  expect(
    found.map((s) => s.name),
    `spans named ${name}`,
  ).toEqual([name]);
  return found[0]!;
}

function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** Runs `fn` inside a root span, as an agent's own instrumentation would. */
async function inRoot<T>(fn: () => Promise<T>): Promise<{ result: T; root: Span }> {
  return testTracer.startActiveSpan('agent', async (root) => {
    try {
      return { result: await fn(), root };
    } finally {
      root.end();
    }
  });
}

/** A `traceparent` the caller "sent": a fixed trace, a fixed parent span. */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;

/** Checks the decision's span and the transaction span below it. */
function expectEvaluateSpans(decision: Decision, parentSpanId: string | undefined, traceId: string) {
  const evaluate = one('gatehouse.evaluate');
  expect(evaluate.spanContext().traceId).toBe(traceId);
  expect(parentOf(evaluate)).toBe(parentSpanId);
  expect(evaluate.attributes).toMatchObject({
    'gatehouse.decision.id': decision.decision_id,
    'gatehouse.decision.verdict': decision.verdict,
    'gatehouse.action': decision.action,
    'gatehouse.session.id': decision.session_id,
    'gatehouse.policy.revision': decision.policy.revision,
    'gatehouse.decision.rules': decision.reasons.map((r) => r.rule),
  });
  const tx = named('gatehouse.store.transaction').find((s) => parentOf(s) === evaluate.spanContext().spanId);
  expect(tx?.attributes['db.system.name']).toBe('sqlite');
  return evaluate;
}

describe('semantic conventions', () => {
  it('pins the GenAI names to semantic-conventions 1.45.0', () => {
    expect(GEN_AI_ATTRIBUTES).toEqual({
      operationName: semconv.ATTR_GEN_AI_OPERATION_NAME,
      executeTool: semconv.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
      toolName: semconv.ATTR_GEN_AI_TOOL_NAME,
      toolCallId: semconv.ATTR_GEN_AI_TOOL_CALL_ID,
      toolType: semconv.ATTR_GEN_AI_TOOL_TYPE,
    });
  });
});

describe('in process', () => {
  it('evaluate and record state are children of the active span', async () => {
    const gh = budgetGatehouse();
    const { result: decision, root } = await inRoot(async () => {
      await recordBudget(gh, 's1');
      return gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } });
    });
    expect(decision.verdict).toBe('Block');
    expectEvaluateSpans(decision, root.spanContext().spanId, root.spanContext().traceId);
    const record = one('gatehouse.record_state');
    expect(parentOf(record)).toBe(root.spanContext().spanId);
    expect(record.attributes).toMatchObject({
      'gatehouse.state.key': 'budget.limit',
      'gatehouse.state.outcome': 'created',
      'gatehouse.state.version': 1,
    });
    await gh.store.close();
  });

  it('a failed operation is an error span with the error code and no message', async () => {
    const gh = budgetGatehouse();
    await expect(gh.evaluate({ session_id: '', action: 'x.y' })).rejects.toThrow();
    const evaluate = one('gatehouse.evaluate');
    expect(evaluate.status).toEqual({ code: SpanStatusCode.ERROR, message: 'invalid_request' });
    expect(evaluate.attributes['error.type']).toBe('invalid_request');
    expect(evaluate.events).toEqual([]);
    await gh.store.close();
  });
});

describe('HTTP', () => {
  let gh: Gatehouse;
  let app: HttpApp;
  let server: RunningServer;
  let key: string;

  beforeAll(async () => {
    gh = budgetGatehouse();
    app = createHttpApp({ gatehouse: gh, mcp: createMcpHttpHandler({ gatehouse: gh }), rateLimit: false });
    server = await startHttpServer(app.fetch, { port: 0 });
    const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
    key = (await createApiKey(gh.store, deps, { name: 't', scopes: ['admin'] })).secret;
    await recordBudget(gh, 'h1');
  });
  afterAll(async () => {
    await server.close();
    await gh.store.close();
  });

  const evaluateRequest = (): RequestInit => ({
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      traceparent: TRACEPARENT,
    },
    body: JSON.stringify({ session_id: 'h1', action: 'payments.transfer', params: { amount: 10 } }),
  });

  for (const face of ['node', 'web'] as const) {
    it(`a server span per request continues the caller's traceparent (${face} face)`, async () => {
      exporter.reset();
      const res =
        face === 'node'
          ? await fetch(`${server.url}/v1/gates/evaluate`, evaluateRequest())
          : await app.fetch(new Request('http://localhost/v1/gates/evaluate', evaluateRequest()));
      expect(res.status).toBe(200);
      const decision = (await res.json()) as Decision;
      const http = one('POST /v1/gates/evaluate');
      expect(http.spanContext().traceId).toBe(TRACE_ID);
      expect(parentOf(http)).toBe(CALLER_SPAN);
      expect(http.kind).toBe(1); // SpanKind.SERVER
      expect(http.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.route': '/v1/gates/evaluate',
        'http.response.status_code': 200,
      });
      expectEvaluateSpans(decision, http.spanContext().spanId, TRACE_ID);
    });
  }

  it('a method the caller makes up is _OTHER in span names, attributes and metric labels', async () => {
    exporter.reset();
    for (let i = 0; i < 20; i += 1) {
      const res = await app.fetch(new Request('http://localhost/healthz', { method: `X${i}ATTACKER` }));
      expect(res.status).toBeGreaterThanOrEqual(400);
    }
    const names = new Set(spans().map((s) => s.name));
    expect([...names].filter((n) => n.includes('ATTACKER'))).toEqual([]);
    expect(names.has('_OTHER /healthz') || names.has('_OTHER')).toBe(true);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).not.toContain('ATTACKER');
    expect(metrics).toContain('method="_OTHER"');
  });

  it('read history is a span under its request', async () => {
    const res = await fetch(`${server.url}/v1/history/events?session_id=h1&limit=5`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(200);
    const http = one('GET /v1/history/events');
    const read = one('gatehouse.read_history');
    expect(parentOf(read)).toBe(http.spanContext().spanId);
    expect(read.attributes).toMatchObject({ 'gatehouse.session.id': 'h1' });
    expect(read.attributes['gatehouse.history.count']).toBeGreaterThan(0);
  });

  describe('MCP over Streamable HTTP', () => {
    async function connect(headers: Record<string, string>): Promise<Client> {
      const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } },
      });
      const client = new Client({ name: 'otel-test', version: '1.0.0' });
      await client.connect(transport);
      return client;
    }

    it('a tools/call span under the HTTP request that carried traceparent', async () => {
      const client = await connect({ traceparent: TRACEPARENT });
      exporter.reset();
      const result = await client.callTool({
        name: 'evaluate_gate',
        arguments: { session_id: 'h1', action: 'payments.transfer', params: { amount: 10 } },
      });
      const decision = result.structuredContent as Decision;
      const call = one('tools/call evaluate_gate');
      const http = named('POST /mcp').find((s) => s.spanContext().spanId === parentOf(call));
      expect(http, 'the tool span is a child of its POST /mcp span').toBeDefined();
      expect(parentOf(http!)).toBe(CALLER_SPAN);
      expect(call.spanContext().traceId).toBe(TRACE_ID);
      expect(call.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'evaluate_gate',
      });
      expectEvaluateSpans(decision, call.spanContext().spanId, TRACE_ID);
      await client.close();
    });

    it('params._meta.traceparent is the parent; the HTTP span is linked', async () => {
      const client = await connect({});
      exporter.reset();
      const metaTrace = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
      const metaSpan = 'bbbbbbbbbbbbbbbb';
      const result = await client.callTool({
        name: 'evaluate_gate',
        arguments: { session_id: 'h1', action: 'payments.transfer', params: { amount: 10 } },
        _meta: { traceparent: `00-${metaTrace}-${metaSpan}-01` },
      });
      const call = one('tools/call evaluate_gate');
      expect(call.spanContext().traceId).toBe(metaTrace);
      expect(parentOf(call)).toBe(metaSpan);
      const http = named('POST /mcp').map((s) => s.spanContext().spanId);
      expect(call.links.map((l) => l.context.spanId).some((id) => http.includes(id))).toBe(true);
      expectEvaluateSpans(result.structuredContent as Decision, call.spanContext().spanId, metaTrace);
      await client.close();
    });
  });
});

describe('LangChain', () => {
  it('the middleware makes an execute_tool span with the tool call ID, under the active span', async () => {
    const gh = budgetGatehouse();
    await recordBudget(gh, 'l1');
    const { transfer, calls } = transferTool();
    const gate = gatehouseMiddleware({ backend: gh });
    const agent = createAgent({
      model: scriptedModel('transfer_money', { amount: 10, to: 'bob' }),
      tools: [transfer],
      middleware: [gate],
    });
    exporter.reset();
    const { root } = await inRoot(() =>
      agent.invoke(
        { messages: [{ role: 'user', content: 'pay bob' }] },
        { configurable: { thread_id: 'l1' } },
      ),
    );
    expect(calls).toEqual([10]);
    const toolSpan = one('execute_tool transfer_money');
    expect(parentOf(toolSpan)).toBe(root.spanContext().spanId);
    expect(toolSpan.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'transfer_money',
      'gen_ai.tool.call.id': 'call_1',
      'gatehouse.decision.verdict': 'Allow',
    });
    const evaluate = one('gatehouse.evaluate');
    expect(parentOf(evaluate)).toBe(toolSpan.spanContext().spanId);
    expect(toolSpan.attributes['gatehouse.decision.id']).toBe(evaluate.attributes['gatehouse.decision.id']);
    await gate.flush();
    await gh.store.close();
  });

  it('the callback handler makes an execute_tool span that ends with the tool', async () => {
    const gh = budgetGatehouse();
    await recordBudget(gh, 'l2');
    const { transfer, calls } = transferTool();
    const agent = createAgent({
      model: scriptedModel('transfer_money', { amount: 10, to: 'bob' }),
      tools: [transfer],
    });
    const handler = new GatehouseCallbackHandler({ backend: gh });
    exporter.reset();
    const { root } = await inRoot(() =>
      agent.invoke(
        { messages: [{ role: 'user', content: 'pay bob' }] },
        { configurable: { thread_id: 'l2' }, callbacks: [handler] },
      ),
    );
    expect(calls).toEqual([10]);
    const toolSpan = one('execute_tool transfer_money');
    expect(toolSpan.spanContext().traceId).toBe(root.spanContext().traceId);
    expect(toolSpan.attributes['gen_ai.tool.call.id']).toBe('call_1');
    expect(parentOf(one('gatehouse.evaluate'))).toBe(toolSpan.spanContext().spanId);
    await handler.flush();
    await gh.store.close();
  });
});

describe('webhooks and secrets through gatehouse serve (in process)', () => {
  let dir: string;
  let service: RunningService;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let key: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gh-otel-'));
    receiver = await startReceiver(() => 204);
    const config = readServeConfig({
      database: join(dir, 'gh.db'),
      port: '0',
      host: '127.0.0.1',
      allowInsecureLoopbackWebhooks: true,
      rateLimit: '0',
    });
    service = await startService(config, pino({ level: 'silent' }));
    key = service.bootstrapKey!;
  });
  afterAll(async () => {
    await service.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it("a delivery's traceparent belongs to its evaluate's trace", async () => {
    const hook = await post('/v1/webhooks', { url: receiver.url, events: ['gate_evaluation'] });
    expect(hook.status).toBe(201);
    exporter.reset();
    const res = await post(
      '/v1/gates/evaluate',
      { session_id: 'w1', action: 'payments.transfer', params: { amount: 1 } },
      { traceparent: TRACEPARENT },
    );
    const decision = (await res.json()) as Decision;
    await waitFor(() => receiver.received.length > 0, 10_000, 'the webhook delivery');
    await waitFor(() => named('gatehouse.webhook.deliver').length > 0, 5_000, 'the delivery span');
    const sent = receiver.received[0]!.headers['traceparent'] as string;
    const [, traceId, parentId] = sent.split('-');
    expect(traceId).toBe(TRACE_ID);
    const deliver = one('gatehouse.webhook.deliver');
    expect(parentId).toBe(deliver.spanContext().spanId);
    expect(deliver.attributes).toMatchObject({
      'gatehouse.event.type': 'gate_evaluation',
      'server.address': '127.0.0.1',
      'gatehouse.delivery.attempt': 1,
      'gatehouse.delivery.status': 'delivered',
      'http.response.status_code': 204,
    });
    // Queued by the evaluate's transaction: the delivery hangs below it in the same trace.
    const evaluate = expectEvaluateSpans(
      decision,
      one('POST /v1/gates/evaluate').spanContext().spanId,
      TRACE_ID,
    );
    const tx = named('gatehouse.store.transaction').find(
      (s) => parentOf(s) === evaluate.spanContext().spanId,
    )!;
    expect(parentOf(deliver)).toBe(tx.spanContext().spanId);
  });

  it('a delivery that fails is an error span with error.type, the status code or the transport error', async () => {
    const failing = await startReceiver(() => 500);
    try {
      const hook = await post('/v1/webhooks', { url: failing.url, events: ['action_outcome'] });
      expect(hook.status).toBe(201);
      const decision = (await (
        await post('/v1/gates/evaluate', { session_id: 'w2', action: 'files.read', params: {} })
      ).json()) as Decision;
      exporter.reset();
      await post(`/v1/decisions/${decision.decision_id}/outcome`, { outcome: 'succeeded' });
      await waitFor(() => failing.received.length > 0, 10_000, 'the failing delivery');
      await waitFor(
        () =>
          named('gatehouse.webhook.deliver').some((s) => s.attributes['http.response.status_code'] === 500),
        5_000,
        'the failed delivery span',
      );
      const failed = named('gatehouse.webhook.deliver').find(
        (s) => s.attributes['http.response.status_code'] === 500,
      )!;
      expect(failed.attributes).toMatchObject({
        'gatehouse.delivery.status': 'pending',
        'error.type': '500',
      });
      expect(failed.status.code).toBe(2); // SpanStatusCode.ERROR
    } finally {
      await failing.close();
    }
  });

  it('no span attribute, name, status or event carries a secret, a param or a state value', async () => {
    const secret = 'sk_live_51HqTestSecretValue0123456789abcdef';
    const paramSecret = 'ghp_ParamSecret0123456789abcdefABCDEF0123';
    const contextValue = 'context-value-7731';
    exporter.reset();
    const recorded = await post('/v1/state/items', {
      session_id: 'sec',
      key: 'payments.api_key',
      value: secret,
      type: 'fact',
      source: 'user_input',
    });
    expect(recorded.status).toBe(201);
    await post('/v1/state/items', {
      session_id: 'sec',
      key: 'budget.limit',
      value: '4321',
      type: 'fact',
      source: 'user_input',
    });
    const evaluated = await post('/v1/gates/evaluate', {
      session_id: 'sec',
      action: 'payments.transfer',
      params: { amount: 98765, token: paramSecret, echo: secret },
      context: { note: contextValue },
    });
    expect(evaluated.status).toBe(200);
    // A bad request quoting the secret: its error span must not repeat it.
    await post('/v1/gates/evaluate', { session_id: 'sec', action: secret, params: 'not an object' });
    await fetch(`${service.url}/v1/history/events?session_id=sec`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await waitFor(() => named('gatehouse.evaluate').length >= 2, 5_000, 'the spans');

    const forbidden = [secret, paramSecret, contextValue, '98765', '4321'];
    const seen: string[] = [];
    for (const span of spans()) {
      seen.push(span.name, span.status.message ?? '', JSON.stringify(span.attributes));
      for (const event of span.events) seen.push(event.name, JSON.stringify(event.attributes ?? {}));
    }
    expect(seen.length).toBeGreaterThan(10);
    const text = seen.join('\n');
    for (const value of forbidden) expect(text, `a span carries ${value}`).not.toContain(value);
    // And the spans were there to look at.
    expect(text).toContain('payments.api_key');
    expect(text).toContain('gatehouse.decision.id');
  });
});
