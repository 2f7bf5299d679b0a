/**
 * The callback face: a handler that gates every tool call of any LangChain runnable (an agent,
 * a graph, a bare `tool.invoke`). It throws to stop a blocked tool, so it needs LangChain to
 * wait for it and re-raise: `super({ raiseError: true })` sets both.
 */
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { Serialized } from '@langchain/core/load/serializable';
import type { LLMResult } from '@langchain/core/outputs';
import { context, type Span, trace } from '@opentelemetry/api';
import { GatehouseError, markSpanFailed, tracer } from '../../src/index.js';
import { ActionBlockedError, OutcomeReports } from '../toolgate/index.js';
import {
  type GateOptions,
  gateToolCall,
  noteDecision,
  reportToolResult,
  toolCallSpan,
} from './toolCallGate.js';
import { resolveToolName, toolParams } from './toolIdentity.js';

/** Options for {@link GatehouseCallbackHandler}. */
export type GatehouseCallbackHandlerOptions = GateOptions;

/** In-flight bookkeeping is bounded: runs that never end (a crashed graph) must not leak. */
const MAX_TRACKED = 4096;

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_TRACKED) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
}

/**
 * Gates every tool call: evaluates `<tool name>` with the tool's arguments as `params` before
 * the tool runs. Allow runs it; Warn calls `onWarn`, then runs it; Block throws
 * {@link ActionBlockedError} and the tool function never runs. After the tool, its result is
 * recorded as an `action_outcome` event under the same decision ID, written while the agent goes
 * on; {@link GatehouseCallbackHandler.flush} waits for those still being written.
 *
 * How the block surfaces depends on the caller: `tool.invoke` rejects; `createAgent` without
 * any `wrapToolCall` middleware turns the error into an error ToolMessage and the model goes
 * on; `createAgent` with such a middleware rejects `agent.invoke`. For a clean, model-readable
 * answer inside `createAgent`, use {@link gatehouseMiddleware} instead.
 *
 * The session is `sessionId`, else `metadata.thread_id`, else `metadata.session_id`; with none
 * the tool does not run. A handler sees the run's `metadata`, never its `configurable`:
 * LangGraph (`createAgent`, graphs) copies `configurable.thread_id` into the metadata, while a
 * bare `tool.invoke` or a `RunnableSequence` needs `{ metadata: { thread_id } }`.
 * @example
 * const handler = new GatehouseCallbackHandler({ backend: gatehouse });
 * await agent.invoke({ messages }, { callbacks: [handler], configurable: { thread_id: 'session-42' } });
 * await someTool.invoke(args, { callbacks: [handler], metadata: { thread_id: 'session-42' } });
 */
export class GatehouseCallbackHandler extends BaseCallbackHandler {
  name = 'gatehouse';
  readonly #options: GateOptions;
  readonly #outcomes: OutcomeReports;
  /** runId → decision ID of a tool that was let through. */
  readonly #decisions = new Map<string, string>();
  /** toolCallId → the tool name the model asked for. */
  readonly #calledNames = new Map<string, string>();
  /** runId → the `execute_tool` span of a tool that was let through, ended with the tool. */
  readonly #spans = new Map<string, Span>();

  /**
   * @param options the backend and how to find the session
   */
  constructor(options: GatehouseCallbackHandlerOptions) {
    // A class field `raiseError = true` would leave awaitHandlers false: the tool would run and
    // the thrown block would become an unhandled rejection. The constructor sets both.
    super({ raiseError: true });
    if (options.onApproval === 'interrupt') {
      // LangChain runs handlers outside the graph's context, where interrupt() cannot work.
      throw new GatehouseError(
        'invalid_request',
        "onApproval: 'interrupt' needs gatehouseMiddleware; the callback handler can 'wait' or 'block'.",
      );
    }
    this.#options = options;
    this.#outcomes = new OutcomeReports(options);
  }

  /**
   * Resolves once the outcomes of the tools that have returned are recorded (or reported to
   * `onError`): before reading them from the history, or before the process exits.
   */
  flush(): Promise<void> {
    return this.#outcomes.flush();
  }

  /** One instance must see both the start and the end of a run, so a copy is this handler. */
  override copy(): this {
    return this;
  }

  /** Remembers the tool names the model asked for, by tool call ID. Never throws. */
  override handleLLMEnd(output: LLMResult): void {
    try {
      for (const generations of output.generations) {
        for (const generation of generations) {
          const calls = (generation as { message?: { tool_calls?: unknown } }).message?.tool_calls;
          if (!Array.isArray(calls)) continue;
          for (const call of calls as Array<{ id?: unknown; name?: unknown }>) {
            if (typeof call.id === 'string' && typeof call.name === 'string') {
              remember(this.#calledNames, call.id, call.name);
            }
          }
        }
      }
    } catch {
      // Only a hint for naming; a malformed model output is not the gate's business.
    }
  }

  /**
   * Evaluates the call before the tool runs.
   * @throws {ActionBlockedError} on Block
   * @throws {GatehouseError} with no session, an unnamed tool, or a backend failure (fail closed)
   */
  override async handleToolStart(
    tool: Serialized,
    input: string,
    runId: string,
    _parentRunId?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    runName?: string,
    toolCallId?: string,
  ): Promise<void> {
    const calledName = toolCallId === undefined ? undefined : this.#calledNames.get(toolCallId);
    if (toolCallId !== undefined) this.#calledNames.delete(toolCallId);
    const action = resolveToolName({ serialized: tool, runName, metadata, calledName });
    // A span from here to the tool's end, in the caller's active trace; the gate's spans are its
    // children. A callback cannot make it the tool's own active context.
    const { name, attributes } = toolCallSpan({ action, toolCallId });
    const span = tracer.startSpan(name, { attributes });
    let decision: Awaited<ReturnType<typeof gateToolCall>>;
    try {
      decision = await context.with(trace.setSpan(context.active(), span), () =>
        gateToolCall(this.#options, { action, params: toolParams(input), toolCallId, run: { metadata } }),
      );
    } catch (error) {
      markSpanFailed(span, error);
      span.end();
      throw error;
    }
    noteDecision(span, decision);
    if (decision.verdict === 'Block') {
      span.end();
      throw new ActionBlockedError(decision);
    }
    remember(this.#decisions, runId, decision.decision_id);
    remember(this.#spans, runId, span);
  }

  /**
   * Starts recording `succeeded` (or `failed` for an error ToolMessage); the tool's result does
   * not wait for it. Never throws.
   */
  override handleToolEnd(output: unknown, runId: string): void {
    this.#endSpan(runId);
    const decisionId = this.#take(runId);
    if (decisionId !== undefined) reportToolResult(this.#outcomes, decisionId, output);
  }

  /** Starts recording `failed` with the error's first words; the error does not wait for it. Never throws. */
  override handleToolError(error: unknown, runId: string): void {
    this.#endSpan(runId, error);
    const decisionId = this.#take(runId);
    if (decisionId !== undefined) this.#outcomes.failed(decisionId, error);
  }

  #endSpan(runId: string, error?: unknown): void {
    const span = this.#spans.get(runId);
    if (!span) return;
    this.#spans.delete(runId);
    if (error !== undefined) markSpanFailed(span, error);
    span.end();
  }

  #take(runId: string): string | undefined {
    const decisionId = this.#decisions.get(runId);
    this.#decisions.delete(runId);
    return decisionId;
  }
}
