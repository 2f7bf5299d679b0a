/**
 * Shared fixtures for the MCP tests: a policy with a budget rule, and a Gatehouse on SQLite :memory:.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { createMcpHttpHandler } from '../../adapters/mcp/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, type Gatehouse, type GatehouseOptions } from '../../src/index.js';

/** `payments.*` needs `budget.limit`, and a transfer above it is blocked. */
export const BUDGET_POLICY_YAML = `
version: 1
actions:
  "payments.*":
    requires:
      - key: budget.limit
    rules:
      - name: over_budget
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}."
`;

/** A Gatehouse with the budget policy on a private in-memory SQLite store. */
export function budgetGatehouse(options: Omit<GatehouseOptions, 'store' | 'policy'> = {}): Gatehouse {
  return createGatehouse({ ...options, store: openSqliteStore(), policy: compilePolicy(BUDGET_POLICY_YAML) });
}

/** `gh` served over HTTP on a loopback port, with `/mcp` (Streamable HTTP) and no rate limit. */
export function startMcpHttpServer(gh: Gatehouse): Promise<RunningServer> {
  const app = createHttpApp({
    gatehouse: gh,
    mcp: createMcpHttpHandler({ gatehouse: gh }),
    rateLimit: false,
  });
  return startHttpServer(app.fetch, { port: 0 });
}

/** The text of the first content block of a tool result. */
/** The real SDK client connected to `<url>/mcp` over Streamable HTTP, with `key` as its bearer (none: no header). */
export async function connectMcpHttp(url: string, key: string | undefined, name: string): Promise<Client> {
  const headers: Record<string, string> = key === undefined ? {} : { Authorization: `Bearer ${key}` };
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return client;
}

export function textOf(result: object): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content;
  return content?.[0]?.text ?? '';
}
