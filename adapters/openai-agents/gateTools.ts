/**
 * `gateTools` for OpenAI Agents: an agent's function tools and MCP servers, or a list of tools,
 * gated by one {@link AgentToolGate}.
 */
import type { Agent, AgentOutputType, FunctionTool, Tool } from '@openai/agents-core';
import { GatehouseError } from '../../src/index.js';
import { checkSessionOption } from '../toolgate/index.js';
import { AgentToolGate, type GateAgentToolsOptions, isGatedTool } from './agentToolGate.js';
import { gateMcpServer } from './mcpServerGate.js';

/** The gated tools, and a way to wait for the outcome reports. */
export interface GatedAgentTools<TContext> {
  /** The gated tools (for an agent: its `tools`, replaced in place). */
  tools: Tool<TContext>[];
  /**
   * Resolves once the outcomes of the tools that have returned are recorded (or reported to
   * `onError`): before reading them from the history, or before the process exits.
   */
  flush(): Promise<void>;
}

/** An agent gated in place, and a way to wait for the outcome reports. */
export interface GatedAgent<TContext, TOutput extends AgentOutputType> extends GatedAgentTools<TContext> {
  /** The same agent object, its tools now gated. */
  agent: Agent<TContext, TOutput>;
}

/**
 * Gates every tool call of an OpenAI Agents agent (or of a list of tools), with the tool's name as
 * the action (an MCP tool's name on its server, not the one the SDK published it under) and the
 * arguments the tool runs with (the model's, parsed by the tool's schema) as `params`:
 * - each function tool's `needsApproval` asks Gatehouse: a hold pauses the run as a
 *   `RunToolApprovalItem` in `result.interruptions` (`onApprovalRequest` gets the Gatehouse approval
 *   with the same `tool_call_id`); otherwise the tool's own `needsApproval` still applies;
 * - a tool input guardrail (after the app's own) refuses a Block with its reason
 *   (`rejectContent`: the model reads it as the tool's output), and, after `state.approve(item)`,
 *   lets the call run only if Gatehouse has released exactly this call — approving in the run
 *   state alone, or `alwaysApprove`, runs nothing Gatehouse holds;
 * - a tool output guardrail records the outcome (`failed` when the SDK's default error text
 *   stands in for a tool that threw; a custom `errorFunction`'s text reads as `succeeded`).
 * For an agent, its `mcpServers` get the same input and output guardrails (local MCP tools have no
 * approval hook: a hold is refused with its reason, and runs once approved in Gatehouse), and
 * `agent.tools` is replaced in place, so handoffs to it and `RunState.fromString(agent, …)` find
 * the gated agent. Gate each agent of a handoff graph. Gatehouse unreachable or no session: the
 * guardrail refuses the call (fail closed; `onError` gets the error).
 * @example
 * const { agent: gated } = gateTools(agent, { backend: gatehouse, session: (ctx) => ctx.context.chatId });
 * const result = await run(gated, 'pay 9000 to acct-9', { context: { chatId: 'chat-42' } });
 * @throws {GatehouseError} `invalid_request` with neither `sessionId` nor `session`, for a tool that
 * runs outside this process (a hosted tool) or that is not a function tool, and for a tool gated already
 */
export function gateTools<TContext, TOutput extends AgentOutputType>(
  agent: Agent<TContext, TOutput>,
  options: GateAgentToolsOptions<TContext>,
): GatedAgent<TContext, TOutput>;
export function gateTools<TContext>(
  tools: Tool<TContext>[],
  options: GateAgentToolsOptions<TContext>,
): GatedAgentTools<TContext>;
export function gateTools(
  // biome-ignore lint/suspicious/noExplicitAny: the implementation behind the overloads, any context
  target: Agent<any, AgentOutputType> | Tool<never>[],
  options: GateAgentToolsOptions<never>,
  // biome-ignore lint/suspicious/noExplicitAny: as above
): GatedAgent<any, AgentOutputType> | GatedAgentTools<never> {
  checkSessionOption(options, 'gateTools');
  const gate = new AgentToolGate(options);
  const flush = () => gate.outcomes.flush();
  // Told apart by shape, not `instanceof`: an app's agents-core may be another copy than ours.
  if (Array.isArray(target)) return { tools: gateFunctionTools(target, gate, 'the list'), flush };
  const tools = gateFunctionTools(target.tools, gate, `agent '${target.name}'`);
  for (const server of target.mcpServers ?? []) gateMcpServer(server, target, gate);
  target.tools = tools;
  return { agent: target, tools, flush };
}

function gateFunctionTools<TContext>(
  tools: Tool<TContext>[],
  gate: AgentToolGate,
  owner: string,
): Tool<TContext>[] {
  const refused = tools
    .filter((tool) => tool.type !== 'function' || isGatedTool(tool))
    .map((tool) => `'${tool.name}' (${isGatedTool(tool) ? 'gated already' : tool.type})`);
  if (refused.length > 0) {
    throw new GatehouseError(
      'invalid_request',
      `gateTools gates function tools; ${owner} also has ${refused.join(', ')}. ` +
        'A hosted tool runs at the provider and shell, computer and apply_patch tools have no guardrails, ' +
        'so Gatehouse cannot hold them back: gate the function tools with gateTools(tools) and add the others yourself.',
    );
  }
  return tools.map(
    (tool) => gate.gateFunctionTool(tool as FunctionTool<never, never, unknown>) as Tool<TContext>,
  );
}
