/**
 * `gatehouse/ai-sdk`: gate every tool call of a Vercel AI SDK app, in-process or against a remote
 * Gatehouse. AI SDK 7: {@link gatehouseToolApproval}, a call-level `toolApproval`. AI SDK 6 (and 7):
 * {@link gateTools}, each tool's `needsApproval` and `execute` wrapped. A hold becomes the SDK's own
 * tool approval request; a replayed approval runs the tool only if Gatehouse released the call.
 */
export {
  ActionBlockedError,
  type ApprovalRequest,
  type GateBackend,
  type GateErrorContext,
  inProcessBackend,
  isActionBlockedError,
  type ToolGateOptions,
} from '../toolgate/index.js';
export type {
  GateableTool,
  ModelMessageLike,
  ToolApprovalCall,
  ToolApprovalVerdict,
  ToolExecutionEndLike,
  ToolExecutionOptionsLike,
} from './aiSdkShapes.js';
export { type GatedTools, type GateToolsOptions, gateTools, type ToolSessionContext } from './gateTools.js';
export {
  type GatehouseToolApproval,
  type GatehouseToolApprovalOptions,
  gatehouseToolApproval,
} from './toolApproval.js';
