/**
 * `record_state`: record a value the conversation relies on in governed state.
 */
import { maxClaimableTrust, RecordStateInputSchema, RecordStateResultSchema } from '../../../src/index.js';
import { renderRecordState } from '../toolResults.js';
import { defineTool } from './defineTool.js';
import { sessionHelp, sessionOf, type ToolEnvironment } from './toolEnvironment.js';

const SOURCE_MEANING: Record<string, string> = {
  system: 'set by the operator or platform',
  user_input: 'only what the user stated explicitly',
  tool_output: 'a result returned by a tool or API',
  retrieval: 'a document, search or database lookup',
  agent_inference: 'your own conclusion or estimate',
};

const TYPE_MEANING: Record<string, string> = {
  fact: 'a known value',
  assumption: 'believed but unverified',
  preference: 'what the user prefers',
  constraint: 'a limit that must hold',
};

/** The description tells the model which sources it may claim and which values it cannot overwrite. */
function describe(env: ToolEnvironment): string {
  const policy = env.policy;
  const claimable = env.context.allowedSources.filter((s) => policy.sources[s] !== undefined);
  const maxTrust = maxClaimableTrust(policy.sources, claimable);
  const higher = Object.entries(policy.sources)
    .filter(([, trust]) => trust > maxTrust)
    .map(([source, trust]) => `${source} ${trust}`);
  const sourceHelp = claimable
    .map((s) => `${s} (trust ${policy.sources[s]}${SOURCE_MEANING[s] ? `: ${SOURCE_MEANING[s]}` : ''})`)
    .join('; ');
  const typeHelp = policy.types.map((t) => (TYPE_MEANING[t] ? `${t} (${TYPE_MEANING[t]})` : t)).join(', ');
  return [
    'Record a value this conversation relies on in Gatehouse governed state, so later gate checks ' +
      '(evaluate_gate) decide on it. Call it when the user states a fact you will rely on (a budget, a limit, ' +
      'a deadline, a preference), and when a tool result or retrieved document gives a value you will act on. ' +
      'Every accepted change is a new version in a tamper-evident history.',
    'Fields:',
    `- ${sessionHelp(env)}`,
    '- key: dotted lower-case name with at least two segments, e.g. budget.limit, user.email, deploy.freeze_until.',
    '- value: the value as a string (numbers as plain digits, e.g. "5000").',
    `- type: ${typeHelp}.`,
    `- source: where the value comes from; claim its true origin. You may claim: ${sourceHelp || 'none'}. Any other source is refused (forbidden).`,
    '- expected_version (optional): write only if the item is at this version (0: it must not exist yet).',
    '- metadata (optional): a small JSON object, e.g. {"tool": "crm.lookup"}.',
    `You cannot overwrite a value that came from a higher-trust source${higher.length > 0 ? ` (${higher.join(', ')})` : ''}: ` +
      'a different value is then recorded as a conflict (outcome "conflict"), the value in force stays, and a ' +
      'user must resolve it. Writing the same value again changes nothing.',
  ].join('\n');
}

/** `record_state`: scope `state:write`. */
export const recordStateTool = defineTool({
  name: 'record_state',
  title: 'Record state',
  scope: 'state:write',
  description: describe,
  input: (session) => RecordStateInputSchema.extend({ session_id: session }),
  output: RecordStateResultSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async handler(args, env) {
    const result = await env.gatehouse.recordState(
      { ...args, session_id: sessionOf(env, args.session_id) },
      env.context,
    );
    return { structured: result, text: renderRecordState(result) };
  },
});
