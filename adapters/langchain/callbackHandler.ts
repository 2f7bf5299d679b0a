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
import { ActionBlockedError, OutcomeReports, secretsOf } from '../toolgate/index.js';
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
  /** runId → decision ID of a tool that was let through, and the secrets among its arguments. */
  readonly #decisions = new Map<string, { decisionId: string; secrets: ReadonlySet<string> }>();
  /** Root run → toolCallId → the tool names the model asked for under that ID in the run. */
  readonly #calledNames = new Map<string, Map<string, string[]>>();
  /** runId → parent run, for the chains and tools under way: finds the run a call belongs to. */
  readonly #parents = new Map<string, string>();
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

  /** Remembers the run's parent, to tell which run a model's or a tool's call belongs to. Never throws. */
  override handleChainStart(_chain: Serialized, _inputs: unknown, runId: string, parentRunId?: string): void {
    // @langchain/core passes the parent run 4th, where its typings say `runType`.
    if (parentRunId !== undefined) remember(this.#parents, runId, parentRunId);
  }

  /** Forgets the run (and, for a root run, the tool call IDs its models used). Never throws. */
  override handleChainEnd(_outputs: unknown, runId: string): void {
    this.#parents.delete(runId);
    this.#calledNames.delete(runId);
  }

  /** As {@link handleChainEnd}. Never throws. */
  override handleChainError(_error: unknown, runId: string): void {
    this.handleChainEnd(undefined, runId);
  }

  /**
   * Remembers the tool names the model asked for, by tool call ID, within the root run: another
   * run's model cannot name this run's calls. Never throws.
   */
  override handleLLMEnd(output: LLMResult, _runId: string, parentRunId?: string): void {
    // A model outside any chain starts no tool: nothing to remember.
    if (parentRunId === undefined) return;
    try {
      const root = this.#rootOf(parentRunId);
      const calledNames = this.#calledNames.get(root) ?? new Map<string, string[]>();
      for (const generations of output.generations) {
        for (const generation of generations) {
          const calls = (generation as { message?: { tool_calls?: unknown } }).message?.tool_calls;
          if (!Array.isArray(calls)) continue;
          for (const call of calls as Array<{ id?: unknown; name?: unknown }>) {
            if (typeof call.id !== 'string' || typeof call.name !== 'string') continue;
            const names = calledNames.get(call.id) ?? [];
            remember(calledNames, call.id, names.includes(call.name) ? names : [...names, call.name]);
          }
        }
      }
      remember(this.#calledNames, root, calledNames);
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
    parentRunId?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    runName?: string,
    toolCallId?: string,
  ): Promise<void> {
    const calledNames = this.#takeCalledNames(parentRunId, toolCallId);
    const action = resolveToolName({ serialized: tool, runName, metadata, toolCallId, calledNames });
    // A span from here to the tool's end, in the caller's active trace; the gate's spans are its
    // children. A callback cannot make it the tool's own active context.
    const { name, attributes } = toolCallSpan({ action, toolCallId });
    const span = tracer.startSpan(name, { attributes });
    const params = toolParams(input);
    let decision: Awaited<ReturnType<typeof gateToolCall>>;
    try {
      decision = await context.with(trace.setSpan(context.active(), span), () =>
        gateToolCall(this.#options, { action, params, toolCallId, run: { metadata } }),
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
    remember(this.#decisions, runId, { decisionId: decision.decision_id, secrets: secretsOf(params) });
    remember(this.#spans, runId, span);
    // A tool may run an agent of its own: its calls belong to this run too.
    if (parentRunId !== undefined) remember(this.#parents, runId, parentRunId);
  }

  /**
   * Starts recording `succeeded` (or `failed` for an error ToolMessage); the tool's result does
   * not wait for it. Never throws.
   */
  override handleToolEnd(output: unknown, runId: string): void {
    this.#parents.delete(runId);
    this.#endSpan(runId);
    const taken = this.#take(runId);
    if (taken !== undefined) reportToolResult(this.#outcomes, taken.decisionId, output, taken.secrets);
  }

  /** Starts recording `failed` with the error's first words; the error does not wait for it. Never throws. */
  override handleToolError(error: unknown, runId: string): void {
    this.#parents.delete(runId);
    this.#endSpan(runId, error);
    const taken = this.#take(runId);
    if (taken !== undefined) this.#outcomes.failed(taken.decisionId, error, taken.secrets);
  }

  /** The names the model used for `toolCallId` in the run of `parentRunId`. */
  #takeCalledNames(parentRunId?: string, toolCallId?: string): string[] | undefined {
    if (parentRunId === undefined || toolCallId === undefined) return undefined;
    const calledNames = this.#calledNames.get(this.#rootOf(parentRunId));
    const names = calledNames?.get(toolCallId);
    // One name is this call's alone: a later model turn may use the ID again. An ID the model
    // gave two tools stays ambiguous for the rest of the run.
    if (names?.length === 1) calledNames?.delete(toolCallId);
    return names;
  }

  /** The outermost run under way above `runId` (bounded: the map is, too). */
  #rootOf(runId: string): string {
    let root = runId;
    for (let step = 0; step < MAX_TRACKED; step++) {
      const parent = this.#parents.get(root);
      if (parent === undefined) break;
      root = parent;
    }
    return root;
  }

  #endSpan(runId: string, error?: unknown): void {
    const span = this.#spans.get(runId);
    if (!span) return;
    this.#spans.delete(runId);
    if (error !== undefined) markSpanFailed(span, error);
    span.end();
  }

  #take(runId: string): { decisionId: string; secrets: ReadonlySet<string> } | undefined {
    const taken = this.#decisions.get(runId);
    this.#decisions.delete(runId);
    return taken;
  }
}
