/**
 * One MCP tool as one declaration: name, title, description, input and output schemas,
 * annotations, the scope it needs and its handler. {@link defineTool} turns it into something the
 * server registers; the scope check, error handling and call tracking are done here once.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { context, type Link, propagation, SpanKind, trace } from '@opentelemetry/api';
import type { z } from 'zod';
import { GEN_AI_ATTRIBUTES, inSpan, markSpanFailed, requireScope, type Scope } from '../../../src/index.js';
import { toolError, toolSuccess } from '../toolResults.js';
import type { SessionField } from './sessionField.js';
import { sessionField } from './sessionField.js';
import type { ToolEnvironment } from './toolEnvironment.js';

/** What a handler answers: the structured result (checked against the output schema) and its text for models. */
export interface ToolAnswer<Out> {
  structured: Out;
  text: string;
}

/** The declaration of one tool. */
export interface ToolSpec<In extends z.ZodObject, Out extends z.ZodObject> {
  /** The tool name clients call. */
  name: string;
  /** A short human title. */
  title: string;
  /** The scope a key needs to call it. */
  scope: Scope;
  /** The description the model reads; it may depend on the policy and the client. */
  description(env: ToolEnvironment): string;
  /** The input schema, given the `session_id` field of this server. */
  input(session: SessionField): In;
  /** The output schema (`structuredContent`). */
  output: Out;
  /** Hints for clients; nothing enforces them. */
  annotations: ToolAnnotations;
  /**
   * Does the work; anything thrown becomes an `isError` result. `call.signal` aborts when the
   * client cancels the request or its connection goes away.
   */
  handler(
    args: z.output<In>,
    env: ToolEnvironment,
    call: { signal?: AbortSignal | undefined },
  ): Promise<ToolAnswer<z.output<Out>>>;
}

/** A declared tool, ready to register on a server. */
export interface GatehouseTool {
  readonly name: string;
  readonly title: string;
  readonly scope: Scope;
  readonly annotations: ToolAnnotations;
  /** Registers the tool on `server` for the client described by `env`. */
  register(server: McpServer, env: ToolEnvironment): void;
}

/** What a tool call's span needs from the SDK's request extra. */
interface CallMeta {
  _meta?: Record<string, unknown> | undefined;
  requestId?: string | number | undefined;
  signal?: AbortSignal | undefined;
}

/** Only string values of `_meta` are trace headers; anything else a client sends is ignored. */
const metaGetter = {
  get: (meta: Record<string, unknown>, key: string) => {
    const value = meta[key];
    return typeof value === 'string' ? value : undefined;
  },
  keys: (meta: Record<string, unknown>) => Object.keys(meta),
};

/**
 * The parent of a tool call's span: the client's trace from `params._meta.traceparent` (the MCP
 * semantic conventions' carrier), linked to the transport's span (the HTTP request on
 * Streamable HTTP); without it, the active context (that HTTP span, or none on stdio).
 */
function callParent(meta: Record<string, unknown> | undefined): {
  parent: ReturnType<typeof context.active>;
  links: Link[];
} {
  const active = context.active();
  if (typeof meta?.['traceparent'] !== 'string') return { parent: active, links: [] };
  const parent = propagation.extract(active, meta, metaGetter);
  const transport = trace.getSpanContext(active);
  return { parent, links: transport ? [{ context: transport }] : [] };
}

/**
 * Turns a tool declaration into a {@link GatehouseTool}. Input schemas are built once per
 * variant (with or without a default session): servers are built per caller and pooled, and
 * building schemas costs more than a call.
 */
export function defineTool<In extends z.ZodObject, Out extends z.ZodObject>(
  spec: ToolSpec<In, Out>,
): GatehouseTool {
  const inputs = new Map<boolean, In>();
  const inputFor = (hasDefaultSession: boolean): In => {
    let input = inputs.get(hasDefaultSession);
    if (!input) {
      input = spec.input(sessionField(hasDefaultSession));
      inputs.set(hasDefaultSession, input);
    }
    return input;
  };
  return {
    name: spec.name,
    title: spec.title,
    scope: spec.scope,
    annotations: spec.annotations,
    register(server, env) {
      const run = (args: z.output<In>, request: CallMeta): Promise<CallToolResult> => {
        const { parent, links } = callParent(request._meta);
        const attributes = {
          'mcp.method.name': 'tools/call',
          [GEN_AI_ATTRIBUTES.operationName]: GEN_AI_ATTRIBUTES.executeTool,
          [GEN_AI_ATTRIBUTES.toolName]: spec.name,
          ...(request.requestId === undefined ? {} : { 'jsonrpc.request.id': String(request.requestId) }),
        };
        const call = inSpan(
          `tools/call ${spec.name}`,
          { kind: SpanKind.SERVER, attributes, parent, links },
          async (span) => {
            try {
              if (env.scopes) requireScope({ scopes: env.scopes }, spec.scope);
              const answer = await spec.handler(args, env, { signal: request.signal });
              return toolSuccess(answer.structured, answer.text);
            } catch (error) {
              markSpanFailed(span, error);
              return toolError(error, env.logger, spec.name);
            }
          },
        );
        env.onToolCall?.(call);
        return call;
      };
      // Widened to the base type: the SDK's callback type cannot be resolved for a generic schema.
      const inputSchema: z.ZodObject = inputFor(env.defaultSessionId !== undefined);
      const outputSchema: z.ZodObject = spec.output;
      server.registerTool(
        spec.name,
        {
          title: spec.title,
          description: spec.description(env),
          inputSchema,
          outputSchema,
          annotations: spec.annotations,
        },
        // The SDK parses the arguments with this input schema before the callback runs.
        (args, extra) => run(args as z.output<In>, extra),
      );
    },
  };
}
