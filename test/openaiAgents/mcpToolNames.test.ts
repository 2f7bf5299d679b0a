/**
 * The name an MCP tool is gated under in OpenAI Agents: the tool's name on its server, which is
 * what a policy names, not the one the SDK publishes it to the model under (`payments.transfer`
 * becomes `payments_transfer`; with `mcpConfig: { includeServerInToolNames: true }`,
 * `mcp_bank__payments_transfer`, shortened with a hash past 64 characters). A bank's MCP server on
 * loopback records what it really ran; a name Gatehouse cannot map back is refused.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Agent, MCPServerStreamableHttp, run, setTracingDisabled } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import {
  type GateAgentToolsOptions,
  gateTools,
  inProcessBackend,
} from '../../adapters/openai-agents/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, type Gatehouse } from '../../src/index.js';
import { nodeMajor } from '../support/frameworkWorlds.js';
import { toolOutputsSeen } from './openaiAgentsFixtures.js';

const POLICY = `
version: 1
actions:
  "payments.*":
    rules:
      - name: front_desk
        when: "true"
        verdict: Block
        message: "Payments go through the front desk"
`;

const LONG_NAME = 'payments.transfer_between_two_accounts_held_by_one_customer';

/** The tools the bank's MCP server really ran. */
const ran: string[] = [];

/** A stateless MCP server with a payment tool under `payments.*` (one with a long name) and `lookup`. */
async function bankMcp(request: Request): Promise<Response> {
  const server = new McpServer({ name: 'bank', version: '1.0.0' });
  for (const name of ['payments.transfer', LONG_NAME, 'lookup']) {
    server.registerTool(name, { description: name, inputSchema: { amount: z.number() } }, async () => {
      ran.push(name);
      return { content: [{ type: 'text', text: `${name} done` }] };
    });
  }
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  return transport.handleRequest(request);
}

describe.skipIf(nodeMajor < 22)(
  'OpenAI Agents MCP tool names (@openai/agents declares Node >= 22; skipped on older Node)',
  () => {
    let bank: RunningServer;
    let gatehouse: Gatehouse;
    const clients: MCPServerStreamableHttp[] = [];

    beforeAll(async () => {
      setTracingDisabled(true);
      bank = await startHttpServer(bankMcp, { port: 0 });
      gatehouse = createGatehouse({ store: openSqliteStore(), policy: compilePolicy(POLICY) });
    });
    afterEach(async () => {
      ran.length = 0;
      await Promise.all(clients.splice(0).map((client) => client.close()));
    });
    afterAll(async () => {
      await bank?.close(0);
      await gatehouse?.store.close();
    });

    /**
     * Runs an agent on the bank's MCP server (as `serverName`) whose model calls the tool `pick`
     * chooses among the names the SDK published; returns what the model read and the gate's history.
     */
    async function callTool(
      sessionId: string,
      pick: (published: string[]) => string | undefined,
      options: { serverName?: string; prefixed?: boolean; onError?: GateAgentToolsOptions['onError'] } = {},
    ) {
      const mcp = new MCPServerStreamableHttp({ url: `${bank.url}/mcp`, name: options.serverName ?? 'bank' });
      clients.push(mcp);
      await mcp.connect();
      let called: string | undefined;
      const outputs: string[] = [];
      const respond = modelResponder(({ request }) => {
        const input = typeof request.input === 'string' ? [] : request.input;
        if ((input.at(-1) as { type?: string } | undefined)?.type === 'function_call_result') {
          outputs.push(...toolOutputsSeen([request]));
          return [assistantMessage('done')];
        }
        called = pick(request.tools.map((tool) => (tool as { name: string }).name));
        return [functionCall(called ?? 'none', { amount: 10 }, { callId: 'call_1' })];
      });
      const agent = new Agent({
        name: 'payer',
        model: new ScriptedModel([respond, respond]),
        mcpServers: [mcp],
        mcpConfig: { includeServerInToolNames: options.prefixed ?? false },
      });
      gateTools(agent, {
        backend: inProcessBackend(gatehouse, { keyId: 'key_agent' }),
        sessionId,
        ...(options.onError === undefined ? {} : { onError: options.onError }),
      });
      await run(agent, 'pay');
      const history = (await gatehouse.readHistory({ session_id: sessionId, order: 'asc', limit: 50 }))
        .events;
      const gated = history
        .filter((event) => event.type === 'gate_evaluation')
        .map((event) => `${String(event.data['action'])}:${String(event.data['verdict'])}`);
      return { called, outputs, gated };
    }

    it('a tool published as payments_transfer is gated as payments.transfer, and refused', async () => {
      const { called, outputs, gated } = await callTool('names-1', () => 'payments_transfer');
      expect(called).toBe('payments_transfer');
      expect(ran).toEqual([]);
      expect(outputs).toEqual(['Payments go through the front desk']);
      expect(gated).toEqual(['payments.transfer:Block']);
    });

    it('with includeServerInToolNames, mcp_bank__payments_transfer is gated as payments.transfer, and refused', async () => {
      const { outputs, gated } = await callTool('names-2', () => 'mcp_bank__payments_transfer', {
        prefixed: true,
      });
      expect(ran).toEqual([]);
      expect(outputs).toEqual(['Payments go through the front desk']);
      expect(gated).toEqual(['payments.transfer:Block']);
    });

    it('a prefixed name the SDK shortened with a hash is gated under the tool’s own name', async () => {
      const { called, gated } = await callTool(
        'names-3',
        (published) => published.find((name) => name.startsWith('mcp_bank__payments_transfer_between')),
        { prefixed: true },
      );
      expect(called).toMatch(/^mcp_bank__payments_transfer_between\w*_[0-9a-f]{8}$/);
      expect(called!.length).toBeLessThanOrEqual(64);
      expect(ran).toEqual([]);
      expect(gated).toEqual([`${LONG_NAME}:Block`]);
    });

    it('an allowed prefixed call runs, recorded under the tool’s own name', async () => {
      const { gated } = await callTool('names-4', () => 'mcp_bank__lookup', { prefixed: true });
      expect(ran).toEqual(['lookup']);
      expect(gated).toEqual(['lookup:Allow']);
    });

    it('a published name Gatehouse cannot map back is refused unevaluated; onError hears why', async () => {
      // The SDK redacts a URL-like server name's query before prefixing: the prefix is not the name.
      const onError = vi.fn();
      const { called, outputs, gated } = await callTool(
        'names-5',
        (published) => published.find((name) => name.endsWith('__payments_transfer')),
        { serverName: 'https://bank.example/mcp?key=k', prefixed: true, onError },
      );
      expect(called).toBeDefined();
      expect(ran).toEqual([]);
      expect(outputs).toEqual([
        `Gatehouse could not check '${called}' (invalid_request), so it did not run.`,
      ]);
      expect(gated).toEqual([]);
      expect(onError).toHaveBeenCalledWith(expect.objectContaining({ code: 'invalid_request' }), {
        stage: 'evaluate',
        action: called,
        toolCallId: 'call_1',
      });
    });
  },
);
