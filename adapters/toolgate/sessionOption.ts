/**
 * The session a framework face evaluates calls in: a fixed `sessionId`, or a `session` function of
 * what the framework hands the hook (its run context). None at all is an error: an ungated call
 * must not run.
 */
import { GatehouseError } from '../../src/index.js';

/** The two ways to name the session; `session` wins when both are given. */
export interface SessionOption<CTX> {
  /** The session every call is evaluated in. */
  sessionId?: string;
  /** The session of one call, read from what the framework hands the hook. */
  session?: (ctx: CTX) => string | undefined;
}

/**
 * Checks, when a face is built, that it can find a session.
 * @throws {GatehouseError} `invalid_request` with neither `sessionId` nor `session`
 */
export function checkSessionOption(option: SessionOption<never>, face: string): void {
  if (
    option.session === undefined &&
    (typeof option.sessionId !== 'string' || option.sessionId.trim() === '')
  ) {
    throw new GatehouseError(
      'invalid_request',
      `${face} needs the session its calls belong to: pass sessionId, or session(ctx) to read it from the run.`,
    );
  }
}

/**
 * The session of one call.
 * @throws {GatehouseError} `invalid_request` when `session` finds none
 */
export function sessionOf<CTX>(option: SessionOption<CTX>, ctx: CTX, action: string): string {
  const found = option.session ? option.session(ctx) : option.sessionId;
  if (typeof found === 'string' && found.trim() !== '') return found;
  throw new GatehouseError(
    'invalid_request',
    `Gatehouse cannot gate '${action}': session() returned no session for this run.`,
  );
}
