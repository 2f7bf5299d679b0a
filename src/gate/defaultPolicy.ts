/** The built-in policy, used when no policy file is given. */
import { compilePolicy } from './compilePolicy.js';
import type { CompiledPolicy } from './gateTypes.js';

/**
 * The built-in policy's YAML: every setting at its default and one guard, on `payments.*`: a
 * payment needs `budget.limit` from the user (or the system) and must stay within it. Every
 * other action is allowed unless the session has unresolved conflicts (Warn). Copy it as a
 * starting point; the commented example shows a global rule.
 */
export const DEFAULT_POLICY_YAML: string = `# Gatehouse policy (format version 1). Reference: the README, "Policy file".
version: 1

# Verdict for an action that no entry under \`actions\` matches: Allow | Warn | Block.
default_verdict: Allow

# Allowed state item types, and each source's trust rank (higher is more trusted).
types: [fact, assumption, preference, constraint]
sources:
  system: 4
  user_input: 3
  tool_output: 2
  retrieval: 1
  agent_inference: 1

# A required fact whose trust is below this gives a Warn (required_low_trust).
low_trust_below: 3

# Verdict when the session has unresolved conflicts on keys the action does not require
# (Allow turns the check off).
open_conflicts: Warn

# Rules evaluated for every action. Example:
#   - name: no_deploy_on_friday
#     when: "action.startsWith('deploy.') && now.getDayOfWeek() == 5"
#     verdict: Block
#     message: "No deploys on Friday ({action})."
rules: []

# Per-action entries, by exact name or glob ("payments.*": one segment, "payments.**": any).
# The built-in policy guards spending: a payment needs a budget the user set (or a system
# value) and must stay within it. Every other action is allowed (default_verdict).
actions:
  "payments.*":
    requires:
      - key: budget.limit
        min_trust: user_input
        types: [fact, constraint]
    rules:
      - name: over_budget
        when: "has(params.amount) && 'budget.limit' in state && double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}."
      - name: large_transfer
        when: "has(params.amount) && double(params.amount) > 10000.0"
        verdict: Warn
        mode: shadow        # reported in \`shadow\`, never enforced
`;

let cached: CompiledPolicy | undefined;

/** The compiled built-in policy ({@link DEFAULT_POLICY_YAML}); compiled once, then shared. */
export function defaultPolicy(): CompiledPolicy {
  cached ??= compilePolicy(DEFAULT_POLICY_YAML, { source: 'default policy' });
  return cached;
}
