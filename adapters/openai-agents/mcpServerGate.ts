/**
 * Gatehouse's guardrails on an MCP server. The SDK turns each tool a server lists into a function
 * tool carrying the server's `toolInputGuardrails` and `toolOutputGuardrails`, so these run for
 * every MCP tool call. A server may serve several agents, each gated with its own options: the
 * guardrails are put on it once, and each call goes to the gate of the agent that made it, under
 * the tool's name on the server (the SDK may publish it under another: `mcpToolName.ts`).
 */
import {
  defineToolInputGuardrail,
  defineToolOutputGuardrail,
  type MCPServer,
  ToolGuardrailFunctionOutputFactory,
} from '@openai/agents-core';
import { type AgentToolGate, GUARDRAIL_NAME } from './agentToolGate.js';
import { mcpToolName } from './mcpToolName.js';

/** Per gated server, the gate of each agent that uses it. */
const gatesByServer = new WeakMap<MCPServer, WeakMap<object, AgentToolGate>>();

/**
 * Gates `server`'s tools for `agent` with `gate`. The first call puts the guardrails on the server;
 * an agent the server was not gated for is refused every call to it (fail closed).
 */
export function gateMcpServer(server: MCPServer, agent: object, gate: AgentToolGate): void {
  let gates = gatesByServer.get(server);
  if (gates === undefined) {
    gates = new WeakMap();
    gatesByServer.set(server, gates);
    const gatesOfServer = gates;
    const inputGuardrail = defineToolInputGuardrail({
      name: GUARDRAIL_NAME,
      run: async ({ context, agent: caller, toolCall }) => {
        const gateOfCaller = gatesOfServer.get(caller);
        return gateOfCaller === undefined
          ? ToolGuardrailFunctionOutputFactory.rejectContent(
              `Gatehouse gates '${server.name}' for other agents; agent '${caller.name}' was not gated, so '${toolCall.name}' did not run.`,
            )
          : gateOfCaller.enforceMcpCall(context, toolCall, () => mcpToolName(server, caller, toolCall.name));
      },
    });
    const outputGuardrail = defineToolOutputGuardrail({
      name: GUARDRAIL_NAME,
      run: async ({ context, agent: caller, toolCall, output }) => {
        gatesOfServer.get(caller)?.reportOutcome(context, toolCall.callId, output);
        return ToolGuardrailFunctionOutputFactory.allow();
      },
    });
    // Last among the input guardrails: the app's own refuse a call before an approval is used up.
    // First among the output guardrails: the outcome is recorded whatever a later one does.
    server.toolInputGuardrails = [...(server.toolInputGuardrails ?? []), inputGuardrail];
    server.toolOutputGuardrails = [outputGuardrail, ...(server.toolOutputGuardrails ?? [])];
  }
  gates.set(agent, gate);
}
