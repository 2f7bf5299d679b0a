/**
 * MCP over Streamable HTTP, stateless: each POST gets a fresh server and transport built from the
 * caller's API key (tenant, scopes, sources), answers in plain JSON, and is closed afterwards.
 * Mounted at `/mcp` by `createHttpApp({ mcp })`, behind the same bearer auth and rate limit as `/v1`.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Logger } from 'pino';
import type { Gatehouse, Principal } from '../../src/index.js';
import { buildMcpServer } from './createMcpServer.js';

/** Options for {@link createMcpHttpHandler}. */
export interface McpHttpHandlerOptions {
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
 * Creates the `/mcp` handler. The principal's tenant scopes every tool call, its scopes gate the
 * tools (`forbidden` otherwise) and its sources cap the trust `record_state` may claim.
 * @example
 * const app = createHttpApp({ gatehouse, mcp: createMcpHttpHandler({ gatehouse }) });
 */
export function createMcpHttpHandler(options: McpHttpHandlerOptions): McpHttpHandler {
  const log = options.logger;
  const maxRequestBodySize = options.maxBodyBytes ?? 64 * 1024;
  return async (request, principal) => {
    if (request.method !== 'POST') return methodNotAllowed(request.method);
    // A stateless transport serves one request; so does the server connected to it.
    const server = buildMcpServer({
      gatehouse: options.gatehouse,
      context: { tenantId: principal.tenantId, allowedSources: principal.sources, scopes: principal.scopes },
      ...(log === undefined ? {} : { logger: log }),
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize,
    });
    transport.onerror = (error) =>
      log?.debug({ err: error.message, keyId: principal.keyId }, 'MCP HTTP request rejected');
    try {
      await server.connect(transport);
      // JSON mode: the response is complete when this resolves, so closing afterwards loses nothing.
      return await transport.handleRequest(request);
    } finally {
      await server.close().catch((err: unknown) => log?.warn({ err }, 'MCP server close failed'));
    }
  };
}
