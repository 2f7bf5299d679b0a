/**
 * `gatehouse/mcp`: Gatehouse as an MCP server. Tools `record_state`, `evaluate_gate`,
 * `read_history`, `list_state`, `resolve_conflict`; over stdio (`gatehouse mcp`) or stateless
 * Streamable HTTP (`/mcp` of `gatehouse serve`).
 */

export {
  createHostOriginCheck,
  defaultAllowedHosts,
  type HostOriginCheck,
  type HostOriginCheckOptions,
  isWildcardAddress,
  LOOPBACK_HOSTNAMES,
} from './hostOriginCheck.js';
export { createMcpHttpHandler, type McpHttpHandler, type McpHttpHandlerOptions } from './httpHandler.js';
export {
  type CreateMcpServerOptions,
  createMcpServer,
  DEFAULT_MCP_SOURCES,
  type McpCallContext,
} from './mcpServer.js';
export { runStdioServer, type StdioServerOptions } from './stdioServer.js';
export {
  type CallTracker,
  defineTool,
  GATEHOUSE_TOOLS,
  type GatehouseTool,
  type ToolAnswer,
  type ToolEnvironment,
  type ToolSpec,
} from './tools/index.js';
