/**
 * MCP over Streamable HTTP, stateless: each POST gets its own transport and a server built for the
 * caller's API key (tenant, scopes, sources), answers in plain JSON, and is closed afterwards.
 * Mounted at `/mcp` by `createHttpApp({ mcp })`, behind the same bearer auth and rate limit as `/v1`.
 */

import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  type HandleRequestOptions,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Logger } from 'pino';
import {
  compilePolicy,
  type Gatehouse,
  GatehouseError,
  hasScope,
  type Principal,
  type Scope,
} from '../../src/index.js';
import { createHostOriginCheck, type HostOriginCheckOptions } from './hostOriginCheck.js';
import { createMcpServer } from './mcpServer.js';
import { GATEHOUSE_TOOLS } from './tools/index.js';
import type { DescribedPolicy } from './tools/toolEnvironment.js';

/** The status logged for a request whose client went away before its answer (nginx's 499). */
const CLIENT_CLOSED_REQUEST = 499;

/** `answer`, or undefined as soon as `signal` aborts (the client went away). */
function untilAbandoned(answer: Promise<Response>, signal: AbortSignal): Promise<Response | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<Response | undefined>((resolve, reject) => {
    const abandoned = () => resolve(undefined);
    signal.addEventListener('abort', abandoned, { once: true });
    answer.then(resolve, reject).finally(() => signal.removeEventListener('abort', abandoned));
  });
}

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
  /**
   * The `WWW-Authenticate` value asking a holder of a token from `issuer` for `scope`. With it, a `tools/call` by a
   * token that lacks the tool's scope is answered HTTP 403 `insufficient_scope` (the MCP
   * authorization spec's step-up, which clients act on) instead of a tool error; an API key
   * holder, who cannot step up, still gets the tool error.
   * @default none: tool errors for everyone
   */
  insufficientScopeChallenge?: (scope: Scope, issuer: string) => string;
}

/**
 * Reads the request body as UTF-8 text, refusing more than `limit` bytes (the HTTP app's reader,
 * which on node:http reads the socket's Buffers instead of a web stream).
 * @throws {GatehouseError} `payload_too_large`
 */
export type McpBodyReader = (limit: number) => Promise<string>;

/**
 * Checks the request's credential again, as it was checked before the handler ran.
 * @throws {GatehouseError} `unauthorized` once the key is revoked or the token no longer valid
 */
export type McpCallerCheck = () => Promise<unknown>;

/**
 * Handles one authenticated `/mcp` request. With `readBody` the body is read through it and
 * handed to the transport parsed; without, the transport reads `request.body`. With
 * `checkCaller`, a tool that waits (`wait_for_approval`) checks the credential again before it
 * acts; the HTTP app always gives it.
 */
export type McpHttpHandler = (
  request: Request,
  principal: Principal,
  readBody?: McpBodyReader,
  checkCaller?: McpCallerCheck,
) => Promise<Response>;

/**
 * Whether `Content-Type` names JSON, as the SDK transport decides it (the media type before any
 * parameters, case-insensitive). Written here because the SDK's helpers for this and for the
 * message below are internal modules, not its API: a minor release may move them.
 */
function isJsonContentType(header: string | null): boolean {
  return header?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json';
}

/** The transport's 413 message, word for word. */
const tooLargeMessage = (limit: number): string =>
  `Payload Too Large: Request body must not exceed ${limit} bytes`;

/** A JSON-RPC error answer as the SDK transport writes it (`id: null`: no request was read). */
function jsonRpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

/**
 * The body, parsed, for the transport's `parsedBody`; or a `Response` when it cannot be read, the
 * answer the transport gives for the same failure (413 over the limit, 400 -32700 otherwise).
 * Taken only when the transport's own header checks would pass (`Accept` listing both types, a
 * JSON `Content-Type`): it checks them before the body, so any other request keeps its answer
 * (406, 415) by going the transport's way.
 */
async function preparsedBody(
  request: Request,
  readBody: McpBodyReader,
  limit: number,
): Promise<HandleRequestOptions | Response> {
  const accept = request.headers.get('accept');
  const acceptable = accept?.includes('application/json') && accept.includes('text/event-stream');
  if (!acceptable || !isJsonContentType(request.headers.get('content-type'))) return {};
  let text: string;
  try {
    text = await readBody(limit);
  } catch (error) {
    if (error instanceof GatehouseError && error.code === 'payload_too_large') {
      return jsonRpcError(413, -32000, tooLargeMessage(limit));
    }
    return jsonRpcError(400, -32700, 'Parse error: Invalid JSON');
  }
  try {
    return { parsedBody: JSON.parse(text) as unknown };
  } catch {
    return jsonRpcError(400, -32700, 'Parse error: Invalid JSON');
  }
}

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
  // The credential check of the request a server serves now (servers outlive requests).
  const callerChecks = new WeakMap<McpServer, McpCallerCheck | undefined>();
  // What the tool descriptions need of each tenant's policy in force (its sources and types), by
  // revision. Only that is kept, not the compiled policy: the core holds those, and a tenant's is
  // compiled here again only after its entry was dropped (a 48 KiB policy takes a tenth of a second,
  // with the event loop blocked). Kept by revision, not tenant: a revision is the hash of the
  // document, so tenants with the same one share it. Least recently used dropped first.
  const described = new Map<string, DescribedPolicy>();
  /**
   * The tenant's policy in force, which its tool descriptions tell the model about. Servers are
   * pooled by its revision too: once another is activated, new servers describe it.
   */
  const tenantPolicy = async (tenantId: string): Promise<{ revision: string; policy: DescribedPolicy }> => {
    const active = await options.gatehouse.getActivePolicy({ tenantId });
    const { revision } = active;
    if (revision === options.gatehouse.policy.revision) return { revision, policy: options.gatehouse.policy };
    let policy = described.get(revision);
    if (policy) {
      described.delete(revision);
    } else {
      const { sources, types } = compilePolicy(active.source);
      policy = { sources, types };
      if (described.size >= MAX_DESCRIBED_REVISIONS)
        described.delete(described.keys().next().value as string);
    }
    described.set(revision, policy);
    return { revision, policy };
  };
  const build = (principal: Principal, policy: DescribedPolicy) => {
    const server: McpServer = createMcpServer({
      gatehouse: options.gatehouse,
      policy,
      context: {
        tenantId: principal.tenantId,
        allowedSources: principal.sources,
        scopes: principal.scopes,
        keyId: principal.keyId,
        ...(principal.record === undefined ? {} : { principal: principal.record }),
        labels: principal.labels,
      },
      ...(log === undefined ? {} : { logger: log }),
      checkCaller: async () => {
        await callerChecks.get(server)?.();
      },
    });
    return server;
  };
  return async (request, principal, readBody, checkCaller) => {
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
    // Read here rather than by the transport: on node:http the app reads the socket's Buffers,
    // while `request.body` would build a web Request and streams over it (~90 µs a call).
    const body = readBody ? await preparsedBody(request, readBody, maxRequestBodySize) : {};
    if (body instanceof Response) {
      log?.debug({ status: body.status, keyId: principal.keyId }, 'MCP HTTP request rejected');
      return body;
    }
    const stepUp = stepUpAnswer(principal, 'parsedBody' in body ? body.parsedBody : undefined);
    if (stepUp) return stepUp;
    const { revision, policy } = await tenantPolicy(principal.tenantId);
    const key = JSON.stringify([
      revision,
      principal.keyId,
      principal.tenantId,
      principal.scopes,
      principal.sources,
      principal.labels,
      principal.record,
    ]);
    const server = idle.get(key)?.pop() ?? build(principal, policy);
    callerChecks.set(server, checkCaller);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize,
    });
    transport.onerror = (error) =>
      log?.debug({ err: error.message, keyId: principal.keyId }, 'MCP HTTP request rejected');
    let answered = false;
    try {
      await server.connect(transport);
      // JSON mode: the response is complete when this resolves, so closing afterwards loses nothing.
      // A client that goes away first (its request's signal aborts) gets no answer: the server is
      // closed below at once, which aborts the signal of its running tool call (a wait_for_approval
      // would poll the store for up to a minute, then take the approval's use for nobody). The
      // transport never settles an answer it has dropped, so the abort settles it here.
      const response = await untilAbandoned(transport.handleRequest(request, body), request.signal);
      answered = response !== undefined;
      return response ?? new Response(null, { status: CLIENT_CLOSED_REQUEST });
    } finally {
      // Closed once the answer is on its way, not before: closing aborts the signal of every
      // request the server still tracks (an AbortError with a stack each), and the SDK forgets a
      // finished request only a few promise turns after its answer. In the next turn of the event
      // loop nothing is tracked, so the close aborts nothing; it costs the caller no wait either.
      const reusable = answered;
      setImmediate(() => {
        server
          .close()
          .then(() => {
            if (reusable) release(key, server);
          })
          .catch((err: unknown) => log?.warn({ err }, 'MCP server close failed'));
      });
    }
  };

  /** The 403 for a token that calls a tool beyond its scopes; undefined when the call may go on. */
  function stepUpAnswer(principal: Principal, message: unknown): Response | undefined {
    const challenge = options.insufficientScopeChallenge;
    if (!challenge || principal.record?.kind !== 'oidc') return undefined;
    const call = message as { method?: unknown; params?: { name?: unknown } } | undefined;
    if (call?.method !== 'tools/call') return undefined;
    const tool = GATEHOUSE_TOOLS.find((t) => t.name === call.params?.name);
    if (!tool || hasScope(principal, tool.scope)) return undefined;
    return new Response(
      JSON.stringify({
        jsonrpc: '2.0',
        error: {
          code: -32001,
          message: `This token lacks the '${tool.scope}' scope that ${tool.name} needs.`,
        },
        id: (message as { id?: unknown }).id ?? null,
      }),
      {
        status: 403,
        headers: {
          'content-type': 'application/json',
          'www-authenticate': challenge(tool.scope, principal.record.iss),
        },
      },
    );
  }

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
/**
 * Revisions whose sources and types are kept for descriptions: more than the tenants of a large
 * deployment have in force at once, so none is compiled again in turn. Each is a few hundred
 * bytes (a 48 KiB policy of nothing but sources: 48 KiB).
 */
const MAX_DESCRIBED_REVISIONS = 1024;
/** Idle servers kept per context: enough for the requests one context has in flight. */
const MAX_POOLED_SERVERS = 8;
