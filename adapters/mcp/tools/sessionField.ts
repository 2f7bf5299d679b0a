/**
 * The `session_id` field of the tool input schemas: the contract's session ID, optional when the
 * server has a default session, else required with a message that says why.
 */
import type { z } from 'zod';
import { SessionIdSchema } from '../../../src/index.js';

/** The `session_id` field as a tool sees it: a string when given, `undefined` when omitted. */
export type SessionField = z.ZodType<string | undefined, string | undefined>;

/** The SDK rejects a call without `session_id` with this message before the tool runs. */
const missingSession: z.core.$ZodErrorMap = (issue) =>
  issue.input === undefined ? 'session_id is required (this server has no default session)' : undefined;
const RequiredSessionIdSchema = SessionIdSchema.clone({ ...SessionIdSchema.def, error: missingSession });
const OptionalSessionIdSchema = SessionIdSchema.optional();

/** The `session_id` field for a server with or without a default session. */
export function sessionField(hasDefaultSession: boolean): SessionField {
  return hasDefaultSession ? OptionalSessionIdSchema : RequiredSessionIdSchema;
}
