/**
 * The contract. Every face (HTTP, MCP, LangChain, in-process) validates input with these zod
 * schemas and returns these shapes; types come from `z.infer`, OpenAPI and MCP tool schemas are
 * generated from them. Names are snake_case, as on the wire.
 */
import { z } from 'zod';

/** Size limits shared by every face. */
export const LIMITS = {
  /** Longest session ID, in characters. */
  sessionId: 128,
  /** Longest raw key, in characters. */
  key: 128,
  /** Largest state value, in bytes of UTF-8. */
  valueBytes: 16 * 1024,
  /** Largest `metadata`, `params` or `context` object, in bytes of JSON. */
  objectBytes: 16 * 1024,
  /** Deepest nesting of a `metadata`, `params` or `context` object (`{}` is 1). */
  objectDepth: 32,
  /** Longest action name. */
  action: 200,
  /** Largest history page. */
  historyLimit: 500,
  /** Default history page. */
  historyDefaultLimit: 50,
} as const;

const utf8 = new TextEncoder();

/** Whether `text` takes at most `limit` bytes as UTF-8; without encoding it when it surely fits (≤ 3 bytes per UTF-16 unit). */
function fitsUtf8(text: string, limit: number): boolean {
  return text.length * 3 <= limit || utf8.encode(text).byteLength <= limit;
}

/** What {@link jsonProblem} found. */
type JsonProblem = { kind: 'depth' } | { kind: 'number' } | { kind: 'value'; found: string };

/**
 * What makes `value` unfit for the history: nesting deeper than `depth` (`{}` is 1), a number
 * JSON cannot carry (`1e400` parses to Infinity, which the canonical hash refuses), or, from an
 * in-process caller, a value that is not JSON (a BigInt, a function, a Date, a Map): the policy
 * would judge it and the history record something else. `undefined` is let through, as JSON
 * leaves it out. Stops descending past `depth`, so its own recursion is bounded whatever the input.
 */
function jsonProblem(value: unknown, depth: number): JsonProblem | undefined {
  switch (typeof value) {
    case 'number':
      return Number.isFinite(value) ? undefined : { kind: 'number' };
    case 'string':
    case 'boolean':
    case 'undefined':
      return undefined;
    case 'object':
      break;
    default:
      return { kind: 'value', found: `a ${typeof value}` };
  }
  if (value === null) return undefined;
  if (!Array.isArray(value)) {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
      return {
        kind: 'value',
        found: typeof name === 'string' && name !== '' ? `a ${name}` : 'an object of a class',
      };
    }
  }
  if (depth <= 0) return { kind: 'depth' };
  for (const child of Object.values(value)) {
    const problem = jsonProblem(child, depth - 1);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * A JSON object the caller sends (`params`, `context`, `metadata`), kept as sent. Not a zod
 * record: a record rebuilds the object and silently skips a `__proto__` key, so the policy and an
 * approval's digest would not see what the caller's tool receives (`{"amount": 5, "__proto__":
 * {…}}` matched an approval given for `{"amount": 5}`). Prototype keys are data here, at every
 * depth. Typed, and described in JSON Schema (OpenAPI, MCP tool inputs), as the record it checks.
 */
export function jsonObject(what: string): z.ZodType<Record<string, unknown>, Record<string, unknown>> {
  const schema = z
    .unknown()
    .superRefine((o, ctx) => {
      if (o === null || typeof o !== 'object' || Array.isArray(o)) {
        ctx.addIssue({ code: 'invalid_type', expected: 'object', input: o });
        return;
      }
      // Before JSON.stringify: it (and every later walk of the object) recurses, and a 64 KiB body
      // of `[[[[…]]]]` would overflow the stack.
      const problem = jsonProblem(o, LIMITS.objectDepth);
      if (problem?.kind === 'depth') {
        ctx.addIssue({
          code: 'custom',
          message: `${what} must nest at most ${LIMITS.objectDepth} levels deep`,
        });
      } else if (problem?.kind === 'number') {
        ctx.addIssue({
          code: 'custom',
          message: `${what} must hold only finite numbers (1e400 is too large)`,
        });
      } else if (problem?.kind === 'value') {
        ctx.addIssue({
          code: 'custom',
          message: `${what} must hold only JSON values (strings, numbers, booleans, null, arrays, plain objects), not ${problem.found}`,
        });
      } else if (!fitsUtf8(JSON.stringify(o), LIMITS.objectBytes)) {
        ctx.addIssue({
          code: 'custom',
          message: `${what} must be at most ${LIMITS.objectBytes} bytes of JSON`,
        });
      }
    })
    .meta({ type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} });
  return schema as unknown as z.ZodType<Record<string, unknown>, Record<string, unknown>>;
}

// A lone surrogate cannot be stored as UTF-8 (SQLite keeps mangled bytes, PostgreSQL a U+FFFD),
// and PostgreSQL text refuses U+0000: both would change or lose a value after it was accepted.
const LONE_SURROGATE = /\p{Cs}/u;

/** A string stored as text: well-formed Unicode without U+0000. */
function storableText(what: string) {
  return z.string().refine((v) => !v.includes('\u0000') && !LONE_SURROGATE.test(v), {
    message: `${what} must be well-formed Unicode without NUL (U+0000) or lone surrogates`,
  });
}

/**
 * An identifier as Gatehouse makes them (`dec_…`, `whk_…`): printable ASCII. Used for filters
 * that reach the database; a path ID that fails it simply names nothing (see `isPlausibleId`).
 */
export const IdSchema = z
  .string()
  .max(128, 'an ID is at most 128 characters')
  .regex(/^[\x21-\x7e]+$/, 'an ID is printable ASCII without spaces');

/** True when `id` could be an ID Gatehouse made; anything else cannot name a stored object. */
export function isPlausibleId(id: string): boolean {
  return IdSchema.safeParse(id).success;
}

/** A session ID: 1–128 printable characters. */
export const SessionIdSchema = z
  .string()
  .trim()
  .min(1, 'session_id must not be empty')
  .max(LIMITS.sessionId, `session_id must be at most ${LIMITS.sessionId} characters`)
  .regex(/^[\x21-\x7e]+$/, 'session_id must be printable ASCII without spaces');

/** The verdicts of the gate, strictest last. */
export const VerdictSchema = z.enum(['Allow', 'Warn', 'Block']);
export type Verdict = z.infer<typeof VerdictSchema>;

/** `POST /v1/state/items`: record one state item. */
export const RecordStateInputSchema = z.strictObject({
  session_id: SessionIdSchema,
  key: z.string().max(LIMITS.key * 2, `key must be at most ${LIMITS.key} characters`),
  value: storableText('value').refine((v) => fitsUtf8(v, LIMITS.valueBytes), {
    message: `value must be at most ${LIMITS.valueBytes} bytes`,
  }),
  type: z.string().min(1, 'type must not be empty').max(64),
  source: z.string().min(1, 'source must not be empty').max(64),
  expected_version: z.number().int().min(0).optional(),
  metadata: jsonObject('metadata').optional(),
});
export type RecordStateInput = z.input<typeof RecordStateInputSchema>;

/** Sensitivity of a value, from detectors on key and value. */
export const SensitivitySchema = z.enum(['public', 'pii', 'secret']);

/** One version of a state item, as returned by every face. */
export const StateItemSchema = z.object({
  session_id: z.string(),
  key: z.string(),
  value: z.string(),
  type: z.string(),
  source: z.string(),
  trust: z.number().int(),
  sensitivity: SensitivitySchema,
  category: z.string(),
  version: z.number().int().min(1),
  /** `current`: the value in force; `conflicted`: in force, with an open conflict; `superseded`: an old version. */
  status: z.enum(['current', 'conflicted', 'superseded', 'erased']),
  metadata: z.record(z.string(), z.unknown()),
  updated_at: z.string(),
});
export type StateItem = z.infer<typeof StateItemSchema>;

/** A recorded disagreement: a lower-trust write that did not replace the current value. */
export const ConflictSchema = z.object({
  conflict_id: z.string(),
  session_id: z.string(),
  key: z.string(),
  status: z.enum(['open', 'resolved']),
  current: z.object({
    value: z.string(),
    type: z.string(),
    source: z.string(),
    trust: z.number().int(),
    version: z.number().int(),
    /** This side's value classified, as a state item is: a reader masks a `secret` one. */
    sensitivity: SensitivitySchema.optional(),
  }),
  proposed: z.object({
    value: z.string(),
    type: z.string(),
    source: z.string(),
    trust: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    /**
     * The proposed value classified on its own: a secret proposed for a key whose current value
     * is not secret is `secret` here (History stores it masked), whatever the item's sensitivity.
     */
    sensitivity: SensitivitySchema.optional(),
  }),
  resolution: z.enum(['keep_current', 'accept_proposed', 'superseded', 'erased']).nullable(),
  created_at: z.string(),
  resolved_at: z.string().nullable(),
});
export type Conflict = z.infer<typeof ConflictSchema>;

/** The answer to a state write. */
export const RecordStateResultSchema = z.object({
  outcome: z.enum(['created', 'superseded', 'unchanged', 'conflict']),
  changed: z.boolean(),
  item: StateItemSchema,
  conflict: ConflictSchema.nullable(),
  event_id: z.string().nullable(),
});
export type RecordStateResult = z.infer<typeof RecordStateResultSchema>;

/** `POST /v1/state/conflicts/{id}/resolve`. */
export const ResolveConflictInputSchema = z.strictObject({
  resolution: z.enum(['keep_current', 'accept_proposed']),
  note: z.string().max(1000).optional(),
});
export type ResolveConflictInput = z.input<typeof ResolveConflictInputSchema>;

/** `POST /v1/gates/evaluate`: ask the gate about one action. */
export const EvaluateInputSchema = z.strictObject({
  session_id: SessionIdSchema,
  action: z
    .string()
    .trim()
    .min(1, 'action must not be empty')
    .max(LIMITS.action, `action must be at most ${LIMITS.action} characters`)
    // It is shown to people (console, CLI, approvals): nothing that could redraw what they read.
    // Explicit ranges, not \p{Cc}: the pattern is published (OpenAPI, MCP tool schemas) and must
    // mean the same to validators without Unicode property escapes.
    .regex(
      // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
      /^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]+$/,
      'action must not contain control characters or bidirectional overrides',
    ),
  params: jsonObject('params').optional(),
  context: jsonObject('context').optional(),
});
export type EvaluateInput = z.input<typeof EvaluateInputSchema>;

/** One reason behind a verdict. */
export const GateReasonSchema = z.object({
  rule: z.string(),
  verdict: z.enum(['Warn', 'Block']),
  message: z.string(),
  keys: z.array(z.string()),
});

/** Where an approval stands: pending → approved | denied | expired; approved → used | expired. */
export const ApprovalStatusSchema = z.enum(['pending', 'approved', 'denied', 'expired', 'used']);
export type ApprovalStatus = z.infer<typeof ApprovalStatusSchema>;

/**
 * The approval a decision cites: on a held Block (`status: pending`, reason `approval_required`),
 * on a Block after a denial (`denied`), and on the Allow that consumed it (`approved` while uses
 * remain, else `used`; `decided_by` names the approver).
 */
export const DecisionApprovalSchema = z.object({
  id: z.string(),
  status: ApprovalStatusSchema,
  expires_at: z.string(),
  /** The rules that held the action. */
  rules: z.array(z.string()),
  /** The key that approved or denied it (`in-process` for an in-process call); null while pending. */
  decided_by: z.string().nullable(),
});
export type DecisionApproval = z.infer<typeof DecisionApprovalSchema>;

/** A gate decision: the answer of `evaluate` and the data of a `gate_evaluation` event. */
export const DecisionSchema = z.object({
  decision_id: z.string(),
  verdict: VerdictSchema,
  allowed: z.boolean(),
  reason: z.string(),
  reasons: z.array(GateReasonSchema),
  shadow: z.array(GateReasonSchema),
  session_id: z.string(),
  action: z.string(),
  policy: z.object({ revision: z.string() }),
  /**
   * `{key: version}` of every state item the decision read; 0 for a key read while absent, and
   * `"*"` (the number of items) when a rule read the whole key set.
   */
  state_versions: z.record(z.string(), z.number().int()),
  evaluated_at: z.string(),
  /** Only when a rule with `approval:` held the action, or an approval released it. */
  approval: DecisionApprovalSchema.optional(),
});
export type Decision = z.infer<typeof DecisionSchema>;

/** A stored decision with the inputs it was made on (secrets masked): `GET /v1/decisions/{id}`. */
export const DecisionRecordSchema = DecisionSchema.extend({
  params: z.record(z.string(), z.unknown()),
  context: z.record(z.string(), z.unknown()),
  event_id: z.string(),
});

/** `POST /v1/decisions/{id}/outcome`: what happened after a decision. */
export const OutcomeInputSchema = z.strictObject({
  outcome: z.enum(['succeeded', 'failed']),
  detail: z.string().max(2000).optional(),
});
export type OutcomeInput = z.input<typeof OutcomeInputSchema>;

/** The history event types. */
export const EVENT_TYPES = [
  'state_change',
  'state_conflict',
  'conflict_resolved',
  'gate_evaluation',
  'action_outcome',
  'approval.requested',
  'approval.approved',
  'approval.denied',
  'approval.expired',
  'approval.used',
  'policy.activated',
  'policy.replayed',
  'erasure.completed',
  'history.upgraded',
  'retention.pruned',
  'legal_hold.placed',
  'legal_hold.released',
  'legal_hold.overridden',
  'retention.configured',
] as const;
export const EventTypeSchema = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof EventTypeSchema>;

/** One append-only, hash-chained history event. */
export const HistoryEventSchema = z.object({
  event_id: z.string(),
  seq: z.number().int(),
  type: EventTypeSchema,
  session_id: z.string(),
  occurred_at: z.string(),
  data: z.record(z.string(), z.unknown()),
  prev_hash: z.string(),
  hash: z.string(),
});
export type HistoryEvent = z.infer<typeof HistoryEventSchema>;

/**
 * A number from a query string or a path (or a number, in-process): written in decimal digits
 * (`0x10`, `1e1`, `+5` and an empty value are refused, where `Number()` would read them), whole
 * unless `fraction`, within `min`..`max`. Its JSON Schema is the number's.
 */
export function queryNumber(name: string, range: { min: number; max?: number; fraction?: boolean }) {
  const digits = range.fraction ? /^\d+(\.\d+)?$/ : /^\d+$/;
  const written = `${name} must be ${range.fraction ? 'a number' : 'a whole number'} in decimal digits`;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  // Past the largest safe integer zod's int check would fail too: say it once, as a bound.
  let n = z.coerce
    .number()
    .min(range.min, `${name} must be at least ${range.min}`)
    .max(max, { message: `${name} must be at most ${max}`, abort: true });
  if (!range.fraction) n = n.int(written);
  return z
    .unknown()
    .superRefine((v, ctx) => {
      if (typeof v === 'string' && !digits.test(v)) ctx.addIssue({ code: 'custom', message: written });
    })
    .pipe(n)
    .meta({
      type: range.fraction ? 'number' : 'integer',
      minimum: range.min,
      maximum: max,
    });
}

/** A page size of the paged lists (history, approvals): 1 to 500, 50 by default. */
const PageLimitSchema = queryNumber('limit', { min: 1, max: LIMITS.historyLimit }).default(
  LIMITS.historyDefaultLimit,
);

/** `GET /v1/history/events` query. */
export const HistoryQuerySchema = z.strictObject({
  session_id: SessionIdSchema.optional(),
  type: EventTypeSchema.optional(),
  decision_id: IdSchema.max(64).optional(),
  limit: PageLimitSchema,
  cursor: z.string().max(200).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
});
export type HistoryQuery = z.input<typeof HistoryQuerySchema>;

/** A page of history. */
export const HistoryPageSchema = z.object({
  events: z.array(HistoryEventSchema),
  next_cursor: z.string().nullable(),
});
export type HistoryPage = z.infer<typeof HistoryPageSchema>;

/** The result of recomputing the hash chain. */
export const VerifyResultSchema = z.object({
  ok: z.boolean(),
  checked: z.number().int(),
  head: z.string().nullable(),
  first_bad_seq: z.number().int().nullable(),
  problem: z.string().nullable(),
  /** Caller-supplied fields whose kept value matched its commitment. */
  verified_fields: z.number().int(),
  /** Fields whose value was erased (each named by an `erasure.completed` event). */
  erased_fields: z.number().int(),
  /** The erased fields: the event's seq and the field's JSON Pointer into its data. */
  erased: z.array(z.object({ seq: z.number().int(), path: z.string() })),
  /**
   * Set when the chain's prefix was pruned: the seq of the signed checkpoint it was verified
   * from. Events at or below it still stored (a prune's deletion cut short) are verified with
   * the chain and counted in `checked`.
   */
  pruned_through: z.number().int().optional(),
});
export type VerifyResult = z.infer<typeof VerifyResultSchema>;

/** Event kinds a webhook may subscribe to. */
export const WebhookEventSelectorSchema = z.union([EventTypeSchema, z.literal('*')], {
  error: `must be an event type (${EVENT_TYPES.join(', ')}) or *`,
});

/** An optional filter on a subscription. */
export const WebhookFilterSchema = z.strictObject({
  verdicts: z.array(VerdictSchema).min(1).optional(),
  session_id: SessionIdSchema.optional(),
});

/** `POST /v1/webhooks`: subscribe an HTTPS endpoint to events. */
export const CreateWebhookInputSchema = z.strictObject({
  url: storableText('url').max(2048, 'url must be at most 2048 characters'),
  events: z.array(WebhookEventSelectorSchema).min(1, 'events must list at least one event type'),
  filter: WebhookFilterSchema.optional(),
  description: storableText('description').max(500).optional(),
});
export type CreateWebhookInput = z.input<typeof CreateWebhookInputSchema>;

/** A stored webhook subscription (secrets never included). */
export const WebhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  filter: WebhookFilterSchema.nullable(),
  description: z.string().nullable(),
  status: z.enum(['active', 'disabled']),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Webhook = z.infer<typeof WebhookSchema>;

/**
 * Something the caller should know about a webhook that was registered anyway. Codes:
 * `url_not_resolved` (the host did not resolve at registration; every delivery resolves it again).
 */
export const WebhookWarningSchema = z.object({ code: z.string(), message: z.string() });
export type WebhookWarning = z.infer<typeof WebhookWarningSchema>;

/**
 * A webhook with its signing secret: returned once, at creation and rotation. `warnings` only
 * at creation, and only when there is one.
 */
export const WebhookWithSecretSchema = WebhookSchema.extend({
  secret: z.string(),
  warnings: z.array(WebhookWarningSchema).optional(),
});
export type WebhookWithSecret = z.infer<typeof WebhookWithSecretSchema>;

/** `POST /v1/webhooks/{id}/rotate-secret`. */
export const RotateSecretInputSchema = z.strictObject({
  /** Seconds the old secret keeps signing alongside the new one. */
  overlap_seconds: z
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3600)
    .default(24 * 3600),
});

/** One delivery of one event to one webhook. */
export const DeliverySchema = z.object({
  delivery_id: z.string(),
  webhook_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  delivered_at: z.string().nullable(),
});
export type Delivery = z.infer<typeof DeliverySchema>;

/**
 * `POST /v1/erasures`: erase what callers wrote into one session (history values, state values,
 * conflicts, approvals), keeping the hash-chained envelopes.
 */
export const EraseInputSchema = z.strictObject({
  session_id: SessionIdSchema,
  /**
   * Erase although a legal hold covers the session; recorded as `legal_hold.overridden`. Needs
   * scope `admin` when a hold covers it. @default false
   */
  override_hold: z.boolean().optional(),
  /** List what would be erased; erase nothing. @default false */
  dry_run: z.boolean().optional(),
  /**
   * The request's reference (a ticket ID), recorded in the `erasure.completed` event: it is
   * kept in the chain, so it must not be personal data; letters, digits and `._:#/-` only.
   */
  reference: z
    .string()
    .regex(
      /^[A-Za-z0-9._:#/-]{1,128}$/,
      'must be 1-128 letters, digits or ._:#/- (a ticket ID, not personal data)',
    )
    .optional(),
});
export type EraseInput = z.input<typeof EraseInputSchema>;

/**
 * A pseudonymous person ID a caller tags sessions with, so one request erases all of a person's
 * sessions. It must not itself be personal data (an e-mail, a name): use an opaque ID.
 */
export const SubjectSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1-128 letters, digits or ._:- (a pseudonymous ID)');

/** `POST /v1/subject-tags`: tag a session with a subject (replacing its tag). */
export const TagSessionInputSchema = z.strictObject({ session_id: SessionIdSchema, subject: SubjectSchema });
export type TagSessionInput = z.input<typeof TagSessionInputSchema>;

/** A session's subject tag. */
export const SessionTagSchema = z.object({
  session_id: z.string(),
  subject: z.string(),
  tagged_at: z.string(),
});
export type SessionTag = z.infer<typeof SessionTagSchema>;

/** `POST /v1/erasures/subject`: erase every session tagged with a subject, and the tags. */
export const EraseSubjectInputSchema = z.strictObject({
  subject: SubjectSchema,
  /** As {@link EraseInputSchema}'s `override_hold`. */
  override_hold: z.boolean().optional(),
  /** List what would be erased; erase nothing. @default false */
  dry_run: z.boolean().optional(),
  /** As {@link EraseInputSchema}'s `reference`. */
  reference: EraseInputSchema.shape.reference,
});
export type EraseSubjectInput = z.input<typeof EraseSubjectInputSchema>;

/** What an erasure erased, or (dry run) would erase. */
export const ErasureReportSchema = z.object({
  session_id: z.string(),
  dry_run: z.boolean(),
  reference: z.string().nullable(),
  /** The session's events with kept values, and the JSON Pointers of those fields. */
  events: z.array(z.object({ seq: z.number().int(), type: z.string(), paths: z.array(z.string()) })),
  /** How many fields in all. */
  fields: z.number().int(),
  /** Keys of the session's current state items, whose values are cleared. */
  state_items: z.array(z.string()),
  /** Pending approvals of the session, denied. */
  pending_approvals: z.array(z.string()),
  /** Approved, unused approvals of the session, expired (they were bound to the erased params). */
  approved_approvals: z.array(z.string()),
  /** Pending webhook deliveries of the session's events: they go out with the values erased. */
  pending_deliveries: z.array(z.string()),
  /**
   * Legal holds that cover the session (its own and the tenant's): an erasure is refused while
   * there are any, unless it overrides them (scope admin). A dry run lists them so the refusal is
   * known before the request.
   */
  legal_holds: z.array(
    z.object({ hold_id: z.string(), reference: z.string(), session_id: z.string().nullable() }),
  ),
  /** The `erasure.completed` event; null on a dry run. */
  erasure: z.object({ event_id: z.string(), seq: z.number().int() }).nullable(),
});
export type ErasureReport = z.infer<typeof ErasureReportSchema>;

/** What an erasure by subject erased: one report per tagged session (the tags are deleted too). */
export const SubjectErasureReportSchema = z.object({
  subject: z.string(),
  dry_run: z.boolean(),
  sessions: z.array(ErasureReportSchema),
});
export type SubjectErasureReport = z.infer<typeof SubjectErasureReportSchema>;

/** The API key scopes. `admin` implies all others. */
export const SCOPES = [
  'state:write',
  'state:read',
  'gate:evaluate',
  'history:read',
  'webhooks:manage',
  'approvals:decide',
  'policy:write',
  'data:erase',
  'admin',
] as const;
export const ScopeSchema = z.enum(SCOPES);
export type Scope = z.infer<typeof ScopeSchema>;

/** An API key as listed (the secret is never stored or listed). */
export const ApiKeySchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  name: z.string(),
  prefix: z.string(),
  scopes: z.array(ScopeSchema),
  sources: z.array(z.string()),
  /** Free labels (`finance`) that a policy's `approval.approvers` can name. */
  labels: z.array(z.string()),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});
export type ApiKey = z.infer<typeof ApiKeySchema>;

/**
 * An API key label: lower-case letters, digits, `_ . -`, up to 64, starting with a letter or
 * digit. No `:`, so a label can never be mistaken for a scope (`approvals:decide`).
 */
export const KeyLabelSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_.-]{0,63}$/,
    'a label is lower-case letters, digits, _ . - (at most 64), starting with a letter or digit',
  );

// ---- approvals ----------------------------------------------------------------------------------

/** A held action waiting for (or past) a person's decision: `GET /v1/approvals/{id}`. */
export const ApprovalSchema = z.object({
  id: z.string(),
  status: ApprovalStatusSchema,
  session_id: z.string(),
  action: z.string(),
  /** The action's parameters as evaluated (secrets masked). */
  params: z.record(z.string(), z.unknown()),
  /** The version of every state item the held decision read (as a decision's `state_versions`). */
  state_versions: z.record(z.string(), z.number().int()),
  policy: z.object({ revision: z.string() }),
  /** The rules that held the action, and the first one's message. */
  rules: z.array(z.string()),
  reason: z.string(),
  /**
   * SHA-256 (hex) over the canonical JSON of tenant, session, action, params, state versions,
   * policy revision and rules: only an evaluation with the same digest can use the approval.
   */
  digest: z.string(),
  /** Key labels or scopes, any one of which an approver needs (per rule); empty: any approver. */
  approvers: z.array(z.array(z.string())),
  allow_self_approval: z.boolean(),
  uses: z.number().int().min(1),
  uses_left: z.number().int().min(0),
  /** The key whose evaluation asked (null: an in-process call). */
  requested_by: z.string().nullable(),
  /**
   * Every caller whose evaluation asked for it while it was pending, first to last (key IDs;
   * `in-process` for an in-process call): none of them may decide it unless self-approval is
   * allowed.
   */
  requesters: z.array(z.string()),
  /** The decision that held the action. */
  decision_id: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
  decided_by: z.string().nullable(),
  decided_at: z.string().nullable(),
  comment: z.string().nullable(),
  updated_at: z.string(),
});
export type Approval = z.infer<typeof ApprovalSchema>;

/** `GET /v1/approvals` query. */
export const ApprovalQuerySchema = z.strictObject({
  status: ApprovalStatusSchema.optional(),
  session_id: SessionIdSchema.optional(),
  limit: PageLimitSchema,
  cursor: z.string().max(200).optional(),
});
export type ApprovalQuery = z.input<typeof ApprovalQuerySchema>;

/** A page of approvals, newest first. */
export const ApprovalPageSchema = z.object({
  approvals: z.array(ApprovalSchema),
  next_cursor: z.string().nullable(),
});
export type ApprovalPage = z.infer<typeof ApprovalPageSchema>;

/** The longest `wait` of `GET /v1/approvals/{id}`, in seconds. */
export const MAX_APPROVAL_WAIT_SECONDS = 60;

/** `GET /v1/approvals/{id}` query: `wait` long-polls until the approval is decided or expired. */
export const ApprovalWaitSchema = z.strictObject({
  wait: queryNumber('wait', { min: 0, max: MAX_APPROVAL_WAIT_SECONDS, fraction: true }).optional(),
});
export type ApprovalWait = z.input<typeof ApprovalWaitSchema>;

/** `POST /v1/approvals/{id}/approve` and `…/deny`. */
export const DecideApprovalInputSchema = z.strictObject({
  comment: storableText('comment').max(1000, 'comment must be at most 1000 characters').optional(),
});
export type DecideApprovalInput = z.input<typeof DecideApprovalInputSchema>;
