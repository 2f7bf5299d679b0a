/**
 * `/mcp` describes `record_state` from each tenant's policy in force. The core already holds
 * every tenant's policy compiled; the handler must not compile one again on every request once
 * more tenants than its pool holds have policies of their own (a 48 KiB policy takes a tenth of a
 * second to compile, with the event loop blocked).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningServer } from '../../adapters/http/index.js';
import { createApiKey, createIdGenerator, type Gatehouse, systemRandomBytes } from '../../src/index.js';
import { BUDGET_POLICY_YAML, budgetGatehouse, connectMcpHttp, startMcpHttpServer } from './fixtures.js';

// The real compiler, counted: how many policies the MCP adapter compiles (the core imports its
// compiler directly, so its own compilations are not counted here).
const compiles = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/index.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/index.js')>();
  return {
    ...original,
    compilePolicy: (...args: Parameters<typeof original.compilePolicy>) => {
      compiles.count += 1;
      return original.compilePolicy(...args);
    },
  };
});

/** More tenants with policies of their own than the handler keeps server pools for (64). */
const TENANTS = 66;

let gh: Gatehouse;
let server: RunningServer;
const clients: Client[] = [];

const tenantPolicy = (n: number) =>
  `${BUDGET_POLICY_YAML}sources: { system: 9, user_input: 3, tool_output: 2, retrieval: 1, agent_inference: 1, crm_${n}: 4 }\n`;

async function connect(tenantId: string): Promise<Client> {
  const deps = { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() };
  const { secret } = await createApiKey(gh.store, deps, {
    tenantId,
    scopes: ['state:write'],
    sources: ['tool_output', `crm_${tenantId.slice(1)}`],
  });
  const client = await connectMcpHttp(server.url, secret, 'gatehouse-tenant-policies-test');
  clients.push(client);
  return client;
}

const described = async (client: Client) =>
  (await client.listTools()).tools.find((t) => t.name === 'record_state')?.description ?? '';

beforeAll(async () => {
  gh = budgetGatehouse();
  server = await startMcpHttpServer(gh);
});

afterAll(async () => {
  for (const client of clients) await client.close();
  await server.close();
  await gh.store.close();
});

describe("record_state's description across many tenants' policies", () => {
  it("tells each tenant its own policy's sources, and compiles no policy again once it has described it", async () => {
    const tenants = Array.from({ length: TENANTS }, (_, n) => `t${n}`);
    for (const [n, tenantId] of tenants.entries()) {
      const { revision } = await gh.getActivePolicy({ tenantId });
      await gh.activatePolicy({ policy: tenantPolicy(n), expected_revision: revision }, { tenantId });
    }
    const connected = [];
    for (const tenantId of tenants) connected.push(await connect(tenantId));
    for (const [n, client] of connected.entries()) {
      expect(await described(client)).toContain(
        `You may claim: tool_output (trust 2: a result returned by a tool or API); crm_${n} (trust 4)`,
      );
    }
    compiles.count = 0;
    // Round through the tenants again, as their agents' requests come in.
    for (const [n, client] of connected.entries()) {
      const text = await described(client);
      // Its own source, and no other tenant's.
      expect(text.match(/crm_\d+/g)).toEqual([`crm_${n}`]);
    }
    expect(compiles.count).toBe(0);
  });
});
