/**
 * Who may decide an approval: a caller that satisfies every `approvers` list of the rules that
 * held the action (a key label or a scope of each list), and that is none of the callers who asked
 * for it while it was pending (`requesters`, not only the first), unless every such rule says
 * `allow_self_approval: true`. And who may read one: see {@link mayRead}.
 */
import { GatehouseError } from '../errors.js';
import type { CallContext } from '../gatehouseTypes.js';
import { type Approval, SCOPES, type Scope } from '../schemas.js';

/** How an in-process caller (no API key) is named on the approvals it decides. */
export const IN_PROCESS_CALLER = 'in-process';

/** The caller's identity on an approval: its key ID, or `null` for an in-process call. */
export function callerIdentity(ctx: CallContext | undefined): string | null {
  return ctx?.keyId ?? null;
}

/** How the caller is listed among an approval's `requesters`: its key ID, or `in-process`. */
export function requesterIdentity(ctx: CallContext | undefined): string {
  return callerIdentity(ctx) ?? IN_PROCESS_CALLER;
}

/** True when the caller's evaluation asked for this approval (first or later). */
export function isRequester(approval: Approval, ctx: CallContext | undefined): boolean {
  return approval.requesters.includes(requesterIdentity(ctx));
}

function holds(ctx: CallContext | undefined, approver: string): boolean {
  if ((SCOPES as readonly string[]).includes(approver)) {
    // No scopes on the context: an in-process caller, which holds every scope.
    const scopes = ctx?.scopes;
    return scopes === undefined || scopes.includes('admin') || scopes.includes(approver as never);
  }
  return ctx?.labels?.includes(approver) ?? false;
}

/**
 * Scopes that read every approval of the tenant: the approvers, and the readers of the history
 * (whose `approval.requested` events carry the same params). `admin` holds every scope.
 */
const READ_ANY_SCOPES: readonly Scope[] = ['approvals:decide', 'history:read', 'admin'];

/**
 * True when the caller may read the approval: an in-process caller, a key with one of
 * {@link READ_ANY_SCOPES}, or (an agent's `gate:evaluate` key) one of its requesters. Any other
 * key of the tenant must not learn another agent's params by guessing or catching an ID.
 */
export function mayRead(approval: Approval, ctx: CallContext | undefined): boolean {
  const scopes = ctx?.scopes;
  if (scopes === undefined || scopes.some((scope) => READ_ANY_SCOPES.includes(scope))) return true;
  return isRequester(approval, ctx);
}

/**
 * @throws {GatehouseError} `forbidden` when the caller asked for this approval itself (and the
 *   policy does not allow that) or lacks a label or scope one of the rules requires
 */
export function assertMayDecide(approval: Approval, ctx: CallContext | undefined): void {
  if (!approval.allow_self_approval && isRequester(approval, ctx)) {
    throw new GatehouseError(
      'forbidden',
      `The caller that asked for approval '${approval.id}' cannot decide it; another approver must.`,
    );
  }
  for (const list of approval.approvers) {
    if (!list.some((approver) => holds(ctx, approver))) {
      throw new GatehouseError(
        'forbidden',
        `Approval '${approval.id}' needs an approver with one of: ${list.join(', ')}.`,
      );
    }
  }
}
