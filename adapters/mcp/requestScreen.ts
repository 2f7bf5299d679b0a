/**
 * Answers the client requests that SDK 1.x would answer wrongly, before the SDK sees them:
 * - params that fail the SDK's own request schema come back from it as -32603 (Internal error)
 *   with a multi-line dump of zod issues (its `Protocol` parses the request before any handler
 *   runs, and a `ZodError` has no JSON-RPC code); here they get -32602 (Invalid params) and one
 *   line naming the field;
 * - `resources/read` with a `uri` that is not a URL fails in the SDK's `new URL(uri)`: -32603
 *   "Invalid URL"; here -32602;
 * - `tools/call` naming an `Object.prototype` member (`constructor`, `__proto__`): the SDK looks
 *   tools up in a plain object, finds the prototype's member and answers "Tool constructor
 *   disabled"; here it gets the SDK's answer for any unknown name ("Tool … not found").
 * Every other message goes to the SDK untouched.
 */

import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  isJSONRPCRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  PingRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The requests the Gatehouse server serves, by method, with the schema the SDK parses each with.
 * A method outside this list is left to the SDK, which answers -32601 for one it does not serve;
 * a capability added to the server (prompts, completions, logging) adds its schema here.
 */
const SERVED_REQUESTS = new Map(
  [
    InitializeRequestSchema,
    PingRequestSchema,
    ListToolsRequestSchema,
    CallToolRequestSchema,
    ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema,
    ReadResourceRequestSchema,
  ].map((schema) => [schema.shape.method.value as string, schema]),
);

/** Field problems named in one answer; the rest are counted. */
const MAX_PROBLEMS = 3;
/** Longest client value echoed back. */
const MAX_ECHO = 80;

/** One zod issue, as far as the message needs it. */
interface Issue {
  code: string;
  path: readonly PropertyKey[];
  message: string;
  expected?: unknown;
  errors?: readonly (readonly Issue[])[];
}

/** What the type names zod reports read as in a sentence. */
const TYPE_NAMES: Readonly<Record<string, string>> = {
  record: 'an object',
  object: 'an object',
  array: 'an array',
  int: 'an integer',
  undefined: 'undefined',
  null: 'null',
};

const typeName = (expected: unknown): string => TYPE_NAMES[String(expected)] ?? `a ${String(expected)}`;

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** `arguments`, `_meta.progressToken`, `items[0]`: the path inside `params`, as a client wrote it. */
function fieldName(path: readonly PropertyKey[]): string {
  const inner = path[0] === 'params' && path.length > 1 ? path.slice(1) : path;
  return inner
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`))
    .join('');
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** One problem in one line: `arguments must be an object, received array`. */
function describeIssue(request: unknown, issue: Issue): string {
  const field = fieldName(issue.path);
  const value = valueAt(request, issue.path);
  let expected: unknown[] | undefined;
  if (issue.code === 'invalid_type') expected = [issue.expected];
  // A union of plain types (`progressToken`: string | number) reads as the list of those types.
  else if (issue.code === 'invalid_union' && issue.errors?.length) {
    const branches = issue.errors.map((branch) => branch[0]);
    if (branches.every((b) => b?.code === 'invalid_type' && b.path.length === 0)) {
      expected = branches.map((b) => b?.expected);
    }
  }
  if (expected === undefined) return `${field}: ${issue.message.replace(/\s+/g, ' ')}`;
  if (value === undefined) return `${field} is required`;
  return `${field} must be ${expected.map(typeName).join(' or ')}, received ${kindOf(value)}`;
}

function invalidParams(request: JSONRPCRequest, problems: readonly string[]): JSONRPCMessage {
  const shown = problems.slice(0, MAX_PROBLEMS).join('; ');
  const more = problems.length > MAX_PROBLEMS ? ` (and ${problems.length - MAX_PROBLEMS} more)` : '';
  return {
    jsonrpc: '2.0',
    id: request.id,
    error: { code: ErrorCode.InvalidParams, message: `${request.method}: ${shown}${more}` },
  };
}

const echo = (value: string): string =>
  JSON.stringify(value.length > MAX_ECHO ? `${value.slice(0, MAX_ECHO)}…` : value);

/**
 * The answer to `request` when the SDK would answer it wrongly (see the module comment), else
 * `undefined`: the request is well formed, or its method is not one this server serves.
 * @example
 * screenRequest({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: [] } });
 * // { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'tools/call: arguments must be an object, received array' } }
 */
export function screenRequest(request: JSONRPCRequest): JSONRPCMessage | undefined {
  const schema = SERVED_REQUESTS.get(request.method);
  if (schema === undefined) return undefined;
  const parsed = schema.safeParse(request);
  if (!parsed.success) {
    const issues = parsed.error.issues as readonly Issue[];
    return invalidParams(
      request,
      issues.map((issue) => describeIssue(request, issue)),
    );
  }
  const params = parsed.data.params as { name?: unknown; uri?: unknown } | undefined;
  if (request.method === 'resources/read' && typeof params?.uri === 'string' && !URL.canParse(params.uri)) {
    return invalidParams(request, [`uri must be an absolute URI (scheme:…), received ${echo(params.uri)}`]);
  }
  // No tool is named after an Object.prototype member (registering `__proto__` would even set the
  // registry's prototype), so such a name is unknown: answered as the SDK answers any unknown name.
  if (
    request.method === 'tools/call' &&
    typeof params?.name === 'string' &&
    params.name in Object.prototype
  ) {
    const notFound = new McpError(ErrorCode.InvalidParams, `Tool ${params.name} not found`);
    return {
      jsonrpc: '2.0',
      id: request.id,
      result: { content: [{ type: 'text', text: notFound.message }], isError: true },
    };
  }
  return undefined;
}

/**
 * Puts {@link screenRequest} in front of whatever handles `transport`'s incoming messages: a
 * request it answers is answered on `transport` and never reaches the handler. Call it before
 * the server connects (the SDK's `connect` sets the handler and starts reading at once).
 */
export function screenIncomingRequests(transport: Transport): void {
  let deliver = transport.onmessage;
  const screened: NonNullable<Transport['onmessage']> = (message, extra) => {
    const answer = isJSONRPCRequest(message) ? screenRequest(message) : undefined;
    if (answer === undefined) {
      deliver?.(message, extra);
      return;
    }
    transport.send(answer).catch((error: unknown) => {
      transport.onerror?.(error instanceof Error ? error : new Error(String(error)));
    });
  };
  // An accessor rather than a wrapped transport object: the transport keeps calling
  // `this.onmessage`, and its other members (sessionId, handleRequest, …) stay as they are.
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    enumerable: true,
    get: () => (deliver === undefined ? undefined : screened),
    set: (handler: Transport['onmessage']) => {
      deliver = handler;
    },
  });
}
