/**
 * The gate: a YAML + CEL policy compiled once, deciding Allow / Warn / Block for an action from
 * its parameters and the session's governed state.
 */
export { combineVerdicts } from './combineVerdicts.js';
export { type CompilePolicyOptions, compilePolicy } from './compilePolicy.js';
export { DEFAULT_POLICY_YAML, defaultPolicy } from './defaultPolicy.js';
export type {
  ApprovalHold,
  CompiledPolicy,
  ConflictView,
  GateInput,
  GateReason,
  GateResult,
  PolicyRuleInfo,
  RetentionSettings,
  StateView,
  Verdict,
} from './gateTypes.js';
export { loadPolicyFile } from './loadPolicy.js';
export { DEFAULT_TYPES, RETENTION_FLOOR_DAYS } from './policySchema.js';
export { KEY_SET_READ } from './stateReads.js';
export { conflictViewOf, gateStateOf, stateViewOf } from './stateView.js';
