/**
 * Policy test files: YAML, one list of cases, each a small story (state written in order, one
 * action) and what the gate must answer. Read by `gatehouse policy test`.
 *
 * ```yaml
 * cases:
 *   - name: a transfer over the budget is blocked
 *     state:
 *       - { key: budget.limit, value: "5000", type: fact, source: user_input }
 *       # optional per item: version: 3 (earlier versions written first), at: <time written>
 *     action: payments.transfer
 *     params: { amount: 9000 }
 *     now: 2026-03-06T10:00:00Z           # optional; default 2025-01-06T12:00:00Z (a Monday)
 *     expect:
 *       verdict: Block
 *       reasons: [over_budget]            # optional: exactly these enforced reasons (rule names)
 *       shadow: []                        # optional: exactly these shadow rules
 * ```
 */
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { GatehouseError } from '../errors.js';
import { jsonObject, VerdictSchema } from '../schemas.js';
import { describeIssue } from '../validation.js';

/** The clock of a case without `now`: fixed, so a test gives the same answer on any day. */
export const DEFAULT_TEST_NOW = '2025-01-06T12:00:00.000Z';

const StateEntrySchema = z.strictObject({
  key: z.string().min(1),
  value: z.union([z.string(), z.number(), z.boolean()]).transform(String),
  type: z.string().min(1),
  source: z.string().min(1),
  version: z
    .number()
    .int()
    .min(1)
    .max(100)
    .optional()
    .describe('The version the item must end at: earlier versions are written first.'),
  at: z
    .union([z.iso.datetime({ offset: true }), z.date()])
    .transform((v) => (v instanceof Date ? v.toISOString() : new Date(v).toISOString()))
    .optional()
    .describe("When it is written (its updated_at); default: the case's now."),
});

/** An expected reason: its rule name, or the rule with more to match. */
const ReasonMatcherSchema = z.union([
  z.string().min(1),
  z.strictObject({
    rule: z.string().min(1),
    verdict: z.enum(['Warn', 'Block']).optional(),
    message: z.string().optional().describe('A part of the message.'),
    keys: z.array(z.string()).optional(),
  }),
]);

const CaseSchema = z.strictObject({
  name: z.string().min(1),
  state: z.array(StateEntrySchema).default([]),
  action: z.string().min(1),
  params: jsonObject('params').default({}),
  context: jsonObject('context').default({}),
  now: z
    .union([z.iso.datetime({ offset: true }), z.date()])
    .transform((v) => (v instanceof Date ? v.toISOString() : new Date(v).toISOString()))
    .optional(),
  expect: z.strictObject({
    verdict: VerdictSchema,
    reasons: z.array(ReasonMatcherSchema).optional(),
    shadow: z.array(ReasonMatcherSchema).optional(),
  }),
});

const FileSchema = z.strictObject({
  /** Optional: the policy file these cases are for (informative). */
  policy: z.string().optional(),
  cases: z.array(CaseSchema).default([]),
});

/** One expected reason. */
export type ReasonMatcher = z.output<typeof ReasonMatcherSchema>;
/** One test case. */
export type PolicyTestCase = z.output<typeof CaseSchema>;
/** A parsed test file. */
export interface PolicyTestFile {
  /** Where it was read from (for reports). */
  path: string;
  cases: PolicyTestCase[];
}

/**
 * Parses a test file.
 * @throws {GatehouseError} `invalid_request` naming the file, `line:col` for YAML errors and the
 *   field path (`cases[2].expect.verdict`) for the rest.
 */
export function parsePolicyTestFile(text: string, options: { path: string }): PolicyTestFile {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const fail = (problems: Array<{ path: string; message: string }>) => {
    const lines = problems.map((p) => `${p.path}: ${p.message}`);
    return new GatehouseError(
      'invalid_request',
      `${options.path}: not a valid policy test file: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}`,
      { errors: problems },
    );
  };
  if (document.errors.length > 0) {
    throw fail(
      document.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return { path: `${options.path}:${line}:${col}`, message: `YAML syntax error: ${error.message}` };
      }),
    );
  }
  let raw: unknown;
  try {
    raw = document.toJS() ?? {};
  } catch (error) {
    throw fail([{ path: options.path, message: error instanceof Error ? error.message : String(error) }]);
  }
  const parsed = FileSchema.safeParse(raw);
  if (!parsed.success) {
    throw fail(
      parsed.error.issues.map((issue) => ({
        path:
          issue.path
            .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
            .join('')
            .replace(/^\./, '') || '(root)',
        message: describeIssue(issue, raw),
      })),
    );
  }
  return { path: options.path, cases: parsed.data.cases };
}
