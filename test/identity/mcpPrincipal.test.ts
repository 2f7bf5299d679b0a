/**
 * "Every event a caller causes records its principal" (docs/identity.md) over `/mcp` too: a tool
 * call made with an IdP's access token records the token holder (issuer, subject, client), as
 * the same call on `/v1` does, never a made-up key record.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { createMcpHttpHandler } from '../../adapters/mcp/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createGatehouse,
  createTokenAuthenticator,
  type Gatehouse,
  parseIdentityConfig,
} from '../../src/index.js';
import { startTestIdp, type TestIdp } from './testIdp.js';

const PUBLIC_URL = 'http://gatehouse.test';
const MCP_RESOURCE = `${PUBLIC_URL}/mcp`;

let idp: TestIdp;
let gatehouse: Gatehouse;
let server: RunningServer;

beforeAll(async () => {
  idp = await startTestIdp();
  gatehouse = createGatehouse({ store: openSqliteStore() });
  const tokens = createTokenAuthenticator({
    config: parseIdentityConfig({
      issuers: [
        {
          issuer: idp.issuer,
          tenant: 'acme',
          map: [{ claim: 'scope', value: 'gatehouse.write', scopes: ['state:write', 'gate:evaluate'] }],
        },
      ],
    }),
    mcpResource: MCP_RESOURCE,
  });
  const app = createHttpApp({
    gatehouse,
    rateLimit: false,
    identity: { tokens, publicUrl: PUBLIC_URL },
    mcp: createMcpHttpHandler({ gatehouse }),
  });
  server = await startHttpServer(app.fetch, { port: 0 });
});

afterAll(async () => {
  await server.close();
  await gatehouse.store.close();
  await idp.close();
});

describe('a tool call over /mcp with an access token', () => {
  it('records the token holder as the principal of its events', async () => {
    const token = await idp.clientCredentials({
      clientId: 'writer',
      resource: MCP_RESOURCE,
      scope: 'gatehouse.write',
    });
    const client = new Client({ name: 'gatehouse-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const result = await client.callTool({
        name: 'record_state',
        arguments: {
          session_id: 'mcp-who',
          key: 'trip.city',
          value: 'Oslo',
          type: 'fact',
          source: 'tool_output',
        },
      });
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      const evaluated = await client.callTool({
        name: 'evaluate_gate',
        arguments: { session_id: 'mcp-who', action: 'trip.book', params: {} },
      });
      expect(evaluated.isError, JSON.stringify(evaluated)).toBeFalsy();
    } finally {
      await client.close();
    }
    const page = await gatehouse.readHistory({ session_id: 'mcp-who' }, { tenantId: 'acme' });
    expect(page.events.length).toBeGreaterThanOrEqual(2);
    for (const event of page.events) {
      expect(event.data['principal'], event.type).toEqual({
        kind: 'oidc',
        iss: idp.issuer,
        sub: 'writer',
        client_id: 'writer',
      });
    }
  });
});
