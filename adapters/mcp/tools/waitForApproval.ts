/**
 * `wait_for_approval`: wait (bounded) for a person to decide an action the gate held, then
 * evaluate it again. The approval comes only from an approver's key through `/v1` or the CLI:
 * nothing the model or the client sends here can approve anything (no elicitation either).
 */
import { z } from 'zod';
import { ApprovalSchema, DecisionSchema, IdSchema, MAX_APPROVAL_WAIT_SECONDS } from '../../../src/index.js';
import { renderApprovalWait } from '../toolResults.js';
import { defineTool } from './defineTool.js';

/** The wait when the model gives none, in seconds: well inside a client's usual request timeout. */
const DEFAULT_WAIT_SECONDS = 30;

/** `wait_for_approval`: scope `gate:evaluate`. */
export const waitForApprovalTool = defineTool({
  name: 'wait_for_approval',
  title: 'Wait for approval',
  scope: 'gate:evaluate',
  description: () =>
    [
      'Wait for a person to approve or deny an action that evaluate_gate held for approval (a Block whose ' +
        'approval.status is "pending"), then evaluate the same action again.',
      'Only perform the action if the new decision returned here is Allow (or Warn). If the approval is still ' +
        'pending, denied or expired, do NOT perform it: tell the user. You cannot approve anything yourself.',
      'Fields:',
      '- approval_id: the approval.id from evaluate_gate (apr_…).',
      `- timeout_seconds (optional): how long to wait, 1 to ${MAX_APPROVAL_WAIT_SECONDS} (default ${DEFAULT_WAIT_SECONDS}).`,
    ].join('\n'),
  input: () =>
    z.strictObject({
      approval_id: IdSchema.describe('The approval ID (apr_…) from evaluate_gate.'),
      timeout_seconds: z
        .number()
        .int()
        .min(1)
        .max(MAX_APPROVAL_WAIT_SECONDS)
        .optional()
        .describe('How long to wait, in seconds.'),
    }),
  output: z.object({
    approval: ApprovalSchema,
    /** The new evaluation, made only once the approval is approved. */
    decision: DecisionSchema.nullable(),
  }),
  // It waits and may consume the approval (a write), but changes nothing outside Gatehouse.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async handler(args, env) {
    const approval = await env.gatehouse.getApproval(
      args.approval_id,
      { wait: args.timeout_seconds ?? DEFAULT_WAIT_SECONDS },
      env.context,
    );
    // The decision comes from a fresh evaluation of the approved action: the core releases it
    // only if its binding digest still matches (same params, same state, same policy).
    const decision =
      approval.status === 'approved'
        ? await env.gatehouse.evaluate(
            { session_id: approval.session_id, action: approval.action, params: approval.params },
            env.context,
          )
        : null;
    return { structured: { approval, decision }, text: renderApprovalWait(approval, decision) };
  },
});
