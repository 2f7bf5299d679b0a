/**
 * # The policy file
 *
 * A policy is one YAML document, without unknown tags, nesting at most 64 levels. Every field is
 * optional except `version`; unknown fields are errors (a typo never silently disables a rule), and
 * so is a `__proto__` key anywhere. Errors name the file, `line:col` and the field path, all at once.
 *
 * ```yaml
 * version: 1                        # required; the format version
 * default_verdict: Allow            # an action no `actions` entry matches: Allow (default) | Warn | Block
 * types: [fact, assumption, preference, constraint]     # allowed state item types (this default)
 * sources:                          # source name -> trust rank (integer >= 0); this default
 *   { system: 4, user_input: 3, tool_output: 2, retrieval: 1, agent_inference: 1 }
 * low_trust_below: 3                # trust strictly below this is "low trust" (default 3)
 * open_conflicts: Warn              # unresolved conflicts on keys the action does not require:
 *                                   # Warn (default) | Block | Allow (off)
 * rules:                            # global rules: evaluated for every action
 *   - name: no_deploy_friday        # required; unique in its list; letters, digits, _ . -
 *     when: "action.startsWith('deploy.') && now.getDayOfWeek() == 5"   # CEL, must be bool
 *     verdict: Block                # Block | Warn (required)
 *     message: "No deploys on Friday ({action})"   # optional; {…} holds a CEL expression
 *     mode: enforce                 # enforce (default) | shadow: reported in `shadow`, never enforced
 *     on_error: Block               # verdict when `when` fails or is not a bool: Block (default) | Warn | Allow
 *     description: "Free text"      # optional, ignored by the gate
 *     approval:                     # optional, Block rules only: hold the action for a person instead
 *       expires_in: 15m             # how long the request (and an unused approval) lives: 30s, 15m, 2h, 1d
 *                                   # (default 15m, at most 7d)
 *       approvers: [finance]        # key labels or scopes; an approver needs one of them (default: any
 *                                   # key with the approvals:decide scope)
 *       uses: 1                     # evaluations one approval releases (default 1, at most 100)
 *       allow_self_approval: false  # may the key that asked approve its own request (default false)
 * actions:
 *   "payments.*":                   # an exact action name or a glob (see below)
 *     description: "Free text"      # optional
 *     requires:                     # state the action depends on
 *       - key: budget.limit         # canonical state key (trimmed, lower-cased)
 *         min_trust: user_input     # optional: a source name or a trust number
 *         types: [fact, constraint] # optional: allowed types of the item
 *       - user.email                # shorthand for `{ key: user.email }`
 *     rules:                        # same shape as the global rules
 *       - name: over_budget
 *         when: "double(params.amount) > state['budget.limit'].number"
 *         verdict: Block
 *         message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}"
 * ```
 *
 * ## Matching actions
 * Every `actions` entry whose pattern matches the action applies (exact names and globs alike,
 * in file order), plus the global `rules`. Patterns are globs over `.`-separated segments (`/`
 * also separates): `*` matches within one segment (`payments.*` matches `payments.refund`, not
 * `payments.refund.bulk`), `**` any number of segments including none (`payments.**` matches
 * `payments`, `payments.refund` and `payments.refund.bulk`), `?` one character,
 * `{refund,transfer}` alternatives (at most 64 once expanded), a leading `!` negates. Character
 * classes, groups and backslash escapes are refused. Matching takes time proportional to the
 * pattern's length times the action's, whatever the pattern. When no entry matches,
 * `default_verdict` decides (a reason with rule `default_verdict` when it is not Allow).
 *
 * ## Built-in checks (for each `requires` entry of a matching entry)
 * | rule | verdict | when |
 * | --- | --- | --- |
 * | `required_missing` | Block | the key is not in the session's state |
 * | `required_conflicted` | Block | the key has an unresolved conflict |
 * | `required_wrong_type` | Block | `types` is given and the item's type is not in it |
 * | `required_untrusted` | Block | `min_trust` is given and the item's trust is below it |
 * | `required_low_trust` | Warn | no `min_trust`, the item is a `fact` and its trust < `low_trust_below` |
 * | `open_conflicts` | `open_conflicts` | unresolved conflicts on keys the action does not require |
 *
 * ## Rules (CEL)
 * `when` is a CEL expression (https://cel.dev) over these variables:
 * - `action` (string), `params` and `context` (maps from the request's JSON objects: JSON numbers
 *   are CEL doubles, which compare with int and double literals alike: `params.amount > 100`;
 *   arithmetic needs doubles: `params.amount * 2.0`),
 * - `state`: map of key → `{value: string, number: double or null, type, source, status: string,
 *   trust: int, version: int, updated_at: timestamp}`,
 * - `conflicts`: list of `{conflict_id, key, current_value, proposed_value, proposed_source:
 *   string, created_at: timestamp}`,
 * - `now`: timestamp (`now.getDayOfWeek()` is 0 for Sunday, in UTC unless given a time zone:
 *   `now.getHours('Europe/Paris')`; `now - state['k.k'].updated_at > duration('24h')`).
 *
 * Reading an absent map key (`params.missing`, `state['no.such']`) is an error, never false:
 * guard with `has(params.x)` or `'k.k' in state`. Expressions are type-checked at load (unknown
 * variables, unknown state fields, wrong operand types and a non-bool result are load errors, as
 * are a `matches()` pattern, `timestamp()` or `duration()` literal that would fail on every
 * evaluation, and nesting deeper than 200 levels).
 * A rule whose `when` is true adds its verdict with its `name` as the reason's rule. A rule that
 * fails at evaluation (or yields a non-bool) gives its `on_error` verdict with rule `policy_error`
 * (`on_error: Allow` ignores the failure).
 *
 * ## Approvals
 * A Block rule with `approval:` holds the action instead of refusing it outright: when every
 * Block reason of a decision comes from such rules, the decision is a Block with reason
 * `approval_required` and an approval request (`apr_…`) that a person may approve or deny. An
 * approval releases only an evaluation with the same binding digest (see `approvalDigest.ts`).
 * A decision held by several rules needs an approver who satisfies each rule's `approvers`; the
 * shortest `expires_in` and the smallest `uses` apply, and self-approval only if every rule allows it.
 * Any other Block reason (a missing required key, a rule without `approval:`) is a plain Block
 * that no approval can release.
 *
 * Messages: `{expr}` is replaced by the value of the CEL expression `expr` (same variables);
 * a placeholder that fails renders as `?`. Write `{{` and `}}` for literal braces.
 *
 * ## Result
 * `reasons` lists, in this order: `default_verdict`, the built-in `requires` checks, global
 * rules, the rules of matching entries (file order), `open_conflicts`. A rule's reason carries
 * the state keys its expressions name as string literals that exist in the state. The verdict
 * is the strictest reason's; `reason` is the first Block message, else the first Warn message,
 * else a sentence saying the action is allowed. Shadow rules only ever add to `shadow`.
 *
 * ## Revision
 * A compiled policy's `revision` is the SHA-256 of the RFC 8785 canonical JSON of the validated
 * document (defaults filled in, required keys canonicalised): comments, quoting, flow or block
 * style, key order and writing a default out explicitly do not change it; any change of meaning does.
 *
 * @module
 */
import { z } from 'zod';
import { KeyLabelSchema, SCOPES } from '../schemas.js';
import { canonicalKey } from '../state/canonicalKey.js';

/** The built-in reason names; a policy rule may not use them. */
export const BUILTIN_RULE_NAMES = [
  'required_missing',
  'required_conflicted',
  'required_wrong_type',
  'required_untrusted',
  'required_low_trust',
  'open_conflicts',
  'default_verdict',
  'policy_error',
  'approval_required',
  'approval_denied',
] as const;

/** The state item types used when a policy declares none. */
export const DEFAULT_TYPES: readonly string[] = ['fact', 'assumption', 'preference', 'constraint'];

/** The source trust ranks used when a policy declares none. */
export const DEFAULT_SOURCES: Readonly<Record<string, number>> = {
  system: 4,
  user_input: 3,
  tool_output: 2,
  retrieval: 1,
  agent_inference: 1,
};

/** Trust strictly below this is low trust unless the policy says otherwise (= `user_input`). */
export const DEFAULT_LOW_TRUST_BELOW = 3;

const verdictSchema = z.enum(['Allow', 'Warn', 'Block']);
const ruleVerdictSchema = z.enum(['Block', 'Warn']);
const nameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, 'Must be lower-case letters, digits and _, starting with a letter');

/**
 * A state key, canonicalised by the same rules as a write (`User.Email ` → `user.email`), so a
 * requirement can never name a key no write could create.
 */
const stateKeySchema = z.string().transform((raw, ctx) => {
  try {
    return canonicalKey(raw);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: error instanceof Error ? error.message : String(error) });
    return z.NEVER;
  }
});

/** Longest `approval.expires_in`: a week. */
export const MAX_APPROVAL_SECONDS = 7 * 24 * 3600;

const DURATION_UNITS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86400 };

/** `30s`, `15m`, `2h`, `1d` → seconds; the revision sees seconds, so `15m` and `900s` are one policy. */
const durationSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,6}[smhd]$/, 'A duration is a whole number and a unit: 30s, 15m, 2h, 1d')
  .transform((text) => Number(text.slice(0, -1)) * DURATION_UNITS[text.slice(-1)]!)
  .refine((seconds) => seconds <= MAX_APPROVAL_SECONDS, { message: 'At most 7d' });

/** The shortest `retention.history_after` unless `allow_below_floor` (EU AI Act Art. 19, 26(6): six months). */
export const RETENTION_FLOOR_DAYS = 183;

/** `retention:` of a policy: how long values and history are kept, in days (`90d`). */
export const retentionSchema = z
  .strictObject({
    /** Values (what callers wrote) of older events are erased; the envelopes stay. */
    values_after: z
      .string()
      .regex(/^[1-9][0-9]{0,4}d$/, 'A retention period is a whole number of days: 90d')
      .transform((text) => Number(text.slice(0, -1)))
      .optional(),
    /** Older events are pruned behind a signed checkpoint. */
    history_after: z
      .string()
      .regex(/^[1-9][0-9]{0,4}d$/, 'A retention period is a whole number of days: 365d')
      .transform((text) => Number(text.slice(0, -1)))
      .optional(),
    /** Let `history_after` be shorter than the floor ({@link RETENTION_FLOOR_DAYS} days). */
    allow_below_floor: z.boolean().default(false),
  })
  .refine(
    (r) => r.history_after === undefined || r.allow_below_floor || r.history_after >= RETENTION_FLOOR_DAYS,
    {
      message: `history_after is below the floor of ${RETENTION_FLOOR_DAYS} days: set allow_below_floor: true to lower it`,
      path: ['history_after'],
    },
  );

/** An approver: a key label (`finance`) or a scope (`approvals:decide`, `admin`). */
const approverSchema = z.union([KeyLabelSchema, z.enum(SCOPES)], {
  error: `An approver is a key label (lower-case letters, digits, _ . -) or a scope: ${SCOPES.join(', ')}`,
});

/** `approval:` of a Block rule: hold the action for a person instead of refusing it. */
export const approvalSchema = z.strictObject({
  expires_in: durationSchema.default(15 * 60),
  approvers: z.array(approverSchema).default([]),
  uses: z.number().int().min(1).max(100).default(1),
  allow_self_approval: z.boolean().default(false),
});

/** One rule: a CEL condition and the verdict it raises. */
export const ruleSchema = z.strictObject({
  name: z
    .string()
    .regex(
      /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/,
      'A rule name starts with a letter and holds letters, digits, _ . - (at most 64)',
    )
    .refine((name) => !(BUILTIN_RULE_NAMES as readonly string[]).includes(name), {
      message: `Reserved for a built-in check (${BUILTIN_RULE_NAMES.join(', ')})`,
    }),
  when: z.string().trim().min(1, 'A CEL condition is required'),
  verdict: ruleVerdictSchema,
  message: z.string().min(1).optional(),
  mode: z.enum(['enforce', 'shadow']).default('enforce'),
  on_error: verdictSchema.default('Block'),
  description: z.string().optional(),
  approval: approvalSchema.optional(),
});

/** One state key an action depends on. A bare string is shorthand for `{ key }`. */
export const requirementSchema = z.preprocess(
  (value) => (typeof value === 'string' ? { key: value } : value),
  z.strictObject({
    key: stateKeySchema,
    min_trust: z.union([nameSchema, z.number().int().min(0)]).optional(),
    types: z.array(nameSchema).min(1).optional(),
  }),
);

/** The policy for the actions one pattern matches. */
export const actionPolicySchema = z.strictObject({
  description: z.string().optional(),
  requires: z.array(requirementSchema).default([]),
  rules: z.array(ruleSchema).default([]),
});

/**
 * A map whose keys the author chooses (`sources`, `actions`). zod's record rebuilds the object and
 * keeps one entry per parsed key, so an entry could vanish without a word (and the revision with
 * it): a `__proto__` key, which the yaml library keeps as an own key and zod skips, and a key that
 * parses to another's (`" a.b"` and `"a.b"` once trimmed). So the raw map is checked first; a
 * strict object already reports a `__proto__` key as an unknown field.
 */
function authorKeyedRecord<K extends z.core.$ZodRecordKey, V extends z.core.SomeType>(
  noun: string,
  key: K,
  value: V,
) {
  return z
    .unknown()
    .superRefine((map, ctx) => {
      if (!isRecord(map)) return;
      const refuse = (rawKey: string, message: string) =>
        ctx.addIssue({
          code: 'invalid_key',
          origin: 'record',
          issues: [],
          input: rawKey,
          path: [rawKey],
          message,
        });
      const firstWritten = new Map<unknown, string>();
      for (const rawKey of Object.keys(map)) {
        if (rawKey === '__proto__') {
          refuse(rawKey, `"__proto__" is not allowed as ${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`);
          continue;
        }
        const parsed = z.safeParse(key, rawKey);
        if (!parsed.success) continue; // the record reports it, if nothing here did
        const first = firstWritten.get(parsed.data);
        if (first === undefined) firstWritten.set(parsed.data, rawKey);
        else refuse(rawKey, `"${rawKey}" and "${first}" are the same ${noun} once trimmed`);
      }
    })
    .pipe(z.record(key, value));
}

const policyObjectSchema = z.strictObject({
  version: z.literal(1, { error: 'The policy format version must be 1' }),
  default_verdict: verdictSchema.default('Allow'),
  types: z
    .array(nameSchema)
    .min(1)
    .default([...DEFAULT_TYPES]),
  // Checked here rather than across fields: only a map that parsed is known to be empty (one
  // whose only names are invalid is reported for those names alone).
  sources: authorKeyedRecord('source name', nameSchema, z.number().int().min(0))
    .refine((sources) => Object.keys(sources).length > 0, 'At least one source is required')
    .default({ ...DEFAULT_SOURCES }),
  low_trust_below: z.number().int().min(0).default(DEFAULT_LOW_TRUST_BELOW),
  open_conflicts: verdictSchema.default('Warn'),
  rules: z.array(ruleSchema).default([]),
  actions: authorKeyedRecord(
    'action pattern',
    z.string().trim().min(1, 'An action pattern cannot be empty'),
    actionPolicySchema,
  ).default({}),

  retention: retentionSchema.optional(),
});

/**
 * The whole policy document, with its cross-field checks (unique rule names and types, known
 * sources and types in `requires`).
 */
export const policySchema = policyObjectSchema.superRefine(crossCheck, {
  // Run even when fields failed, so one load reports every problem: crossCheck reads the
  // partially parsed value defensively.
  when: () => true,
});

function crossCheck(policy: unknown, ctx: z.RefinementCtx): void {
  if (!isRecord(policy)) return;
  const types = stringsIn(policy['types']) ?? DEFAULT_TYPES;
  const sources = isRecord(policy['sources']) ? policy['sources'] : DEFAULT_SOURCES;
  if (new Set(types).size !== types.length) {
    ctx.addIssue({ code: 'custom', path: ['types'], message: 'Types must be unique' });
  }
  reportDuplicateNames(policy['rules'], ['rules'], ctx);
  reportMisplacedApprovals(policy['rules'], ['rules'], ctx);
  const actions = isRecord(policy['actions']) ? policy['actions'] : {};
  for (const [pattern, entry] of Object.entries(actions)) {
    if (!isRecord(entry)) continue;
    reportDuplicateNames(entry['rules'], ['actions', pattern, 'rules'], ctx);
    reportMisplacedApprovals(entry['rules'], ['actions', pattern, 'rules'], ctx);
    const requires = Array.isArray(entry['requires']) ? entry['requires'] : [];
    requires.forEach((requirement: unknown, index) => {
      if (!isRecord(requirement)) return;
      const path = ['actions', pattern, 'requires', index];
      const minTrust = requirement['min_trust'];
      if (typeof minTrust === 'string' && !Object.hasOwn(sources, minTrust)) {
        ctx.addIssue({
          code: 'custom',
          path: [...path, 'min_trust'],
          message: `Unknown source "${minTrust}"; expected a number or one of: ${Object.keys(sources).join(', ')}`,
        });
      }
      stringsIn(requirement['types'])?.forEach((type, typeIndex) => {
        if (!types.includes(type)) {
          ctx.addIssue({
            code: 'custom',
            path: [...path, 'types', typeIndex],
            message: `Unknown type "${type}"; expected one of: ${types.join(', ')}`,
          });
        }
      });
    });
  }
}

function reportDuplicateNames(rules: unknown, path: (string | number)[], ctx: z.RefinementCtx): void {
  if (!Array.isArray(rules)) return;
  const seen = new Set<string>();
  rules.forEach((rule: unknown, index) => {
    const name = isRecord(rule) ? rule['name'] : undefined;
    if (typeof name !== 'string') return;
    if (seen.has(name)) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, index, 'name'],
        message: `Duplicate rule name "${name}" in this list`,
      });
    }
    seen.add(name);
  });
}

/** `approval:` only means something on an enforced Block rule: a Warn or a shadow rule holds nothing. */
function reportMisplacedApprovals(rules: unknown, path: (string | number)[], ctx: z.RefinementCtx): void {
  if (!Array.isArray(rules)) return;
  rules.forEach((rule: unknown, index) => {
    if (!isRecord(rule) || rule['approval'] === undefined) return;
    if (rule['verdict'] !== 'Block') {
      ctx.addIssue({
        code: 'custom',
        path: [...path, index, 'approval'],
        message: 'Only a rule with verdict Block can hold an action for approval',
      });
    } else if (rule['mode'] === 'shadow') {
      ctx.addIssue({
        code: 'custom',
        path: [...path, index, 'approval'],
        message: 'A shadow rule is never enforced, so it cannot hold an action for approval',
      });
    }
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringsIn(value: unknown): readonly string[] | undefined {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : undefined;
}

/** A validated policy document (defaults applied). */
export type PolicyDocument = z.output<typeof policySchema>;
/** One validated rule. */
export type PolicyRule = z.output<typeof ruleSchema>;
/** One validated `approval:` of a rule (`expires_in` in seconds). */
export type RuleApproval = z.output<typeof approvalSchema>;
/** One validated `requires` entry. */
export type PolicyRequirement = z.output<typeof requirementSchema>;
/** One validated `actions` entry. */
export type ActionPolicy = z.output<typeof actionPolicySchema>;

/** The fields allowed in each kind of object, for "unknown field" messages. */
export const ALLOWED_FIELDS = {
  policy: Object.keys(policyObjectSchema.shape),
  action: Object.keys(actionPolicySchema.shape),
  rule: Object.keys(ruleSchema.shape),
  requirement: ['key', 'min_trust', 'types'],
  approval: Object.keys(approvalSchema.shape),
} as const;
