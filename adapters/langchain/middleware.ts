/**
 * The `createAgent` face: a `wrapToolCall` middleware. A blocked call never reaches the tool;
 * the model gets an error ToolMessage saying why, so it can change course instead of retrying.
 */
import { ToolMessage } from '@langchain/core/messages';
import type { ToolCall } from '@langchain/core/messages/tool';
import { interopSafeParseAsync, isInteropZodSchema } from '@langchain/core/utils/types';
import { interrupt } from '@langchain/langgraph';
import { type AgentMiddleware, createMiddleware } from 'langchain';
import { type Decision, inSpan } from '../../src/index.js';
import { jsonForm, OutcomeReports, secretsOf } from '../toolgate/index.js';
import {
  type GateOptions,
  gateToolCall,
  noteDecision,
  reportToolResult,
  toolCallSpan,
} from './toolCallGate.js';

/** Options for {@link gatehouseMiddleware}. */
export type GatehouseMiddlewareOptions = GateOptions;

/** The middleware, with a way to wait for the outcome reports it is still writing. */
export type GatehouseMiddleware = AgentMiddleware & {
  /**
   * Resolves once the outcomes of the tools that have returned are recorded (or reported to
   * `onError`): before reading them from the history, or before the process exits.
   */
  flush(): Promise<void>;
};

/** The JSON the model reads in the ToolMessage of a blocked call. */
export interface BlockedToolContent {
  blocked: true;
  verdict: 'Block';
  /** One human sentence from the policy. */
  reason: string;
  decision_id: string;
  reasons: Array<{ rule: string; message: string; keys: string[] }>;
  /** When a person must (or did) decide: the approval to wait for, or the denial. */
  approval?: { id: string; status: string; expires_at: string };
}

/**
 * The error ToolMessage that stands in for a blocked call: `status: 'error'`, the call's ID and
 * name, and a {@link BlockedToolContent} JSON body.
 */
export function blockedToolMessage(decision: Decision, toolCall: Pick<ToolCall, 'id' | 'name'>): ToolMessage {
  const content: BlockedToolContent = {
    blocked: true,
    verdict: 'Block',
    reason: decision.reason,
    decision_id: decision.decision_id,
    reasons: decision.reasons.map(({ rule, message, keys }) => ({ rule, message, keys })),
    ...(decision.approval === undefined
      ? {}
      : {
          approval: {
            id: decision.approval.id,
            status: decision.approval.status,
            expires_at: decision.approval.expires_at,
          },
        }),
  };
  return new ToolMessage({
    status: 'error',
    tool_call_id: toolCall.id ?? '',
    name: toolCall.name,
    content: JSON.stringify(content),
  });
}

/**
 * The arguments the tool will run with: the model's, parsed by the tool's zod schema as LangChain
 * parses them before the call (defaults filled in, strings trimmed or coerced), in their JSON form
 * (a date as its ISO string), as the history records them. Gating the model's raw arguments let a
 * schema default or transform carry a value the policy never saw. The raw arguments when the tool
 * has no zod schema, or when they do not parse (LangChain then refuses the call itself).
 */
async function argumentsToolRunsWith(
  tool: { schema?: unknown } | undefined,
  raw: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const schema = tool?.schema;
  if (!isInteropZodSchema(schema)) return raw;
  const parsed = await interopSafeParseAsync(schema, raw);
  if (!parsed.success) return raw;
  try {
    const text = JSON.stringify(parsed.data, jsonForm);
    const json: unknown = JSON.parse(text);
    return json !== null && typeof json === 'object' && !Array.isArray(json)
      ? (json as Record<string, unknown>)
      : raw; // a schema that makes something else than an object: the model's object is the nearest
  } catch {
    return raw; // a circular structure: no JSON form to record
  }
}

/**
 * A `createAgent` middleware that gates every tool call: evaluates `toolCall.name` with the
 * arguments the tool will run with as `params` (`toolCall.args` parsed by the tool's schema). Allow runs the tool; Warn calls `onWarn`, then runs it; Block
 * returns {@link blockedToolMessage} without running it. The result is recorded as an
 * `action_outcome` (an error ToolMessage or a thrown error is `failed`), written while the agent
 * goes on (`flush()` waits for the reports still being written). A call held for approval
 * follows `onApproval` (`block` by default; `interrupt` pauses the graph, see {@link GateOptions}).
 *
 * The session is `sessionId`, else `configurable.thread_id`, else `configurable.session_id`;
 * with none, and when the backend cannot be reached, the call fails and `agent.invoke`
 * rejects (fail closed: LangChain re-raises errors from a `wrapToolCall` middleware).
 * @example
 * const agent = createAgent({ model, tools, middleware: [gatehouseMiddleware({ backend: gatehouse })] });
 * await agent.invoke({ messages }, { configurable: { thread_id: 'session-42' } });
 */
export function gatehouseMiddleware(options: GatehouseMiddlewareOptions): GatehouseMiddleware {
  const outcomes = new OutcomeReports(options);
  const middleware = createMiddleware({
    name: 'gatehouse',
    wrapToolCall: async (request, handler) => {
      const { toolCall } = request;
      const call = {
        action: toolCall.name,
        params: await argumentsToolRunsWith(request.tool, toolCall.args ?? {}),
        toolCallId: toolCall.id,
        run: { configurable: request.runtime.configurable },
      };
      const { name, attributes } = toolCallSpan(call);
      // The whole call is one span, active while the gate decides and the tool runs, so the
      // decision's spans (and the tool's own, if it traces) are its children.
      return inSpan(name, { attributes }, async (span) => {
        const decision = await gateToolCall(options, call, interrupt);
        noteDecision(span, decision);
        if (decision.verdict === 'Block') return blockedToolMessage(decision, toolCall);

        // The model's arguments and the parsed ones: an error may quote either.
        const secrets = secretsOf(call.params, toolCall.args);
        let result: Awaited<ReturnType<typeof handler>>;
        try {
          result = await handler(request);
        } catch (error) {
          outcomes.failed(decision.decision_id, error, secrets);
          throw error;
        }
        reportToolResult(outcomes, decision.decision_id, result, secrets);
        return result;
      });
    },
  });
  return Object.assign(middleware, { flush: () => outcomes.flush() });
}
