/**
 * `gatehouse/openai-agents`: gate every tool call of an OpenAI Agents JS agent, in-process or
 * against a remote Gatehouse. `needsApproval` turns a hold into the SDK's own interruption; a tool
 * input guardrail refuses a Block and lets an approved call run only on Gatehouse's release.
 */
export {
  type ApprovalRequest,
  type GateBackend,
  type GateErrorContext,
  inProcessBackend,
  type ToolGateOptions,
} from '../toolgate/index.js';
export { type GateAgentToolsOptions, GUARDRAIL_NAME } from './agentToolGate.js';
export { type GatedAgent, type GatedAgentTools, gateTools } from './gateTools.js';
