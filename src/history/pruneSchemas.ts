/**
 * Inputs and answers of checkpoints and pruning (pruneOperations.ts), parsed at the edge.
 */
import { z } from 'zod';
import { retentionSchema } from '../gate/policySchema.js';

/** How long pruned history must be kept at least, unless the floor is lowered explicitly. */
export const PRUNE_FLOOR_DAYS = 183;

/** A checkpoint as it is stored, written to a file and answered. */
export const CheckpointSchema = z.object({
  tenant_id: z.string(),
  seq: z.number().int(),
  hash: z.string(),
  event_count: z.number().int(),
  created_at: z.string(),
  key_id: z.string(),
  signature: z.string(),
});

/** Prune a tenant's chain through a seq, behind a new signed checkpoint. */
export const PruneInputSchema = z.strictObject({
  /** The last event pruned: the checkpoint names it. */
  through_seq: z.number().int().positive(),
  /**
   * Prune events younger than the floor ({@link PRUNE_FLOOR_DAYS} days); recorded in the
   * `retention.pruned` event. @default false
   */
  allow_below_floor: z.boolean().optional(),
  /** Prune although a legal hold covers the range; recorded as `legal_hold.overridden`. @default false */
  override_hold: z.boolean().optional(),
  /** A ticket ID recorded in the event (not personal data). */
  reference: z
    .string()
    .regex(
      /^[A-Za-z0-9._:#/-]{1,128}$/,
      'must be 1-128 letters, digits or ._:#/- (a ticket ID, not personal data)',
    )
    .optional(),
});
export type PruneInput = z.input<typeof PruneInputSchema>;

/** What a prune did. */
export const PruneReportSchema = z.object({
  checkpoint: CheckpointSchema,
  from_seq: z.number().int(),
  through_seq: z.number().int(),
  events: z.number().int(),
  below_floor: z.boolean(),
  /** The `retention.pruned` event. */
  event: z.object({ event_id: z.string(), seq: z.number().int() }),
});
export type PruneReport = z.infer<typeof PruneReportSchema>;

/**
 * `PUT /v1/retention`: the tenant's retention, as a policy's `retention:` writes it (`90d`); it
 * takes the place of the policy's until replaced. A `history_after` below the floor needs
 * `allow_below_floor: true`.
 */
export const RetentionInputSchema = retentionSchema;
export type RetentionInput = z.input<typeof RetentionInputSchema>;

/** `GET /v1/retention`: the retention in force and where it comes from. */
export const RetentionViewSchema = z.object({
  /** Days after which values are erased, or null. */
  values_after_days: z.number().int().nullable(),
  /** Days after which history is pruned, or null. */
  history_after_days: z.number().int().nullable(),
  allow_below_floor: z.boolean(),
  /** `api` (set with PUT), `policy` (the policy's `retention:`) or `none`. */
  source: z.enum(['api', 'policy', 'none']),
  updated_at: z.string().nullable(),
  updated_by: z.string().nullable(),
});
export type RetentionView = z.infer<typeof RetentionViewSchema>;
