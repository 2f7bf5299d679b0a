/**
 * `evaluate_gate`: ask the gate whether an action may proceed, before doing it.
 */
import { DecisionSchema, EvaluateInputSchema } from '../../../src/index.js';
import { renderDecision } from '../toolResults.js';
import { defineTool } from './defineTool.js';
import { sessionHelp, sessionOf } from './toolEnvironment.js';

/** `evaluate_gate`: scope `gate:evaluate`. */
export const evaluateGateTool = defineTool({
  name: 'evaluate_gate',
  title: 'Evaluate gate',
  scope: 'gate:evaluate',
  description: (env) =>
    [
      'Ask the gate whether an action may proceed. Call it BEFORE any consequential action (payments, sending ' +
        'messages or e-mail, deleting or changing data, deploying, any call with side effects), with the ' +
        "action's name and arguments. The verdict is Allow, Warn or Block:",
      '- Block: do NOT perform the action. Tell the user why (read reason and reasons[].message) and what would ' +
        'unblock it (for example a missing or conflicted state item, listed in reasons[].keys).',
      '- Block with approval.status "pending" (reason approval_required): the action is HELD until a person ' +
        'approves exactly this action. Do not perform it and do not retry with other parameters; tell the user ' +
        'and call wait_for_approval with approval.id and this same call (session_id, action, params, context).',
      '- Warn: you may proceed, but tell the user the warning.',
      '- Allow: proceed.',
      'Every decision is recorded in the history under its decision_id.',
      'Fields:',
      `- ${sessionHelp(env)}`,
      '- action: dotted action name the policy matches on, e.g. payments.transfer, email.send, deploy.production.',
      '- params (optional): the action\'s arguments as a JSON object, e.g. {"amount": 9000, "currency": "EUR"}.',
      '- context (optional): extra facts about the situation as a JSON object.',
    ].join('\n'),
  input: (session) => EvaluateInputSchema.extend({ session_id: session }),
  output: DecisionSchema,
  // It changes no state; it only appends an audit record. Read-only lets clients call it without a prompt.
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler(args, env) {
    const decision = await env.gatehouse.evaluate(
      { ...args, session_id: sessionOf(env, args.session_id) },
      env.context,
    );
    return { structured: decision, text: renderDecision(decision) };
  },
});
