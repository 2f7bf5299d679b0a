/**
 * The Gatehouse MCP server: the tools of `./tools/` and the session resources, each calling the
 * same core function as the matching HTTP route. Transport-agnostic; `runStdioServer` and
 * `createMcpHttpHandler` connect it.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from 'pino';
import {
  type CallContext,
  type Gatehouse,
  packageVersion,
  parseInput,
  type Scope,
  SessionIdSchema,
} from '../../src/index.js';
import { screenIncomingRequests } from './requestScreen.js';
import { registerSessionResources } from './sessionResources.js';
import { GATEHOUSE_TOOLS } from './tools/index.js';
import type { CallTracker, DescribedPolicy, ToolEnvironment } from './tools/toolEnvironment.js';

/**
 * Sources an MCP client may claim unless configured otherwise: a model may report tool results,
 * retrievals and its own inferences, but not speak for the user (`user_input`) or the system.
 */
export const DEFAULT_MCP_SOURCES: readonly string[] = ['tool_output', 'retrieval', 'agent_inference'];

/** Who the MCP client is: a {@link CallContext} plus the scopes its tools may use. */
export interface McpCallContext extends CallContext {
  /**
   * Scopes the client holds; a tool needing another one answers `forbidden`.
   * @default every scope (local use)
   */
  scopes?: readonly Scope[];
}

/** Options for {@link createMcpServer}. */
export interface CreateMcpServerOptions {
  /** The core the tools call. */
  gatehouse: Gatehouse;
  /**
   * The client's tenant's policy in force, which the tool descriptions tell the model about (the
   * sources it may claim and their trust). The core enforces the tenant's policy whatever this is.
   * @default `gatehouse.policy` (the instance's)
   */
  policy?: DescribedPolicy;
  /**
   * Session used when a tool call gives no `session_id`; when set, `session_id` is optional in the
   * tool schemas. @default none: `session_id` is required
   */
  defaultSessionId?: string;
  /**
   * Tenant, source cap and scopes of the client.
   * @default the default tenant, every scope, sources {@link DEFAULT_MCP_SOURCES}
   */
  context?: McpCallContext;
  /** Receives unexpected tool failures (never shown to the client). */
  logger?: Logger;
  /**
   * Called with each running tool call (a promise that settles when its result is ready), so a
   * transport can let running calls finish before it closes. @default none
   */
  onToolCall?: CallTracker;
  /**
   * Checks the client's credential again; a tool that waits (`wait_for_approval`) calls it before
   * it acts, and a rejection becomes its error result. @default none
   */
  checkCaller?: () => Promise<void>;
}

/**
 * An `McpServer` that screens each transport it connects to (`./requestScreen.ts`), so requests
 * the SDK would answer wrongly (malformed params as -32603, prototype names as disabled tools)
 * get the right answer whatever the transport: stdio, Streamable HTTP, or one a caller brings.
 */
class ScreenedMcpServer extends McpServer {
  override async connect(transport: Transport): Promise<void> {
    screenIncomingRequests(transport);
    await super.connect(transport);
  }
}

const INSTRUCTIONS =
  'Gatehouse keeps governed state for this conversation and gates actions. Record the facts you rely on ' +
  'with record_state; call evaluate_gate BEFORE any consequential action and never perform an action whose ' +
  'verdict is Block (a Block held for approval waits for a person: wait_for_approval); use list_state to see what is known and read_history to explain past decisions.';

/**
 * Creates an MCP server exposing Gatehouse: the tools of {@link GATEHOUSE_TOOLS} (`record_state`,
 * `evaluate_gate`, `read_history`, `list_state`, `resolve_conflict`, `wait_for_approval`) and the resources
 * `gatehouse://sessions/{session_id}/state` and `gatehouse://sessions/{session_id}/decisions`.
 * Connect it to one transport; requests with malformed params get -32602 (Invalid params) with a
 * one-line message on every transport.
 * @throws {GatehouseError} `invalid_request` when `defaultSessionId` is not a valid session ID
 * @example
 * const server = createMcpServer({ gatehouse, defaultSessionId: 's1' });
 * await server.connect(new StdioServerTransport());
 */
export function createMcpServer(options: CreateMcpServerOptions): McpServer {
  const allowedSources = options.context?.allowedSources ?? DEFAULT_MCP_SOURCES;
  const env: ToolEnvironment = {
    gatehouse: options.gatehouse,
    policy: options.policy ?? options.gatehouse.policy,
    context: {
      ...(options.context?.tenantId === undefined ? {} : { tenantId: options.context.tenantId }),
      ...(options.context?.keyId === undefined ? {} : { keyId: options.context.keyId }),
      // A token holder is recorded as issuer, subject and client: without it, its events named a
      // key that does not exist (the pseudonymous ID that stands for the subject).
      ...(options.context?.principal === undefined ? {} : { principal: options.context.principal }),
      ...(options.context?.scopes === undefined ? {} : { scopes: options.context.scopes }),
      ...(options.context?.labels === undefined ? {} : { labels: options.context.labels }),
      allowedSources,
    },
    scopes: options.context?.scopes,
    defaultSessionId:
      options.defaultSessionId === undefined
        ? undefined
        : parseInput(SessionIdSchema, options.defaultSessionId, 'default session_id'),
    logger: options.logger,
    onToolCall: options.onToolCall,
    checkCaller: options.checkCaller,
  };
  const server = new ScreenedMcpServer(
    { name: 'gatehouse', version: packageVersion() },
    { instructions: INSTRUCTIONS },
  );
  for (const tool of GATEHOUSE_TOOLS) tool.register(server, env);
  registerSessionResources(server, env);
  return server;
}
