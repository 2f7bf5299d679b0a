/**
 * Legal holds: while one is in force, what it covers (a tenant, or one session) is neither
 * erased nor pruned, unless the request overrides it explicitly, which is recorded as an event.
 */
import { z } from 'zod';
import { SessionIdSchema } from '../schemas.js';

const ReferenceSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9._:#/-]{1,128}$/,
    'must be 1-128 letters, digits or ._:#/- (a case ID, not personal data)',
  );

/** `POST /v1/legal-holds`: place a hold on a session, or (without `session_id`) on the tenant. */
export const PlaceHoldInputSchema = z.strictObject({
  session_id: SessionIdSchema.optional(),
  /** The matter the hold is for (a case ID, kept in the chain: not personal data). */
  reference: ReferenceSchema,
});
export type PlaceHoldInput = z.input<typeof PlaceHoldInputSchema>;

/** A legal hold in force. */
export const LegalHoldSchema = z.object({
  hold_id: z.string(),
  /** The held session, or null: the whole tenant. */
  session_id: z.string().nullable(),
  reference: z.string(),
  placed_by: z.string(),
  placed_at: z.string(),
});
export type LegalHold = z.infer<typeof LegalHoldSchema>;

/** `GET /v1/legal-holds`. */
export const LegalHoldListSchema = z.object({ holds: z.array(LegalHoldSchema) });
export type LegalHoldList = z.infer<typeof LegalHoldListSchema>;
