/**
 * How the LangChain faces find the session a tool call belongs to, and the error when there is
 * none (fail closed: an ungated call must not run).
 */
import { GatehouseError } from '../../src/index.js';

/** The first non-empty string among `candidates`. */
export function firstString(...candidates: unknown[]): string | undefined {
  for (const candidate of candidates) {
    if (typeof candidate === 'string' && candidate.trim() !== '') return candidate;
  }
  return undefined;
}

/**
 * What a face can see of the run. The middleware and the record-state tool get the run's
 * `configurable`; a callback handler gets only the callback `metadata`: LangGraph copies
 * `configurable.thread_id` into it, while @langchain/core passes `configurable` to LangSmith
 * tracers alone, so a bare `tool.invoke` must put the session in `metadata` itself.
 */
export interface RunSessionSources {
  /** A session fixed by whoever built the face; it wins. */
  pinned?: string | undefined;
  configurable?: Record<string, unknown> | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/**
 * The session of a run: `pinned`, else `configurable.thread_id` / `session_id`, else
 * `metadata.thread_id` / `session_id`.
 * @throws {GatehouseError} `invalid_request` when there is none, saying where to put it
 */
export function requireSession(action: string, sources: RunSessionSources): string {
  const { pinned, configurable, metadata } = sources;
  const sessionId = firstString(
    pinned,
    configurable?.['thread_id'],
    configurable?.['session_id'],
    metadata?.['thread_id'],
    metadata?.['session_id'],
  );
  if (sessionId !== undefined) return sessionId;
  // Point at the place this face can read: advising configurable to a callback handler, which
  // never sees it, sent users round in circles (issue 13.5).
  const how =
    'configurable' in sources
      ? 'or run the agent with { configurable: { thread_id } }.'
      : 'or run with { metadata: { thread_id } }. LangGraph agents and graphs copy configurable.thread_id ' +
        'into the metadata; a bare tool.invoke or a RunnableSequence does not, and LangChain hands a ' +
        'callback handler the metadata only.';
  throw new GatehouseError(
    'invalid_request',
    `Gatehouse cannot gate '${action}': no session. Pass sessionId, ${how}`,
  );
}
