/**
 * The MCP server over stdio, for local clients that start `gatehouse mcp` as a subprocess.
 * stdout carries only the protocol; logs go to the injected logger (stderr in the CLI).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Logger } from 'pino';
import { compilePolicy, type Gatehouse, GatehouseError } from '../../src/index.js';
import { createMcpServer, DEFAULT_MCP_SOURCES } from './mcpServer.js';

/** Options for {@link runStdioServer}. */
export interface StdioServerOptions {
  /** The core; its store is closed when the server stops. */
  gatehouse: Gatehouse;
  /** Session used when a tool call gives no `session_id`. @default none: `session_id` is required */
  defaultSessionId?: string;
  /**
   * Sources the client may claim; `system` and `user_input` only when listed here.
   * @default {@link DEFAULT_MCP_SOURCES} (`tool_output`, `retrieval`, `agent_inference`)
   */
  allowedSources?: readonly string[];
  /** Where lifecycle messages and unexpected errors go; never stdout. */
  logger?: Logger;
}

/** How long running tool calls may take to finish once the client has gone. */
const DRAIN_MS = 5000;

/**
 * Serves MCP on this process's stdin/stdout with every scope granted (local use) and the source cap
 * applied. Resolves once the server has stopped: stdin ended, stdout closed, SIGTERM or SIGINT.
 * Running tool calls finish first (up to 5 s); then the server and `gatehouse.store` are closed.
 * @throws {GatehouseError} `invalid_request` when `defaultSessionId` is not a valid session ID or
 *   `allowedSources` names a source the policy does not define
 * @example
 * await runStdioServer({ gatehouse, defaultSessionId: 's1', logger: pino(pino.destination(2)) });
 */
export async function runStdioServer(options: StdioServerOptions): Promise<void> {
  const log = options.logger;
  const running = new Set<Promise<unknown>>();
  let server: McpServer;
  try {
    // The tenant's policy in force (an owner may have activated another since this process's
    // policy file): its sources are what the client may claim, and what the tools describe.
    const active = await options.gatehouse.getActivePolicy();
    const policy =
      active.revision === options.gatehouse.policy.revision
        ? options.gatehouse.policy
        : compilePolicy(active.source);
    const known = Object.keys(policy.sources);
    const unknown = (options.allowedSources ?? []).filter((source) => !known.includes(source));
    if (unknown.length > 0) {
      throw new GatehouseError(
        'invalid_request',
        `Unknown source(s) ${unknown.map((s) => `'${s}'`).join(', ')} among the allowed sources; the policy defines: ${known.join(', ')}.`,
      );
    }
    server = createMcpServer({
      gatehouse: options.gatehouse,
      policy,
      ...(options.defaultSessionId === undefined ? {} : { defaultSessionId: options.defaultSessionId }),
      context: { allowedSources: options.allowedSources ?? DEFAULT_MCP_SOURCES },
      ...(log === undefined ? {} : { logger: log }),
      onToolCall: (call) => {
        running.add(call);
        void call.finally(() => running.delete(call));
      },
    });
  } catch (error) {
    await options.gatehouse.store.close();
    throw error;
  }
  const transport = new StdioServerTransport();
  transport.onerror = (error) => log?.warn({ err: error.message }, 'MCP stdio transport error');

  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => {
    resolveStopped = resolve;
  });
  let stopping: Promise<void> | undefined;

  const stop = (why: string): Promise<void> => {
    stopping ??= (async () => {
      log?.info({ why }, 'MCP stdio server stopping');
      detach();
      const drain = Promise.allSettled([...running]);
      const timeout = new Promise((resolve) => setTimeout(resolve, DRAIN_MS).unref());
      await Promise.race([drain, timeout]);
      // The SDK validates and writes a tool's answer in promise callbacks after the tool returns: let them run.
      await new Promise((resolve) => setImmediate(resolve));
      await server.close().catch((err: unknown) => log?.warn({ err }, 'MCP server close failed'));
      await options.gatehouse.store
        .close()
        .catch((err: unknown) => log?.error({ err }, 'store close failed'));
      resolveStopped();
    })();
    return stopping;
  };

  const onStdinEnd = () => void stop('stdin ended');
  const onSigterm = () => void stop('SIGTERM');
  const onSigint = () => void stop('SIGINT');
  // A client that goes away makes writes fail with EPIPE; that is a shutdown, not a crash.
  const onStdoutError = (err: Error) => {
    log?.debug({ err: err.message }, 'stdout closed');
    void stop('stdout closed');
  };
  const detach = () => {
    process.stdin.off('end', onStdinEnd);
    process.stdin.off('close', onStdinEnd);
    process.stdout.off('error', onStdoutError);
    process.off('SIGTERM', onSigterm);
    process.off('SIGINT', onSigint);
  };
  process.stdin.on('end', onStdinEnd);
  process.stdin.on('close', onStdinEnd);
  process.stdout.on('error', onStdoutError);
  process.on('SIGTERM', onSigterm);
  process.on('SIGINT', onSigint);

  try {
    await server.connect(transport);
  } catch (error) {
    detach();
    await options.gatehouse.store.close();
    throw error;
  }
  log?.info({ defaultSessionId: options.defaultSessionId ?? null }, 'MCP stdio server ready');
  return stopped;
}
