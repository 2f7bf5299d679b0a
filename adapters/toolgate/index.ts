/**
 * What every agent-framework face shares (LangChain, the AI SDK, OpenAI Agents): the backend seam,
 * the decision before one tool call, the memory between a framework's hooks, and the outcome
 * reports after it. Framework-free: no face's dependencies are imported here.
 */
export { ActionBlockedError, isActionBlockedError } from './actionBlockedError.js';
export { CallMemory, callKey } from './callMemory.js';
export { type GateBackend, inProcessBackend } from './gateBackend.js';
export { jsonForm, jsonParams } from './jsonParams.js';
export {
  type GateErrorContext,
  type OutcomeReportOptions,
  OutcomeReports,
  secretsOf,
  shortDetail,
} from './outcomeReports.js';
export { checkSessionOption, type SessionOption, sessionOf } from './sessionOption.js';
export {
  type ApprovalRequest,
  approvalRequestOf,
  decideToolCall,
  type GatedToolCall,
  isHeld,
  notReleasedReason,
  reportError,
  type ToolGateOptions,
  uncheckedReason,
} from './toolCallDecision.js';
