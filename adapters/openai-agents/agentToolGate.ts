/**
 * The gate of one `gateTools` call in OpenAI Agents: what each function tool's `needsApproval`,
 * input guardrail and output guardrail share, and the decisions behind an MCP server's guardrails
 * (`mcpServerGate.ts`).
 *
 * The runner calls, for one tool call: `needsApproval` (with the parsed input), then — unless a
 * person is asked first — the input guardrails (with the model's JSON), the tool, the output
 * guardrails. After `state.approve(item)` it skips `needsApproval` (or, on a restored state, calls
 * it and ignores its answer) and runs the guardrails and the tool. So `needsApproval` decides and
 * raises the interruption, and the input guardrail enforces: it refuses a Block, and refuses a
 * call approved in the run unless Gatehouse itself released it.
 */
import {
  defineToolInputGuardrail,
  defineToolOutputGuardrail,
  type FunctionTool,
  type RunContext,
  type ToolGuardrailFunctionOutput,
  ToolGuardrailFunctionOutputFactory,
  type ToolOutputGuardrailDefinition,
} from '@openai/agents-core';
import { getToolInvocationApproval } from '@openai/agents-core/utils/internal';
import type { Decision } from '../../src/index.js';
import {
  CallMemory,
  callKey,
  decideToolCall,
  isHeld,
  jsonParams,
  notReleasedReason,
  OutcomeReports,
  reportError,
  type SessionOption,
  sessionOf,
  type ToolGateOptions,
  uncheckedReason,
} from '../toolgate/index.js';
import { argumentsToolRunsWith, type ParsingTool } from './toolArguments.js';

/** Options for `gateTools`: the shared gate options and where the session is. */
export interface GateAgentToolsOptions<TContext = unknown>
  extends ToolGateOptions,
    SessionOption<RunContext<TContext>> {}

/** The name of Gatehouse's guardrails (in the run's guardrail results and traces). */
export const GUARDRAIL_NAME = 'gatehouse';

/**
 * What the SDK hands the model when a tool throws and its `errorFunction` is the default one: the
 * only sign, after the fact, that the tool failed (the error itself never leaves the tool).
 */
const DEFAULT_TOOL_ERROR_TEXT = 'An error occurred while running the tool. Please try again.';

/** What `needsApproval` decided for a call, for the input guardrail of the same call (under its `callKey`). */
interface Asked {
  decision?: Decision;
  error?: unknown;
  /** `needsApproval` answered true: the run pauses for a person before the tool. */
  interrupting: boolean;
  /**
   * It was asked after the call was approved in the run (a restored state asks again and ignores
   * the answer): its decision is this pass's, and may have used Gatehouse's release up already.
   */
  afterApproval?: boolean;
}

type AnyContext = RunContext<unknown>;
type Verdict = Promise<ToolGuardrailFunctionOutput>;
type NeedsApproval = (runContext: AnyContext, input: unknown, callId?: string) => Promise<boolean>;

/** Where {@link AgentToolGate} keeps the decision of a call that is running. */
function runningKey(sessionId: string, callId: string): string {
  return `${sessionId}\u0000${callId}`;
}

/** Tools this module made: gating one twice would double every evaluation. */
const gatedTools = new WeakSet<object>();

/** True for a tool that `gateTools` returned. */
export function isGatedTool(tool: object): boolean {
  return gatedTools.has(tool);
}

/** The shared state of one `gateTools` call. */
export class AgentToolGate {
  readonly #options: GateAgentToolsOptions<never>;
  readonly outcomes: OutcomeReports;
  readonly #asked = new CallMemory<Asked>();
  // The decision that let each call through, for the outcome report after it ran: under the run's
  // session too, as two runs of one gate may get the same call ID from their models.
  readonly #running = new CallMemory<string>();
  readonly #outcomeGuardrail: ToolOutputGuardrailDefinition<unknown>;

  constructor(options: GateAgentToolsOptions<never>) {
    this.#options = options;
    this.outcomes = new OutcomeReports(options);
    this.#outcomeGuardrail = defineToolOutputGuardrail({
      name: GUARDRAIL_NAME,
      run: async ({ context, toolCall, output }) => {
        this.reportOutcome(context, toolCall.callId, output);
        return ToolGuardrailFunctionOutputFactory.allow();
      },
    });
  }

  /** A copy of `tool` whose `needsApproval` and guardrails ask Gatehouse; `invoke` is left as it is. */
  gateFunctionTool<T extends FunctionTool<never, never, unknown>>(tool: T): T {
    const action = tool.name;
    const own = tool.needsApproval as unknown as NeedsApproval;
    // A copy with every property (symbols, non-enumerables) of the original; the same `invoke`
    // keeps the tool's parser registered for the runner.
    const gated = Object.create(
      Object.getPrototypeOf(tool) as object | null,
      Object.getOwnPropertyDescriptors(tool),
    ) as T;
    const needsApproval: NeedsApproval = (runContext, input, callId) =>
      this.#needsApproval(action, own, runContext, input, callId);
    const inputGuardrail = defineToolInputGuardrail<unknown>({
      name: GUARDRAIL_NAME,
      run: ({ context, agent, toolCall }) =>
        this.#enforce(
          action,
          context,
          toolCall.callId,
          () => argumentsToolRunsWith(gated as ParsingTool, toolCall.arguments),
          {
            // Asked the way the runner asks: a tool in a namespace is approved under its namespaced
            // key, which a lookup by its bare name misses (and then took an approval for "not yet").
            approvedInRun: () => getToolInvocationApproval(context, agent, gated, toolCall) === true,
          },
        ),
    });
    Object.assign(gated, {
      needsApproval,
      // Last: a guardrail of the app that refuses the call does so before an approval is used up.
      inputGuardrails: [...(tool.inputGuardrails ?? []), inputGuardrail],
      // First: the outcome is recorded whatever a later output guardrail does with the output.
      outputGuardrails: [this.#outcomeGuardrail, ...(tool.outputGuardrails ?? [])],
    });
    gatedTools.add(gated);
    return gated;
  }

  /**
   * Decides a call of an MCP server's tool (from its input guardrail), under the tool's name on its
   * server (`toolName`), not the one the model called: the SDK may have published it under another
   * (`mcp_bank__transfer_money`). A name that cannot be told is refused. An MCP tool gets the model's
   * JSON as it is: no schema of ours parses it. Local MCP tools have no approval hook in the SDK, so
   * a hold is refused with its reason (it names the approval); once a person approves it in
   * Gatehouse, the same call goes through.
   */
  async enforceMcpCall(
    context: AnyContext,
    toolCall: { name: string; callId: string; arguments: string },
    toolName: () => Promise<string>,
  ): Verdict {
    let action: string;
    try {
      action = await toolName();
    } catch (error) {
      reportError(this.#options.onError, error, {
        stage: 'evaluate',
        action: toolCall.name,
        toolCallId: toolCall.callId,
      });
      return ToolGuardrailFunctionOutputFactory.rejectContent(uncheckedReason(toolCall.name, error));
    }
    // No needsApproval has announced a hold: this evaluation tells onApprovalRequest.
    return this.#enforce(
      action,
      context,
      toolCall.callId,
      () => jsonParams(toolCall.arguments === '' ? {} : JSON.parse(toolCall.arguments)),
      {
        announce: true,
        approvedInRun: () => context.isToolApproved({ toolName: action, callId: toolCall.callId }) === true,
      },
    );
  }

  async #needsApproval(
    action: string,
    own: NeedsApproval,
    runContext: AnyContext,
    input: unknown,
    callId: string | undefined,
  ): Promise<boolean> {
    // Approved in the run already (a restored state asks again, and ignores the answer): the
    // request exists, so it is not announced twice.
    const approvedInRun =
      callId !== undefined && runContext.isToolApproved({ toolName: action, callId }) === true;
    let key: string | undefined;
    const remember = (asked: Asked) => {
      if (callId !== undefined && key !== undefined) this.#asked.set(key, asked);
    };
    let decision: Decision;
    try {
      const call = {
        sessionId: sessionOf(this.#options, runContext as never, action),
        action,
        params: jsonParams(input),
        toolCallId: callId,
      };
      key = callKey(call);
      decision = await decideToolCall(
        approvedInRun ? { backend: this.#options.backend, onWarn: this.#options.onWarn } : this.#options,
        call,
      );
    } catch (error) {
      // The input guardrail refuses it with the reason: a person would have nothing to approve.
      remember({ error, interrupting: false });
      return false;
    }
    if (isHeld(decision)) {
      remember({ decision, interrupting: true });
      return true;
    }
    if (decision.verdict === 'Block') {
      remember({ decision, interrupting: false });
      return false;
    }
    // Gatehouse allows it; a tool that asks for a person of its own still does.
    const interrupting = await own(runContext, input, callId);
    remember({ decision, interrupting, afterApproval: approvedInRun });
    return interrupting;
  }

  /** The input guardrail: allows a call only on an Allow or Warn that Gatehouse gave for it. */
  async #enforce(
    action: string,
    context: AnyContext,
    callId: string,
    params: () => Record<string, unknown>,
    how: { announce?: boolean; approvedInRun: () => boolean },
  ): Verdict {
    const { announce = false } = how;
    let approvedInRun = false;
    let decision: Decision;
    let sessionId: string;
    try {
      approvedInRun = how.approvedInRun();
      sessionId = sessionOf(this.#options, context as never, action);
      const call = {
        sessionId,
        action,
        params: params(),
        toolCallId: callId,
      };
      // What needsApproval learned about exactly this call: same ID, session, tool and arguments.
      const asked = this.#asked.take(callKey(call));
      if (asked !== undefined && (!asked.interrupting || (asked.afterApproval && approvedInRun))) {
        // needsApproval has just decided this call, and the runner goes straight on to the tool
        // (deciding again would find the release it has just used, and refuse the call).
        if (asked.error !== undefined) throw asked.error;
        decision = asked.decision!;
      } else if (asked?.interrupting && !approvedInRun) {
        // Guardrails before the approval (toolExecution.preApprovalInputGuardrails): the run
        // pauses for a person next, and the tool cannot run before this guardrail runs again.
        return ToolGuardrailFunctionOutputFactory.allow();
      } else {
        // After a person approved in the run (or a call needsApproval did not see): only
        // Gatehouse's own release lets it through, and this evaluation uses it up.
        decision = await decideToolCall(
          announce ? this.#options : { backend: this.#options.backend, onWarn: this.#options.onWarn },
          call,
        );
      }
    } catch (error) {
      reportError(this.#options.onError, error, { stage: 'evaluate', action, toolCallId: callId });
      return ToolGuardrailFunctionOutputFactory.rejectContent(uncheckedReason(action, error));
    }
    switch (decision.verdict) {
      case 'Allow':
      case 'Warn':
        this.#running.set(runningKey(sessionId, callId), decision.decision_id);
        return ToolGuardrailFunctionOutputFactory.allow({ decision_id: decision.decision_id });
      case 'Block':
        return ToolGuardrailFunctionOutputFactory.rejectContent(
          isHeld(decision) && approvedInRun ? notReleasedReason(decision) : decision.reason,
          { decision_id: decision.decision_id },
        );
      default: {
        const unknown: never = decision.verdict;
        return ToolGuardrailFunctionOutputFactory.rejectContent(`Unknown verdict ${String(unknown)}`);
      }
    }
  }

  /** Records the outcome of a call this gate let through (from an output guardrail). */
  reportOutcome(context: AnyContext, callId: string, output: unknown): void {
    let sessionId: string;
    try {
      sessionId = sessionOf(this.#options, context as never, 'outcome');
    } catch {
      return; // no session, so no call of this gate ran
    }
    const decisionId = this.#running.take(runningKey(sessionId, callId));
    if (decisionId === undefined) return;
    if (output === DEFAULT_TOOL_ERROR_TEXT) this.outcomes.failed(decisionId, output);
    else this.outcomes.succeeded(decisionId);
  }
}
