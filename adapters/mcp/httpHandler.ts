/**
 * MCP over Streamable HTTP, stateless: each POST gets a fresh server and transport built from the
 * caller's API key (tenant, scopes, sources), answers in plain JSON, and is closed afterwards.
 * Mounted at `/mcp` by `createHttpApp({ mcp })`, behind the same bearer auth and rate limit as `/v1`.
 */

import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Logger } from 'pino';
import type { Gatehouse, Principal } from '../../src/index.js';
import { createHostOriginCheck, type HostOriginCheckOptions } from './hostOriginCheck.js';
import { createMcpServer } from './mcpServer.js';

/** Options for {@link createMcpHttpHandler}. */
export interface McpHttpHandlerOptions extends HostOriginCheckOptions {
  /** The core the tools call. */
  gatehouse: Gatehouse;
  /** Receives transport problems and unexpected tool failures. */
  logger?: Logger;
  /**
   * Largest JSON-RPC request body; larger ones get 413. (`/mcp` is outside the `/v1` body limit.)
   * @default 64 KiB
   */
  maxBodyBytes?: number;
}

/** Handles one authenticated `/mcp` request. */
export type McpHttpHandler = (request: Request, principal: Principal) => Promise<Response>;

function methodNotAllowed(method: string): Response {
  // Stateless: no server-initiated stream to GET, no session to DELETE. Clients treat 405 as "not offered".
  return new Response(
    JSON.stringify({
      jsonrpc: '2.0',
      error: {
        code: -32000,
        message: `Method ${method} is not allowed: this server is stateless; use POST.`,
      },
      id: null,
    }),
    { status: 405, headers: { allow: 'POST', 'content-type': 'application/json' } },
  );
}

/**
 * Creates the `/mcp` handler. A request whose `Host` or `Origin` is not allowed gets 403 (DNS
 * rebinding protection; by default only loopback names are allowed). The principal's tenant
 * scopes every tool call, its scopes gate the tools (`forbidden` otherwise) and its sources cap
 * the trust `record_state` may claim.
 * @throws {TypeError} when `allowedHosts` or `allowedOrigins` holds an entry that is not a host or origin
 * @example
 * const app = createHttpApp({ gatehouse, mcp: createMcpHttpHandler({ gatehouse }) });
 */
export function createMcpHttpHandler(options: McpHttpHandlerOptions): McpHttpHandler {
  const log = options.logger;
  const checkHostOrigin = createHostOriginCheck(options);
  const maxRequestBodySize = options.maxBodyBytes ?? 64 * 1024;
  // Building a server (five tools, their schemas and descriptions) costs more than the call it
  // serves. A server serves one transport at a time, so idle servers wait in a small pool per
  // caller context (key, tenant, scopes, sources) and are reconnected to each request's transport.
  // The key is part of it: an approval records which key asked, so servers are not shared by keys.
  const idle = new Map<string, McpServer[]>();
  const build = (principal: Principal) =>
    createMcpServer({
      gatehouse: options.gatehouse,
      context: {
        tenantId: principal.tenantId,
        allowedSources: principal.sources,
        scopes: principal.scopes,
        keyId: principal.keyId,
        labels: principal.labels,
      },
      ...(log === undefined ? {} : { logger: log }),
    });
  return async (request, principal) => {
    const refused = checkHostOrigin(request);
    if (refused) {
      log?.warn(
        {
          keyId: principal.keyId,
          host: request.headers.get('host')?.slice(0, 200),
          origin: request.headers.get('origin')?.slice(0, 200),
        },
        'MCP request refused: Host or Origin not allowed',
      );
      return refused;
    }
    if (request.method !== 'POST') return methodNotAllowed(request.method);
    const key = JSON.stringify([principal.keyId, principal.tenantId, principal.scopes, principal.sources]);
    const server = idle.get(key)?.pop() ?? build(principal);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize,
    });
    transport.onerror = (error) =>
      log?.debug({ err: error.message, keyId: principal.keyId }, 'MCP HTTP request rejected');
    let reusable = false;
    try {
      await server.connect(transport);
      // JSON mode: the response is complete when this resolves, so closing afterwards loses nothing.
      const response = await transport.handleRequest(request);
      reusable = true;
      return response;
    } finally {
      await server.close().catch((err: unknown) => {
        reusable = false;
        log?.warn({ err }, 'MCP server close failed');
      });
      if (reusable) release(key, server);
    }
  };

  function release(key: string, server: McpServer): void {
    let servers = idle.get(key);
    if (!servers) {
      if (idle.size >= MAX_POOLED_CONTEXTS) idle.delete(idle.keys().next().value as string);
      servers = [];
      idle.set(key, servers);
    }
    if (servers.length < MAX_POOLED_SERVERS) servers.push(server);
  }
}

/** Caller contexts whose idle servers are kept (oldest dropped first). */
const MAX_POOLED_CONTEXTS = 64;
/** Idle servers kept per context: enough for the requests one context has in flight. */
const MAX_POOLED_SERVERS = 8;
