/**
 * The server's resources: `gatehouse://sessions/{session_id}/state` and
 * `gatehouse://sessions/{session_id}/decisions`, each read through the same core call as the
 * matching tool. Errors become JSON-RPC errors with the tools' `<code>: <message>` text.
 */
import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Variables } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import { ErrorCode, McpError, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import {
  GatehouseError,
  parseInput,
  requireScope,
  type Scope,
  SessionIdSchema,
  toGatehouseError,
} from '../../src/index.js';
import type { ToolEnvironment } from './tools/toolEnvironment.js';

/** Registers the session resources on `server` for the client described by `env`. */
export function registerSessionResources(server: McpServer, env: ToolEnvironment): void {
  const { gatehouse, context } = env;

  const readResource = async (
    uri: URL,
    variables: Variables,
    scope: Scope,
    read: (sessionId: string) => Promise<unknown>,
  ): Promise<ReadResourceResult> => {
    try {
      if (env.scopes) requireScope({ scopes: env.scopes }, scope);
      const raw = variables['session_id'];
      const sessionId = decodeURIComponent(Array.isArray(raw) ? (raw[0] ?? '') : (raw ?? ''));
      const body = await read(parseInput(SessionIdSchema, sessionId, 'session_id'));
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(body) }] };
    } catch (thrown) {
      const error =
        thrown instanceof URIError
          ? new GatehouseError('invalid_request', 'The session_id in the URI is not valid percent-encoding.')
          : toGatehouseError(thrown);
      if (error.code === 'internal')
        env.logger?.error({ err: error.cause ?? thrown, uri: uri.href }, 'MCP resource read failed');
      const code =
        error.code === 'invalid_request'
          ? ErrorCode.InvalidParams
          : error.code === 'internal'
            ? ErrorCode.InternalError
            : ErrorCode.InvalidRequest;
      throw new McpError(code, `${error.code}: ${error.message}`);
    }
  };

  const defaultSession = env.defaultSessionId;
  const listFor = (suffix: 'state' | 'decisions', title: string) =>
    defaultSession === undefined
      ? undefined
      : () => ({
          resources: [
            {
              uri: `gatehouse://sessions/${encodeURIComponent(defaultSession)}/${suffix}`,
              name: `${defaultSession} ${suffix}`,
              title,
              mimeType: 'application/json',
            },
          ],
        });

  server.registerResource(
    'session_state',
    new ResourceTemplate('gatehouse://sessions/{session_id}/state', {
      list: listFor('state', 'Session state'),
    }),
    {
      title: 'Session state',
      description: 'The state items in force for a session and its open conflicts (JSON).',
      mimeType: 'application/json',
    },
    (uri, variables) =>
      readResource(uri, variables, 'state:read', async (sessionId) => {
        const [items, conflicts] = await Promise.all([
          gatehouse.listItems(sessionId, context),
          gatehouse.listConflicts({ session_id: sessionId, status: 'open' }, context),
        ]);
        return { session_id: sessionId, items, conflicts };
      }),
  );

  server.registerResource(
    'session_decisions',
    new ResourceTemplate('gatehouse://sessions/{session_id}/decisions', {
      list: listFor('decisions', 'Recent gate decisions'),
    }),
    {
      title: 'Recent gate decisions',
      description:
        'The 20 most recent gate_evaluation events of a session, newest first (JSON history page).',
      mimeType: 'application/json',
    },
    (uri, variables) =>
      readResource(uri, variables, 'history:read', (sessionId) =>
        gatehouse.readHistory({ session_id: sessionId, type: 'gate_evaluation', limit: 20 }, context),
      ),
  );
}
