/**
 * The values the gate takes and gives: its input (an action, its parameters and the session's
 * governed state) and its decision.
 */

/** A policy's `retention:`: periods in days (see docs/data-lifecycle.md). */
export interface RetentionSettings {
  /** Values of events older than this are erased (their envelopes stay). */
  values_after?: number | undefined;
  /** Events older than this are pruned behind a signed checkpoint. */
  history_after?: number | undefined;
  /** `history_after` may be shorter than the 183-day floor. */
  allow_below_floor: boolean;
}

/** A gate decision. `Block` is the only verdict that stops the action. */
export type Verdict = 'Allow' | 'Warn' | 'Block';

/** One objection raised while evaluating an action. */
export interface GateReason {
  /**
   * The rule's `name`, or a built-in check: `required_missing`, `required_conflicted`,
   * `required_wrong_type`, `required_untrusted`, `required_low_trust`, `open_conflicts`,
   * `default_verdict`, `policy_error`.
   */
  rule: string;
  verdict: 'Warn' | 'Block';
  /** One human sentence. */
  message: string;
  /** The state keys involved (sorted), `[]` when none. */
  keys: string[];
}

/** A current state item of the session, as the gate (and its CEL rules) sees it. */
export interface StateView {
  value: string;
  /** `value` read as a finite number, or `null` when it is not one. */
  number: number | null;
  type: string;
  source: string;
  /** The trust rank of `source`. */
  trust: number;
  version: number;
  status: 'current' | 'conflicted';
  /** ISO 8601 timestamp of the current version. */
  updated_at: string;
}

/** An unresolved conflict of the session. */
export interface ConflictView {
  conflict_id: string;
  key: string;
  current_value: string;
  proposed_value: string;
  proposed_source: string;
  /** ISO 8601 timestamp. */
  created_at: string;
}

/** Everything one gate evaluation reads. */
export interface GateInput {
  action: string;
  /** The tool's arguments (a JSON object). */
  params: Record<string, unknown>;
  /** Caller-supplied context (a JSON object). */
  context: Record<string, unknown>;
  /** The session's state, by canonical key. */
  state: Record<string, StateView>;
  /** The session's unresolved conflicts. */
  conflicts: ConflictView[];
  /** The evaluation time (injected, so tests never depend on the clock). */
  now: Date;
}

/**
 * What a held Block asks for: set on a {@link GateResult} only when every Block reason comes from
 * a rule with `approval:` (see the policy file's "Approvals").
 */
export interface ApprovalHold {
  /** Names of the rules that hold the action (sorted, unique). */
  rules: string[];
  /** How long the request (and an unused approval) lives, in seconds. */
  expiresInSeconds: number;
  /** One list per rule that names approvers: an approver needs a label or scope of each list. */
  approvers: string[][];
  /** Evaluations one approval releases. */
  uses: number;
  /** Whether the key that asked may approve its own request. */
  allowSelfApproval: boolean;
}

/** The outcome of one gate evaluation. */
export interface GateResult {
  /** The strictest verdict among `reasons`; `Allow` when there are none. */
  verdict: Verdict;
  /** One human sentence explaining the verdict. */
  reason: string;
  /** Every enforced objection, in evaluation order. */
  reasons: GateReason[];
  /** Objections from rules in `mode: shadow`: recorded, never enforced. */
  shadow: GateReason[];
  /** State keys the decision read, present or absent (sorted, unique): see {@link CompiledPolicy.evaluate}. */
  keysRead: string[];
  /**
   * The version of every key in `keysRead`, 0 for a key read while absent; plus `'*'` (the number
   * of items) when a rule read the whole key set (`exists`, `all`, `map`, `filter`, `size()` over
   * `state`). A decision's `state_versions`, and what an approval is bound to.
   */
  stateVersions: Record<string, number>;
  /** Present when this Block may be held for a person's approval instead. */
  hold?: ApprovalHold;
}

/** A named rule of a policy, as policy tests and replays report on it. */
export interface PolicyRuleInfo {
  name: string;
  verdict: 'Warn' | 'Block';
  mode: 'enforce' | 'shadow';
  /** `global` for a rule under `rules`, else the action pattern of its entry. */
  scope: string;
}

/** A policy compiled once, ready to evaluate many actions. */
export interface CompiledPolicy {
  /** SHA-256 (hex) of the canonical JSON (RFC 8785) of the validated document: formatting-independent. */
  revision: string;
  /** The YAML text it was compiled from. */
  source: string;
  /** Every named rule: the global ones first, then each action entry's, in file order. */
  rules: readonly PolicyRuleInfo[];
  /** Allowed state item types. */
  types: readonly string[];
  /** Source name → trust rank. */
  sources: Readonly<Record<string, number>>;
  /** Trust strictly below this is "low trust". */
  lowTrustBelow: number;
  /** The verdict for an action no `actions` entry matches. */
  defaultVerdict: Verdict;
  /** The policy's `retention:` (periods in days), when it has one. */
  retention?: Readonly<RetentionSettings>;
  /**
   * Decides one action. Synchronous and allocation-light; never throws because of a rule
   * (a rule that fails gives its `on_error` verdict: fail closed).
   *
   * `keysRead` holds the required keys of the matching entries, the state keys that appear as
   * string literals in the evaluated rules (conditions and message placeholders) and exist in
   * `input.state`, and every key the evaluation actually looked up (however it was computed,
   * present or not; a name that is no canonical key is left out); after an enumeration of
   * `state`, every key of it.
   */
  evaluate(input: GateInput): GateResult;
}
