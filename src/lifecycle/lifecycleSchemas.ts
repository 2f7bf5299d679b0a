/**
 * The contract of the policy lifecycle: revisions, activation, replay reports. Like
 * `schemas.ts`, every face validates with these and returns these shapes (snake_case).
 */
import { z } from 'zod';
import { queryNumber, SessionIdSchema, VerdictSchema } from '../schemas.js';

/** Largest policy text accepted by `PUT /v1/policy` and replay, in bytes of UTF-8. */
export const POLICY_TEXT_LIMIT = 48 * 1024;

const utf8 = new TextEncoder();
const PolicyTextSchema = z
  .string()
  .min(1, 'policy must not be empty')
  .refine((v) => utf8.encode(v).byteLength <= POLICY_TEXT_LIMIT, {
    message: `policy must be at most ${POLICY_TEXT_LIMIT} bytes`,
  })
  .describe('The policy file, as YAML text.');

/** A policy revision's ID: the SHA-256 (hex) of its validated document. */
export const RevisionIdSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'a revision is 64 lower-case hex digits')
  .describe('A policy revision: the SHA-256 (hex) of the validated policy document.');

/** A named rule of a policy. */
export const PolicyRuleInfoSchema = z.object({
  name: z.string(),
  verdict: z.enum(['Warn', 'Block']),
  mode: z.enum(['enforce', 'shadow']),
  scope: z.string().describe('`global`, or the action pattern of its entry.'),
});

/** A stored revision: `GET /v1/policy/revisions/{id}` (with its source). */
export const PolicyRevisionSchema = z.object({
  revision: z.string(),
  source: z.string().describe('The YAML text, as first activated.'),
  created_by: z.string().describe('Who first activated it: an API key ID, `file`, `builtin` or `cli`.'),
  created_at: z.string(),
  active: z.boolean().describe('Whether it is the active revision now.'),
});
export type PolicyRevision = z.infer<typeof PolicyRevisionSchema>;

/** A revision in a list (no source). */
export const PolicyRevisionSummarySchema = PolicyRevisionSchema.omit({ source: true });
export type PolicyRevisionSummary = z.infer<typeof PolicyRevisionSummarySchema>;

/** `GET /v1/policy/revisions`. */
export const PolicyRevisionListSchema = z.object({
  revisions: z.array(PolicyRevisionSummarySchema),
  next_cursor: z.string().nullable(),
});
export type PolicyRevisionList = z.infer<typeof PolicyRevisionListSchema>;

/** `GET /v1/policy/revisions` query. */
export const PolicyRevisionQuerySchema = z.strictObject({
  limit: queryNumber('limit', { min: 1, max: 100 }).default(20).describe('Page size, 1 to 100.'),
  cursor: z.string().max(200).optional().describe('`next_cursor` of the previous page.'),
});
export type PolicyRevisionQuery = z.input<typeof PolicyRevisionQuerySchema>;

/** The active policy of a tenant: `GET /v1/policy`, and the answer to `PUT /v1/policy`. */
export const ActivePolicySchema = z.object({
  revision: z.string(),
  source: z.string(),
  rules: z.array(PolicyRuleInfoSchema),
  activated_by: z
    .string()
    .nullable()
    .describe('An API key ID, `file`, `builtin` or `cli`; null while the instance policy is unrecorded.'),
  activated_at: z.string().nullable(),
  seq: z.number().int().nullable().describe('The seq of its `policy.activated` event.'),
});
export type ActivePolicy = z.infer<typeof ActivePolicySchema>;

/** `PUT /v1/policy`: the new policy. The revision it replaces goes in `If-Match`. */
export const PutPolicyInputSchema = z.strictObject({ policy: PolicyTextSchema });

/** The core's activation input. */
export interface ActivatePolicyInput {
  /** The policy's YAML text. */
  policy: string;
  /**
   * The revision the caller last read (HTTP `If-Match`): the activation happens only while it is
   * still the active one. Required, so that two owners cannot overwrite each other unknowingly.
   */
  expected_revision: string | undefined;
}

/** `POST /v1/policy/replay`. */
export const ReplayInputSchema = z
  .strictObject({
    policy: PolicyTextSchema.optional().describe('The candidate policy, as YAML (or give `revision`).'),
    revision: RevisionIdSchema.optional().describe('A stored revision as the candidate (or give `policy`).'),
    since: z.iso.datetime({ offset: true }).optional().describe('Only decisions evaluated at or after this.'),
    until: z.iso.datetime({ offset: true }).optional().describe('Only decisions evaluated before this.'),
    session_id: SessionIdSchema.optional().describe('Only this session.'),
    action: z.string().min(1).max(200).optional().describe('Only this action, or a glob (`payments.*`).'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .optional()
      .describe(
        'Replay at most this many decisions (HTTP: default and maximum 100,000); continue with `after_seq`.',
      ),
    after_seq: z.number().int().min(0).optional().describe('Continue after this seq (`next_after_seq`).'),
    examples: z.number().int().min(0).max(100).default(10).describe('Changed decisions to show, 0 to 100.'),
  })
  .refine((v) => (v.policy === undefined) !== (v.revision === undefined), {
    message: 'give exactly one of policy or revision',
    path: ['policy'],
  })
  .refine(
    (v) => v.since === undefined || v.until === undefined || Date.parse(v.since) <= Date.parse(v.until),
    {
      message: 'since must not be later than until',
      path: ['since'],
    },
  );
export type ReplayInput = z.input<typeof ReplayInputSchema>;

const ReplaySideSchema = z.object({
  verdict: VerdictSchema,
  reason: z.string(),
  rules: z.array(z.string()).describe('`rule:verdict` of each reason; shadow ones as `rule:verdict:shadow`.'),
});

/** One changed decision in a replay report. */
export const ReplayExampleSchema = z.object({
  decision_id: z.string(),
  seq: z.number().int(),
  session_id: z.string(),
  action: z.string(),
  evaluated_at: z.string(),
  before: ReplaySideSchema,
  after: ReplaySideSchema,
});
export type ReplayExample = z.infer<typeof ReplayExampleSchema>;

/** What a replay found: `POST /v1/policy/replay`, `gatehouse policy replay --json`. */
export const ReplayReportSchema = z.object({
  candidate: z.object({ revision: z.string() }),
  filters: z.object({
    since: z.string().nullable(),
    until: z.string().nullable(),
    session_id: z.string().nullable(),
    action: z.string().nullable(),
  }),
  decisions: z.number().int().describe('Decisions replayed.'),
  unchanged: z.number().int().describe('Same verdict and the same rules fired.'),
  changed: z.number().int().describe('A different verdict.'),
  rules_changed: z.number().int().describe('The same verdict, but other rules fired.'),
  pinned: z
    .number()
    .int()
    .describe(
      'Decisions that raced a write to their own session: the keys they read are replayed at the versions they recorded.',
    ),
  by_verdict: z.array(z.object({ from: VerdictSchema, to: VerdictSchema, count: z.number().int() })),
  rules: z
    .array(z.object({ rule: z.string(), before: z.number().int(), now: z.number().int() }))
    .describe('Per rule: decisions it fired in as recorded, and under the candidate (shadow included).'),
  recorded_revisions: z
    .array(z.object({ revision: z.string(), decisions: z.number().int() }))
    .describe('The revisions that made the replayed decisions.'),
  examples: z.array(ReplayExampleSchema),
  unreplayable: z
    .number()
    .int()
    .describe(
      'Decisions whose inputs, or a state value they read, were erased (docs/data-lifecycle.md, docs/replay.md): counted, not replayed.',
    ),
  unreplayable_reasons: z
    .object({
      inputs_erased: z.number().int().describe('Decisions whose params or context were erased.'),
      state_erased: z
        .number()
        .int()
        .describe('Decisions that read, or whose candidate reads, a state value erased since.'),
    })
    .describe('`unreplayable`, by why.'),
  from_seq: z.number().int().describe('Events after this seq were read.'),
  to_seq: z.number().int().describe('The last seq read.'),
  next_after_seq: z
    .number()
    .int()
    .nullable()
    .describe('Set when `limit` or the time budget stopped the replay: pass it as `after_seq` to continue.'),
  stopped_by: z
    .enum(['limit', 'time_budget'])
    .nullable()
    .describe(
      'Why the replay stopped before the end of the history: `limit`, or `time_budget` (one call runs at most 20 s); null when it reached the end.',
    ),
  event_id: z.string().nullable().describe('The `policy.replayed` event that records this replay.'),
});
export type ReplayReport = z.infer<typeof ReplayReportSchema>;
