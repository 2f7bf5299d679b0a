/**
 * Tools from an MCP server in OpenAI Agents: a bank's MCP server on loopback (the MCP SDK's
 * Streamable HTTP transport) with a `transfer_money` tool that records what it really sent, reached
 * by the SDK's own `MCPServerStreamableHttp`. `gateTools(agent)` puts Gatehouse's guardrails on the
 * agent's MCP servers: a Block never reaches the server, a hold is refused with its reason until a
 * person approves it in Gatehouse, and then the same call goes through once.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Agent, MCPServerStreamableHttp, run, setTracingDisabled } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { type ApprovalRequest, gateTools } from '../../adapters/openai-agents/index.js';
import {
  embeddedWorld,
  nodeMajor,
  outcomesOf,
  recordBudget,
  type World,
} from '../support/frameworkWorlds.js';
import { scriptedModel, toolOutputsSeen } from './openaiAgentsFixtures.js';

/** Transfers the bank's MCP server really made. */
const transfers: Array<{ amount: number; to: string }> = [];

/** A stateless MCP server: one server and transport per request, as the MCP SDK's examples do. */
async function bankMcp(request: Request): Promise<Response> {
  const server = new McpServer({ name: 'bank', version: '1.0.0' });
  server.registerTool(
    'transfer_money',
    { description: 'Transfers money.', inputSchema: { amount: z.number(), to: z.string() } },
    async ({ amount, to }) => {
      transfers.push({ amount, to });
      return { content: [{ type: 'text', text: `sent ${amount} to ${to}` }] };
    },
  );
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  return transport.handleRequest(request);
}

describe.skipIf(nodeMajor < 22)(
  'OpenAI Agents MCP tools (@openai/agents declares Node >= 22; skipped on older Node)',
  () => {
    let bank: RunningServer;
    let mcp: MCPServerStreamableHttp;
    let world: World;

    beforeAll(async () => {
      setTracingDisabled(true);
      bank = await startHttpServer(bankMcp, { port: 0 });
      mcp = new MCPServerStreamableHttp({ url: `${bank.url}/mcp`, name: 'bank' });
      await mcp.connect();
      world = embeddedWorld();
      await recordBudget(world.backend, 'mcp-1');
    });
    afterAll(async () => {
      await mcp?.close();
      await bank?.close(0);
      await world?.close();
    });

    /** A fresh agent on the bank's MCP server, gated, calling `transfer_money` with `args`. */
    function payer(args: Record<string, unknown>, requests: ApprovalRequest[] = []) {
      const scripted = scriptedModel(args);
      const agent = new Agent({ name: 'payer', model: scripted.model, mcpServers: [mcp] });
      const { flush } = gateTools(agent, {
        backend: world.backend,
        sessionId: 'mcp-1',
        onApprovalRequest: (request) => void requests.push(request),
      });
      return { agent, flush, modelRequests: scripted.requests };
    }

    it('a Block never reaches the MCP server; the model reads the reason', async () => {
      const { agent, modelRequests } = payer({ amount: 10, to: 'mallory' });
      const result = await run(agent, 'pay mallory');
      expect(result.finalOutput).toBe('done');
      expect(transfers).toEqual([]);
      expect(toolOutputsSeen(modelRequests)).toEqual(['Transfers to mallory are not allowed']);
    });

    it('an Allow reaches it once, and the outcome is recorded', async () => {
      const { agent, flush } = payer({ amount: 20, to: 'bob' });
      await run(agent, 'pay bob');
      expect(transfers).toEqual([{ amount: 20, to: 'bob' }]);
      await flush();
      expect(await outcomesOf(world, 'mcp-1')).toEqual([expect.objectContaining({ outcome: 'succeeded' })]);
    });

    it('a hold is refused with its reason; once a person approves it in Gatehouse, the same call goes through once', async () => {
      transfers.length = 0;
      const requests: ApprovalRequest[] = [];
      const held = payer({ amount: 9000, to: 'acct-9' }, requests);
      await run(held.agent, 'pay 9000');
      expect(transfers).toEqual([]);
      expect(requests).toEqual([
        expect.objectContaining({ tool_call_id: 'call_1', params: { amount: 9000, to: 'acct-9' } }),
      ]);
      expect(toolOutputsSeen(held.modelRequests)[0]).toContain(
        `Held for approval ${requests[0]!.approval_id}`,
      );

      await world.approve(requests[0]!.approval_id);
      await run(payer({ amount: 9000, to: 'acct-9' }).agent, 'pay 9000 now');
      expect(transfers).toEqual([{ amount: 9000, to: 'acct-9' }]);
      await run(payer({ amount: 9000, to: 'acct-9' }).agent, 'and again');
      expect(transfers).toHaveLength(1);
    });

    it('a server shared by several agents carries the guardrails once; an agent not gated is refused its calls', async () => {
      payer({ amount: 1 });
      expect(mcp.toolInputGuardrails?.filter((g) => g.name === 'gatehouse')).toHaveLength(1);
      const scripted = scriptedModel({ amount: 30, to: 'bob' });
      const ungated = new Agent({ name: 'stranger', model: scripted.model, mcpServers: [mcp] });
      const before = transfers.length;
      await run(ungated, 'pay bob');
      expect(transfers).toHaveLength(before);
      expect(toolOutputsSeen(scripted.requests)[0]).toMatch(/agent 'stranger' was not gated/);
    });
  },
);
