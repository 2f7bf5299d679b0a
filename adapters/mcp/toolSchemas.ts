/**
 * The MCP tools' input and output schemas, derived from the contract in `src/schemas.ts`.
 * The only MCP-specific change: `session_id` becomes optional when the server has a default session.
 */
import { z } from 'zod';
import {
  ConflictSchema,
  DecisionSchema,
  EvaluateInputSchema,
  HistoryPageSchema,
  HistoryQuerySchema,
  RecordStateInputSchema,
  RecordStateResultSchema,
  ResolveConflictInputSchema,
  SessionIdSchema,
  StateItemSchema,
} from '../../src/index.js';

/** The `session_id` field as a tool sees it: a string when given, `undefined` when omitted. */
type SessionField = z.ZodType<string | undefined, string | undefined>;

/**
 * The contract's session ID, required, with a missing-field message that says why it is required
 * (the SDK rejects the call with it before the tool runs).
 */
const missingSession: z.core.$ZodErrorMap = (issue) =>
  issue.input === undefined ? 'session_id is required (this server has no default session)' : undefined;
const RequiredSessionIdSchema = SessionIdSchema.clone({ ...SessionIdSchema.def, error: missingSession });

/** The schemas of every tool. */
export type ToolSchemas = ReturnType<typeof buildToolSchemas>;

const built = new Map<boolean, ToolSchemas>();

/** Every tool schema for a server with or without a default session (built once per variant). */
export function toolSchemas(hasDefaultSession: boolean): ToolSchemas {
  let schemas = built.get(hasDefaultSession);
  if (!schemas) {
    schemas = buildToolSchemas(hasDefaultSession);
    built.set(hasDefaultSession, schemas);
  }
  return schemas;
}

function buildToolSchemas(hasDefaultSession: boolean) {
  const session: SessionField = hasDefaultSession ? SessionIdSchema.optional() : RequiredSessionIdSchema;
  return {
    recordStateInput: RecordStateInputSchema.extend({ session_id: session }),
    recordStateOutput: RecordStateResultSchema,
    evaluateGateInput: EvaluateInputSchema.extend({ session_id: session }),
    evaluateGateOutput: DecisionSchema,
    readHistoryInput: HistoryQuerySchema,
    readHistoryOutput: HistoryPageSchema,
    listStateInput: z.strictObject({ session_id: session }),
    listStateOutput: z.object({
      session_id: z.string(),
      items: z.array(StateItemSchema),
      conflicts: z.array(ConflictSchema),
    }),
    resolveConflictInput: z.strictObject({
      conflict_id: z.string().min(1, 'conflict_id must not be empty').max(64),
      ...ResolveConflictInputSchema.shape,
    }),
    resolveConflictOutput: ConflictSchema,
  };
}
