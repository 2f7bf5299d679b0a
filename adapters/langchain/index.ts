/**
 * `gatehouse/langchain`: gate every tool call of a LangChain.js agent, in-process or against a
 * remote Gatehouse. Two faces over one {@link GateBackend}: a callback handler (any runnable;
 * throws on Block) and a `createAgent` middleware (answers a Block with an error ToolMessage).
 */
export {
  ActionBlockedError,
  type GateBackend,
  inProcessBackend,
  isActionBlockedError,
  isHeld,
} from '../toolgate/index.js';
export { GatehouseCallbackHandler, type GatehouseCallbackHandlerOptions } from './callbackHandler.js';
export {
  type BlockedToolContent,
  blockedToolMessage,
  type GatehouseMiddleware,
  type GatehouseMiddlewareOptions,
  gatehouseMiddleware,
} from './middleware.js';
export { createRecordStateTool, type RecordStateToolOptions } from './recordStateTool.js';
export type { ApprovalInterrupt, GateOptions } from './toolCallGate.js';
export { resolveToolName, type ToolStartFacts, toolParams } from './toolIdentity.js';
