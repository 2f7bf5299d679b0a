/**
 * What every tool module is given by the server it is registered on: the core, the caller, the
 * default session. Its own file so tool modules and the server share it without an import circle.
 */
import type { Logger } from 'pino';
import {
  type CallContext,
  type CompiledPolicy,
  type Gatehouse,
  GatehouseError,
  type Scope,
} from '../../../src/index.js';

/** What tool descriptions tell the model of a policy: its sources with their trust, its types. */
export type DescribedPolicy = Pick<CompiledPolicy, 'sources' | 'types'>;

/** Called with each running tool call, so a transport can let them finish before closing. */
export type CallTracker = (call: Promise<unknown>) => void;

/** The server's view of one client, shared by its tools. */
export interface ToolEnvironment {
  /** The core the tools call. */
  gatehouse: Gatehouse;
  /** The tenant's policy the descriptions are written from (its sources, trust levels, types). */
  policy: DescribedPolicy;
  /** Tenant and source cap of every core call (`allowedSources` always set). */
  context: CallContext & { allowedSources: readonly string[] };
  /** Scopes the client holds; `undefined`: every scope (local use). */
  scopes: readonly Scope[] | undefined;
  /** Session used when a call gives no `session_id`. */
  defaultSessionId: string | undefined;
  /** Receives unexpected tool failures. */
  logger: Logger | undefined;
  /** Sees each running tool call. */
  onToolCall: CallTracker | undefined;
  /**
   * Checks the caller's credential again (`unauthorized` once its key is revoked or its token
   * expired): a tool that waits calls it before it acts, so a caller revoked meanwhile gets
   * nothing done. `undefined`: nothing to check (stdio, in-memory).
   */
  checkCaller: (() => Promise<void>) | undefined;
}

/**
 * The session a call works on: the one given, else the server's default.
 * @throws {GatehouseError} `invalid_request` when there is neither
 */
export function sessionOf(env: ToolEnvironment, given: string | undefined): string {
  const id = given ?? env.defaultSessionId;
  if (id === undefined) {
    throw new GatehouseError(
      'invalid_request',
      'session_id is required: this server has no default session.',
      {
        errors: [{ path: 'session_id', message: 'is required' }],
      },
    );
  }
  return id;
}

/** The `session_id` line of a tool description that needs a session. */
export function sessionHelp(env: ToolEnvironment): string {
  return env.defaultSessionId === undefined
    ? 'session_id: the conversation or task the item belongs to (required).'
    : `session_id: the conversation or task (optional; default "${env.defaultSessionId}").`;
}
