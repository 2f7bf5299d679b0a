/**
 * `wait_for_approval`: wait (bounded) for a person to decide an action the gate held, then
 * evaluate the caller's own call again. The approval comes only from an approver's key through
 * `/v1` or the CLI: nothing the model or the client sends here can approve anything (no
 * elicitation either).
 *
 * The call is given again (session, action, params, context), not taken from the approval: the
 * approval holds the params as evaluated with secrets masked, and a masked value is another
 * action. So only a caller that can make exactly the held call is released by it.
 */
import { z } from 'zod';
import {
  ApprovalSchema,
  DecisionSchema,
  EvaluateInputSchema,
  GatehouseError,
  IdSchema,
  MAX_APPROVAL_WAIT_SECONDS,
} from '../../../src/index.js';
import { renderApprovalWait } from '../toolResults.js';
import { defineTool } from './defineTool.js';
import { sessionHelp, sessionOf } from './toolEnvironment.js';

/** The wait when the model gives none, in seconds: well inside a client's usual request timeout. */
const DEFAULT_WAIT_SECONDS = 30;

/** `wait_for_approval`: scope `gate:evaluate`. */
export const waitForApprovalTool = defineTool({
  name: 'wait_for_approval',
  title: 'Wait for approval',
  scope: 'gate:evaluate',
  description: (env) =>
    [
      'Wait for a person to approve or deny an action that evaluate_gate held for approval (a Block whose ' +
        'approval.status is "pending"), then evaluate the same action again.',
      'Only perform the action if the new decision returned here is Allow (or Warn). If the approval is still ' +
        'pending, denied or expired, do NOT perform it: tell the user. You cannot approve anything yourself.',
      'Fields:',
      '- approval_id: the approval.id from evaluate_gate (apr_…).',
      `- ${sessionHelp(env)} The same as given to evaluate_gate.`,
      '- action, params (optional), context (optional): exactly the action and arguments given to evaluate_gate; ' +
        'only that exact call is released.',
      `- timeout_seconds (optional): how long to wait, 1 to ${MAX_APPROVAL_WAIT_SECONDS} (default ${DEFAULT_WAIT_SECONDS}).`,
    ].join('\n'),
  input: (session) =>
    z.strictObject({
      approval_id: IdSchema.describe('The approval ID (apr_…) from evaluate_gate.'),
      ...EvaluateInputSchema.shape,
      session_id: session,
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
  async handler(args, env, { signal }) {
    const { approval_id: approvalId, timeout_seconds: wait, ...call } = args;
    const evaluation = { ...call, session_id: sessionOf(env, call.session_id) };
    // Read once without waiting: an approval of another session is answered as one that does
    // not exist (the core already does so for a key that never asked for it), before any wait.
    const current = await env.gatehouse.getApproval(approvalId, {}, env.context);
    if (current.session_id !== evaluation.session_id) {
      throw new GatehouseError('not_found', `Approval '${approvalId}' was not found.`);
    }
    if (current.action !== evaluation.action) {
      throw new GatehouseError(
        'invalid_request',
        `Approval '${approvalId}' holds ${current.action}, not ${evaluation.action}: give the call evaluate_gate held.`,
        { errors: [{ path: 'action', message: `must be ${current.action}, the action held` }] },
      );
    }
    const approval =
      current.status === 'pending'
        ? // The wait ends when the client cancels or disconnects, as an abandoned /v1 long-poll does.
          await env.gatehouse.getApproval(
            approvalId,
            { wait: wait ?? DEFAULT_WAIT_SECONDS },
            signal === undefined ? env.context : { ...env.context, signal },
          )
        : current;
    // The decision comes from a fresh evaluation of the caller's call: the core releases it only
    // if its binding digest matches the approval's (same params, same state, same policy). The
    // caller was authenticated up to a minute ago: a key revoked during the wait gets no release.
    if (approval.status === 'approved') {
      await env.checkCaller?.();
      // A call cancelled by now (its client gone, or it gave up) gets no answer: evaluating would
      // take the approval's use for a release nobody receives.
      if (signal?.aborted)
        throw new GatehouseError('unavailable', 'The call was cancelled before its release.');
    }
    const decision =
      approval.status === 'approved' ? await env.gatehouse.evaluate(evaluation, env.context) : null;
    return { structured: { approval, decision }, text: renderApprovalWait(approval, decision) };
  },
});
