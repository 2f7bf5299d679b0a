/**
 * The binding of an approval: a digest Gatehouse computes itself, at the enforcement point, over
 * everything that made the held decision what it was. It is never taken from a caller.
 *
 * What it covers, as RFC 8785 canonical JSON (`canonicalJson`), hashed with SHA-256:
 * - `tenant`, `session_id`, `action`;
 * - `params`: the action's parameters as the contract parsed them (`EvaluateInputSchema`: a JSON
 *   object of at most 16 KiB and 32 levels, finite numbers only). Canonical JSON normalises key
 *   order, whitespace, string escapes and number spelling (`1.0`, `1e0` and `1` are one number;
 *   `-0` is `0`). It does not coerce types: `{"id": "7"}` and `{"id": 7}` are different actions,
 *   exactly as the policy's CEL sees them. Absent keys stay absent (Gatehouse knows no tool
 *   schema to fill defaults from);
 * - `state_versions`: the version of every state item the decision read (`GateResult.stateVersions`):
 *   required keys, keys its rules name, and every key its evaluation actually looked up, however
 *   computed; a key read while absent as version 0, and after an enumeration of `state` every key
 *   plus `"*"` (the number of items). So a changed item, an item that appears where the decision
 *   saw none, or any new item after an enumeration breaks the binding;
 * - `open_conflicts`: the IDs of the session's open conflicts, when there are any. A conflict
 *   contests an item without giving it a new version (a lower-trust source disagreed with it), so
 *   a conflict opened or settled after approval breaks the binding: the approver saw the state
 *   uncontested, or contested by exactly these. Left out when there are none, so the digest of
 *   an evaluation without conflicts is what it was before this field;
 * - `policy_revision`: the content hash of the policy in force;
 * - `rules`: the names of the rules that held the action, so an approval for one rule never
 *   releases a hold by another.
 * `context` is left out on purpose: it is caller-supplied metadata (tool call IDs, traces) that
 * differs on every call; rules that read it are still evaluated on every call.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonicalJson.js';
import type { Approval } from '../schemas.js';
import { MASKED_SECRET } from '../state/classify.js';

/** What an approval is bound to. */
export interface ApprovalBinding {
  tenantId: string;
  sessionId: string;
  action: string;
  params: Record<string, unknown>;
  stateVersions: Readonly<Record<string, number>>;
  /** IDs of the session's open conflicts; empty or absent when there are none. */
  openConflicts?: readonly string[];
  policyRevision: string;
  rules: readonly string[];
}

/**
 * The format version of the digest input: bumped if its shape ever changes. (Recording more of
 * the keys read in `state_versions` did not change it: an approval made before still matches
 * exactly the evaluations whose reads its record covers.)
 */
const BINDING_VERSION = 1;

/**
 * SHA-256 (hex) over the canonical JSON of the binding.
 * @example approvalDigest({ tenantId: 'default', sessionId: 's1', action: 'payments.transfer',
 *   params: { amount: 9000 }, stateVersions: { 'budget.limit': 1 }, policyRevision: 'ab…', rules: ['large_transfer'] })
 */
export function approvalDigest(binding: ApprovalBinding): string {
  const canonical = canonicalJson({
    v: BINDING_VERSION,
    tenant: binding.tenantId,
    session_id: binding.sessionId,
    action: binding.action,
    params: binding.params,
    state_versions: binding.stateVersions,
    ...(binding.openConflicts?.length ? { open_conflicts: [...binding.openConflicts].sort() } : {}),
    policy_revision: binding.policyRevision,
    rules: [...binding.rules].sort(),
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/** True when a string in `value` (a key or a leaf) holds the masked-secret marker. */
function holdsMasked(value: unknown): boolean {
  if (typeof value === 'string') return value.includes(MASKED_SECRET);
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(holdsMasked);
  return Object.entries(value).some(([key, v]) => key.includes(MASKED_SECRET) || holdsMasked(v));
}

/**
 * The digest an approval shows (API, CLI, MCP, the `approval.requested` event): its binding
 * digest, unless a secret in its params is shown masked. The binding digest is an unsalted hash of
 * the raw params and of everything else the approval shows, so beside the masked params it gives a
 * short secret away (a 4-digit passcode in 10,000 tries, a weak password by a dictionary). Such an
 * approval shows the digest of what it shows instead: the same binding over its masked params,
 * without open conflicts (an approval does not list them). The binding digest stays in the store,
 * where evaluations look it up; it is never shown. An erased approval's digest is shown as it is.
 * @example shownDigest('default', approval) // approval.digest when nothing in its params was masked
 */
export function shownDigest(tenantId: string, approval: Approval): string {
  if (approval.digest.startsWith('erased:') || !holdsMasked(approval.params)) return approval.digest;
  return approvalDigest({
    tenantId,
    sessionId: approval.session_id,
    action: approval.action,
    params: approval.params,
    stateVersions: approval.state_versions,
    policyRevision: approval.policy.revision,
    rules: approval.rules,
  });
}

/** The approval as shown: {@link shownDigest} in place of its binding digest. */
export function shownApproval(tenantId: string, approval: Approval): Approval {
  const digest = shownDigest(tenantId, approval);
  return digest === approval.digest ? approval : { ...approval, digest };
}
