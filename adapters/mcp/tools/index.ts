/**
 * The tools of the Gatehouse MCP server, in the order `tools/list` shows them. A new tool is one
 * module in this folder (see {@link defineTool}) added to this list.
 */
import type { GatehouseTool } from './defineTool.js';
import { evaluateGateTool } from './evaluateGate.js';
import { listStateTool } from './listState.js';
import { readHistoryTool } from './readHistory.js';
import { recordStateTool } from './recordState.js';
import { resolveConflictTool } from './resolveConflict.js';
import { waitForApprovalTool } from './waitForApproval.js';

export { defineTool, type GatehouseTool, type ToolAnswer, type ToolSpec } from './defineTool.js';
export type { CallTracker, ToolEnvironment } from './toolEnvironment.js';

/** Every tool the server registers. */
export const GATEHOUSE_TOOLS: readonly GatehouseTool[] = [
  recordStateTool,
  evaluateGateTool,
  readHistoryTool,
  listStateTool,
  resolveConflictTool,
  waitForApprovalTool,
];
