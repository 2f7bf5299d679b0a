/**
 * Approvals: reading (with lazy expiry and a bounded long-poll), listing, approving and denying.
 * Creating and consuming them is part of an evaluation (`heldDecisions.ts`).
 */
import { shownApproval } from '../approvals/approvalDigest.js';
import { createApprovalWaiters, FIRST_POLL_MS, MAX_POLL_MS } from '../approvals/approvalWaiters.js';
import { assertMayDecide, callerIdentity, IN_PROCESS_CALLER, mayRead } from '../approvals/approverCheck.js';
import { GatehouseError } from '../errors.js';
import type { CallContext, Gatehouse } from '../gatehouseTypes.js';
import {
  type Approval,
  ApprovalQuerySchema,
  ApprovalWaitSchema,
  DecideApprovalInputSchema,
  isPlausibleId,
} from '../schemas.js';
import { maskSecrets } from '../state/maskSecrets.js';
import { parseInput } from '../validation.js';
import type { EventDraft } from './appendEvents.js';
import { sessionSecrets } from './eventSecrets.js';
import { expireApproval, isDue } from './heldDecisions.js';
import { assertPlausibleId, notFound } from './notFound.js';
import type { OperationContext } from './operationContext.js';

/** Due approvals expired per transaction by a listing (it loops until none is left). */
const EXPIRY_BATCH = 200;

const CURSOR_PREFIX = 'apr:v1:';

function encodeApprovalCursor(approvalId: string): string {
  return Buffer.from(`${CURSOR_PREFIX}${approvalId}`).toString('base64url');
}

function decodeApprovalCursor(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const id = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : '';
  if (!isPlausibleId(id)) {
    throw new GatehouseError('invalid_request', 'Invalid cursor: not a cursor returned by this API.', {
      errors: [{ path: 'cursor', message: 'not a cursor returned by this API' }],
    });
  }
  return id;
}

/** Approvals: read (lazy expiry, long-poll), list, approve, deny. */
export function approvalOperations(
  shared: OperationContext,
): Pick<Gatehouse, 'getApproval' | 'listApprovals' | 'approve' | 'deny'> {
  const { store, tenantOf, append, now } = shared;
  const waiters = createApprovalWaiters();

  /** Reads an approval, expiring it (in its own transaction, with its event) when it is due. */
  async function readFresh(tenantId: string, approvalId: string): Promise<Approval> {
    const approval = await store.getApproval(tenantId, approvalId);
    if (!approval) throw notFound(`Approval '${approvalId}'`);
    const at = now();
    if (!isDue(approval, at)) return approval;
    return shared.transaction(async (tx) => {
      await tx.lockChainHead(tenantId);
      const current = await tx.getApproval(tenantId, approvalId);
      if (!current || !isDue(current, at)) return current ?? approval;
      const drafts: EventDraft[] = [];
      await expireApproval(tx, tenantId, current, at, drafts);
      await append(tx, tenantId, drafts);
      return { ...current, status: 'expired', updated_at: at };
    });
  }

  async function decide(
    verdict: 'approved' | 'denied',
    approvalId: string,
    rawInput: unknown,
    ctx: CallContext | undefined,
  ): Promise<Approval> {
    const input = parseInput(
      DecideApprovalInputSchema,
      rawInput ?? {},
      verdict === 'approved' ? 'approve' : 'deny',
    );
    assertPlausibleId(approvalId, 'Approval');
    const tenantId = tenantOf(ctx);
    const outcome = await shared.transaction(async (tx) => {
      await tx.lockChainHead(tenantId);
      const approval = await tx.getApproval(tenantId, approvalId);
      if (!approval) throw notFound(`Approval '${approvalId}'`);
      const at = now();
      if (isDue(approval, at)) {
        // Commit the expiry (and its event), then refuse: the refusal must not roll it back.
        const drafts: EventDraft[] = [];
        await expireApproval(tx, tenantId, approval, at, drafts);
        await append(tx, tenantId, drafts, ctx);
        return { refused: { ...approval, status: 'expired' as const } };
      }
      if (approval.status !== 'pending') return { refused: approval };
      assertMayDecide(approval, ctx);
      const decidedBy = callerIdentity(ctx) ?? IN_PROCESS_CALLER;
      const comment =
        input.comment === undefined
          ? null
          : (maskSecrets(
              input.comment,
              'comment',
              await sessionSecrets(tx, tenantId, approval.session_id),
            ) as string);
      const changed = await tx.transitionApproval(tenantId, approvalId, {
        from: ['pending'],
        to: verdict,
        updated_at: at,
        decided_by: decidedBy,
        decided_at: at,
        comment,
      });
      if (!changed) return { refused: approval };
      await append(
        tx,
        tenantId,
        [
          {
            type: verdict === 'approved' ? 'approval.approved' : 'approval.denied',
            session_id: approval.session_id,
            data: {
              approval_id: approval.id,
              action: approval.action,
              decided_by: decidedBy,
              comment,
            },
          },
        ],
        ctx,
      );
      const decided: Approval = {
        ...approval,
        status: verdict,
        decided_by: decidedBy,
        decided_at: at,
        comment,
        updated_at: at,
      };
      return { decided };
    });
    if (outcome.refused) {
      throw new GatehouseError(
        'already_recorded',
        `Approval '${approvalId}' is ${outcome.refused.status}; only a pending approval can be approved or denied.`,
      );
    }
    waiters.notify(`${tenantId}\n${approvalId}`);
    return shownApproval(tenantId, outcome.decided!);
  }

  return {
    async getApproval(approvalId, rawQuery, ctx) {
      const query = parseInput(ApprovalWaitSchema, rawQuery ?? {}, 'approval query');
      assertPlausibleId(approvalId, 'Approval');
      const tenantId = tenantOf(ctx);
      let approval = await readFresh(tenantId, approvalId);
      // Before any wait: a key that may not read it is answered as if it did not exist.
      if (!mayRead(approval, ctx)) throw notFound(`Approval '${approvalId}'`);
      // The wait is bounded in wall-clock time (a request's lifetime); expiry follows the
      // injected clock, checked at every read.
      const deadline = performance.now() + (query.wait ?? 0) * 1000;
      let pause = FIRST_POLL_MS;
      while (approval.status === 'pending') {
        const left = deadline - performance.now();
        if (left <= 0 || ctx?.signal?.aborted) break;
        await waiters.sleep(`${tenantId}\n${approvalId}`, Math.min(pause, left), ctx?.signal);
        if (ctx?.signal?.aborted) break;
        pause = Math.min(pause * 2, MAX_POLL_MS);
        approval = await readFresh(tenantId, approvalId);
      }
      return shownApproval(tenantId, approval);
    },

    async listApprovals(rawQuery, ctx) {
      const query = parseInput(ApprovalQuerySchema, rawQuery ?? {}, 'approval query');
      const tenantId = tenantOf(ctx);
      const beforeId = query.cursor === undefined ? undefined : decodeApprovalCursor(query.cursor);
      // Expire what is due first, so the status filter and the page agree with the clock.
      for (;;) {
        const at = now();
        const expired = await shared.transaction(async (tx) => {
          await tx.lockChainHead(tenantId);
          const due = await tx.listDueApprovals(tenantId, at, EXPIRY_BATCH);
          const drafts: EventDraft[] = [];
          for (const approval of due) await expireApproval(tx, tenantId, approval, at, drafts);
          await append(tx, tenantId, drafts);
          return due.length;
        });
        if (expired < EXPIRY_BATCH) break;
      }
      const rows = await store.listApprovals(tenantId, {
        status: query.status,
        session_id: query.session_id,
        before_id: beforeId,
        limit: query.limit + 1,
      });
      const page = rows.slice(0, query.limit);
      const last = page[page.length - 1];
      return {
        approvals: page.map((approval) => shownApproval(tenantId, approval)),
        next_cursor: rows.length > query.limit && last ? encodeApprovalCursor(last.id) : null,
      };
    },

    approve: (approvalId, input, ctx) => decide('approved', approvalId, input, ctx),
    deny: (approvalId, input, ctx) => decide('denied', approvalId, input, ctx),
  };
}
