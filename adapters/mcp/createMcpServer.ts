/**
 * The Gatehouse MCP server: tools and resources that each call the same core function as the
 * matching HTTP route. Transport-agnostic; `runStdioServer` and `createMcpHttpHandler` connect it.
 */
import { readFileSync } from 'node:fs';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Variables } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  type ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import {
  type CallContext,
  type Gatehouse,
  GatehouseError,
  parseInput,
  requireScope,
  type Scope,
  SessionIdSchema,
  toGatehouseError,
} from '../../src/index.js';
import {
  renderDecision,
  renderHistory,
  renderRecordState,
  renderResolution,
  renderState,
  toolError,
  toolSuccess,
} from './toolResults.js';
import { toolSchemas } from './toolSchemas.js';

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
}

/** Called with each running tool call, so a transport can let them finish before closing. */
export type CallTracker = (call: Promise<unknown>) => void;

const SOURCE_MEANING: Record<string, string> = {
  system: 'set by the operator or platform',
  user_input: 'only what the user stated explicitly',
  tool_output: 'a result returned by a tool or API',
  retrieval: 'a document, search or database lookup',
  agent_inference: 'your own conclusion or estimate',
};

const TYPE_MEANING: Record<string, string> = {
  fact: 'a known value',
  assumption: 'believed but unverified',
  preference: 'what the user prefers',
  constraint: 'a limit that must hold',
};

let cachedVersion: string | undefined;

/** The package version, for `serverInfo` (found from both the sources and `dist/`). */
function packageVersion(): string {
  if (cachedVersion !== undefined) return cachedVersion;
  cachedVersion = '0.0.0';
  for (const path of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'gatehouse' && typeof pkg.version === 'string') {
        cachedVersion = pkg.version;
        break;
      }
    } catch {
      // Not at this depth: try the next one.
    }
  }
  return cachedVersion;
}

const INSTRUCTIONS =
  'Gatehouse keeps governed state for this conversation and gates actions. Record the facts you rely on ' +
  'with record_state; call evaluate_gate BEFORE any consequential action and never perform an action whose ' +
  'verdict is Block; use list_state to see what is known and read_history to explain past decisions.';

/**
 * Creates an MCP server exposing Gatehouse: tools `record_state`, `evaluate_gate`, `read_history`,
 * `list_state`, `resolve_conflict`, and resources `gatehouse://sessions/{session_id}/state` and
 * `gatehouse://sessions/{session_id}/decisions`. Connect it to one transport.
 * @throws {GatehouseError} `invalid_request` when `defaultSessionId` is not a valid session ID
 * @example
 * const server = createMcpServer({ gatehouse, defaultSessionId: 's1' });
 * await server.connect(new StdioServerTransport());
 */
export function createMcpServer(options: CreateMcpServerOptions): McpServer {
  return buildMcpServer(options);
}

/** {@link createMcpServer}, with a tracker for running tool calls (used by the stdio runner). */
export function buildMcpServer(options: CreateMcpServerOptions, track?: CallTracker): McpServer {
  const gh = options.gatehouse;
  const logger = options.logger;
  const defaultSession =
    options.defaultSessionId === undefined
      ? undefined
      : parseInput(SessionIdSchema, options.defaultSessionId, 'default session_id');
  const scopes = options.context?.scopes;
  const allowedSources = options.context?.allowedSources ?? DEFAULT_MCP_SOURCES;
  const ctx: CallContext = {
    ...(options.context?.tenantId === undefined ? {} : { tenantId: options.context.tenantId }),
    allowedSources,
  };
  const schemas = toolSchemas(defaultSession !== undefined);

  const server = new McpServer(
    { name: 'gatehouse', version: packageVersion() },
    { instructions: INSTRUCTIONS },
  );

  const sessionOf = (given: string | undefined): string => {
    const id = given ?? defaultSession;
    if (id === undefined) {
      throw new GatehouseError(
        'invalid_request',
        'session_id is required: this server has no default session.',
        {
          errors: [{ path: 'session_id', message: 'is required' }],
        },
      );
    }
    return id;
  };

  /** Runs one tool call: scope check, the core call, errors as `isError` results. */
  const run = (tool: string, scope: Scope, work: () => Promise<CallToolResult>): Promise<CallToolResult> => {
    const call = (async () => {
      try {
        if (scopes) requireScope({ scopes }, scope);
        return await work();
      } catch (error) {
        return toolError(error, logger, tool);
      }
    })();
    track?.(call);
    return call;
  };

  const sessionHelp =
    defaultSession === undefined
      ? 'session_id: the conversation or task the item belongs to (required).'
      : `session_id: the conversation or task (optional; default "${defaultSession}").`;
  const policy = gh.policy;
  const claimable = allowedSources.filter((s) => policy.sources[s] !== undefined);
  const maxTrust = Math.max(-Infinity, ...claimable.map((s) => policy.sources[s]!));
  const higher = Object.entries(policy.sources)
    .filter(([, trust]) => trust > maxTrust)
    .map(([source, trust]) => `${source} ${trust}`);
  const sourceHelp = claimable
    .map((s) => `${s} (trust ${policy.sources[s]}${SOURCE_MEANING[s] ? `: ${SOURCE_MEANING[s]}` : ''})`)
    .join('; ');
  const typeHelp = policy.types.map((t) => (TYPE_MEANING[t] ? `${t} (${TYPE_MEANING[t]})` : t)).join(', ');

  server.registerTool(
    'record_state',
    {
      title: 'Record state',
      description: [
        'Record a value this conversation relies on in Gatehouse governed state, so later gate checks ' +
          '(evaluate_gate) decide on it. Call it when the user states a fact you will rely on (a budget, a limit, ' +
          'a deadline, a preference), and when a tool result or retrieved document gives a value you will act on. ' +
          'Every accepted change is a new version in a tamper-evident history.',
        'Fields:',
        `- ${sessionHelp}`,
        '- key: dotted lower-case name with at least two segments, e.g. budget.limit, user.email, deploy.freeze_until.',
        '- value: the value as a string (numbers as plain digits, e.g. "5000").',
        `- type: ${typeHelp}.`,
        `- source: where the value comes from; claim its true origin. You may claim: ${sourceHelp || 'none'}. Any other source is refused (forbidden).`,
        '- expected_version (optional): write only if the item is at this version (0: it must not exist yet).',
        '- metadata (optional): a small JSON object, e.g. {"tool": "crm.lookup"}.',
        `You cannot overwrite a value that came from a higher-trust source${higher.length > 0 ? ` (${higher.join(', ')})` : ''}: ` +
          'a different value is then recorded as a conflict (outcome "conflict"), the value in force stays, and a ' +
          'user must resolve it. Writing the same value again changes nothing.',
      ].join('\n'),
      inputSchema: schemas.recordStateInput,
      outputSchema: schemas.recordStateOutput,
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    (args) =>
      run('record_state', 'state:write', async () => {
        const result = await gh.recordState({ ...args, session_id: sessionOf(args.session_id) }, ctx);
        return toolSuccess(result, renderRecordState(result));
      }),
  );

  server.registerTool(
    'evaluate_gate',
    {
      title: 'Evaluate gate',
      description: [
        'Ask the gate whether an action may proceed. Call it BEFORE any consequential action (payments, sending ' +
          'messages or e-mail, deleting or changing data, deploying, any call with side effects), with the ' +
          "action's name and arguments. The verdict is Allow, Warn or Block:",
        '- Block: do NOT perform the action. Tell the user why (read reason and reasons[].message) and what would ' +
          'unblock it (for example a missing or conflicted state item, listed in reasons[].keys).',
        '- Warn: you may proceed, but tell the user the warning.',
        '- Allow: proceed.',
        'Every decision is recorded in the history under its decision_id.',
        'Fields:',
        `- ${sessionHelp}`,
        '- action: dotted action name the policy matches on, e.g. payments.transfer, email.send, deploy.production.',
        '- params (optional): the action\'s arguments as a JSON object, e.g. {"amount": 9000, "currency": "EUR"}.',
        '- context (optional): extra facts about the situation as a JSON object.',
      ].join('\n'),
      inputSchema: schemas.evaluateGateInput,
      outputSchema: schemas.evaluateGateOutput,
      // It changes no state; it only appends an audit record. Read-only lets clients call it without a prompt.
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run('evaluate_gate', 'gate:evaluate', async () => {
        const decision = await gh.evaluate({ ...args, session_id: sessionOf(args.session_id) }, ctx);
        return toolSuccess(decision, renderDecision(decision));
      }),
  );

  server.registerTool(
    'read_history',
    {
      title: 'Read history',
      description: [
        'Read the append-only, hash-chained history: state changes, conflicts, resolutions, gate decisions and ' +
          'action outcomes, newest first. Use it to explain why an action was blocked, what a value was before, ' +
          'or where it came from.',
        'Fields (all optional):',
        defaultSession === undefined
          ? '- session_id: only this session (default: every session).'
          : `- session_id: only this session (default "${defaultSession}").`,
        '- type: state_change, state_conflict, conflict_resolved, gate_evaluation or action_outcome.',
        '- decision_id: the events of one decision.',
        '- limit: 1 to 500 (default 50). order: desc (default) or asc.',
        '- cursor: the next_cursor of the previous page.',
      ].join('\n'),
      inputSchema: schemas.readHistoryInput,
      outputSchema: schemas.readHistoryOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run('read_history', 'history:read', async () => {
        const sessionId = args.session_id ?? defaultSession;
        const page = await gh.readHistory(
          { ...args, ...(sessionId === undefined ? {} : { session_id: sessionId }) },
          ctx,
        );
        return toolSuccess(page, renderHistory(page));
      }),
  );

  server.registerTool(
    'list_state',
    {
      title: 'List state',
      description: [
        'List the state items in force for a session (key, value, type, source, trust, version) and its open ' +
          'conflicts. Use it to check what is already known before you record a value or act.',
        'Fields:',
        `- ${sessionHelp}`,
      ].join('\n'),
      inputSchema: schemas.listStateInput,
      outputSchema: schemas.listStateOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run('list_state', 'state:read', async () => {
        const sessionId = sessionOf(args.session_id);
        const [items, conflicts] = await Promise.all([
          gh.listItems(sessionId, ctx),
          gh.listConflicts({ session_id: sessionId, status: 'open' }, ctx),
        ]);
        return toolSuccess(
          { session_id: sessionId, items, conflicts },
          renderState(sessionId, items, conflicts),
        );
      }),
  );

  server.registerTool(
    'resolve_conflict',
    {
      title: 'Resolve conflict',
      description: [
        'Resolve an open conflict (listed by list_state): keep_current keeps the value in force; accept_proposed ' +
          "replaces it with the proposed value as a new version. Do this only on the user's explicit instruction. " +
          "Resolving needs at least the trust of the value in force, so a conflict over a user's value is refused " +
          '(forbidden) unless this client may write user_input.',
        'Fields:',
        '- conflict_id: the conflict (cfl_…).',
        '- resolution: keep_current or accept_proposed.',
        '- note (optional): why, for the history.',
      ].join('\n'),
      inputSchema: schemas.resolveConflictInput,
      outputSchema: schemas.resolveConflictOutput,
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    ({ conflict_id, ...input }) =>
      run('resolve_conflict', 'state:write', async () => {
        const conflict = await gh.resolveConflict(conflict_id, input, ctx);
        return toolSuccess(conflict, renderResolution(conflict));
      }),
  );

  /** Reads a resource; errors become JSON-RPC errors with the same `<code>: <message>` text. */
  const readResource = async (
    uri: URL,
    variables: Variables,
    scope: Scope,
    read: (sessionId: string) => Promise<unknown>,
  ): Promise<ReadResourceResult> => {
    try {
      if (scopes) requireScope({ scopes }, scope);
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
        logger?.error({ err: error.cause ?? thrown, uri: uri.href }, 'MCP resource read failed');
      const code =
        error.code === 'invalid_request'
          ? ErrorCode.InvalidParams
          : error.code === 'internal'
            ? ErrorCode.InternalError
            : ErrorCode.InvalidRequest;
      throw new McpError(code, `${error.code}: ${error.message}`);
    }
  };

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
          gh.listItems(sessionId, ctx),
          gh.listConflicts({ session_id: sessionId, status: 'open' }, ctx),
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
        gh.readHistory({ session_id: sessionId, type: 'gate_evaluation', limit: 20 }, ctx),
      ),
  );

  return server;
}
