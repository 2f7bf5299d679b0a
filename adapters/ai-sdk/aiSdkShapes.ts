/**
 * The parts of the AI SDK this face reads, written as the shapes they have in both majors (`ai`
 * 6 and 7). Importing the SDK's own types would tie the face's declarations to one major: a v6
 * app's `ai` has no `ToolApprovalStatus`, a v7 app's tools are not v6 tools, and a consumer
 * type-checking without `skipLibCheck` would see errors in our declarations. The tests pass these
 * shapes to each major's real `generateText`, so a change on the SDK's side fails there.
 */

/** A model message, as far as the gate reads it (`ModelMessage`). */
export interface ModelMessageLike {
  role: string;
  content: unknown;
}

/** What the AI SDK answers a tool call with, from a call-level `toolApproval` (v7 `ToolApprovalStatus`). */
export type ToolApprovalVerdict =
  | { type: 'not-applicable' }
  | { type: 'approved'; reason?: string }
  | { type: 'denied'; reason?: string }
  | { type: 'user-approval'; reason?: string };

/** What v7 hands a call-level `toolApproval` function (`GenericToolApprovalFunction`'s options). */
export interface ToolApprovalCall<RUNTIME_CONTEXT = unknown> {
  /** The call, its input parsed (and repaired) by the tool's schema: what `execute` will get. */
  toolCall: { toolCallId: string; toolName: string; input: unknown };
  /** The messages sent to the model; on a replayed approval, they end with the approval responses. */
  messages: ModelMessageLike[];
  runtimeContext: RUNTIME_CONTEXT;
  tools?: unknown;
  toolsContext?: unknown;
}

/** What v7 hands `onToolExecutionEnd` (`ToolExecutionEndEvent`), as far as the gate reads it. */
export interface ToolExecutionEndLike {
  toolCall: { toolCallId: string; toolName: string };
  toolOutput: { type: string; error?: unknown };
}

/**
 * What a tool's `execute` and `needsApproval` receive (`ToolExecutionOptions`): v6 names the
 * app's context `experimental_context`, v7 a tool's own context `context`.
 */
export interface ToolExecutionOptionsLike {
  toolCallId: string;
  messages: ModelMessageLike[];
  abortSignal?: AbortSignal | undefined;
  experimental_context?: unknown;
  context?: unknown;
}

/**
 * A tool as {@link gateTools} wraps it: anything with an `execute` (`tool()` of either major).
 * Its parameter types are `never` so that every tool's typed functions fit.
 */
export interface GateableTool {
  execute?: ((input: never, options: never) => unknown) | undefined;
  needsApproval?: boolean | ((input: never, options: never) => boolean | PromiseLike<boolean>) | undefined;
}
