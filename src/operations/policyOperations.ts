/**
 * The policy lifecycle: the active policy, activating a new one (optimistically, on the revision
 * it replaces), the stored revisions, and replaying recorded decisions against a candidate.
 */
import { hasScope, missingScope } from '../auth/apiKeys.js';
import { principalOf } from '../auth/principalRecord.js';
import { canonicalJson } from '../canonicalJson.js';
import { GatehouseError } from '../errors.js';
import { compilePolicy } from '../gate/compilePolicy.js';
import type { CompiledPolicy } from '../gate/gateTypes.js';
import type { Gatehouse } from '../gatehouseTypes.js';
import {
  type ActivePolicy,
  PolicyRevisionQuerySchema,
  PutPolicyInputSchema,
  ReplayInputSchema,
  RevisionIdSchema,
} from '../lifecycle/lifecycleSchemas.js';
import { replayDecisions } from '../lifecycle/replayDecisions.js';
import type { ActivePolicyPointer } from '../store.js';
import { parseInput } from '../validation.js';
import { notFound } from './notFound.js';
import type { OperationContext } from './operationContext.js';

/** The answer shape of the active policy. */
function activeView(policy: CompiledPolicy, pointer: ActivePolicyPointer | null): ActivePolicy {
  const recorded = pointer !== null && pointer.revision === policy.revision;
  return {
    revision: policy.revision,
    source: policy.source,
    rules: policy.rules.map((r) => ({ ...r })),
    activated_by: recorded ? pointer.activated_by : null,
    activated_at: recorded ? pointer.activated_at : null,
    seq: recorded ? pointer.seq : null,
  };
}

function encodeRevisionCursor(seq: number): string {
  return Buffer.from(`r1:${seq}`).toString('base64url');
}

function decodeRevisionCursor(cursor: string): number {
  const match = /^r1:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) {
    throw new GatehouseError('invalid_request', 'Invalid cursor: not a cursor returned by this API.', {
      errors: [{ path: 'cursor', message: 'not a cursor returned by this API' }],
    });
  }
  return Number(match[1]);
}

/** The policy lifecycle operations. */
export function policyOperations(
  shared: OperationContext,
): Pick<
  Gatehouse,
  'getActivePolicy' | 'activatePolicy' | 'listPolicyRevisions' | 'getPolicyRevision' | 'replayPolicy'
> {
  const { store, tenantOf, policies, append } = shared;

  return {
    async getActivePolicy(ctx) {
      const tenantId = tenantOf(ctx);
      const policy = await policies.resolve(tenantId);
      return activeView(policy, policies.pointer(tenantId));
    },

    async activatePolicy(rawInput, ctx) {
      const expected = rawInput?.expected_revision;
      const input = parseInput(PutPolicyInputSchema, { policy: rawInput?.policy }, 'policy');
      if (expected === undefined || expected === '') {
        throw new GatehouseError(
          'precondition_required',
          'Activating a policy needs the revision it replaces (HTTP: If-Match with the ETag of GET /v1/policy).',
        );
      }
      // Validated like a policy file: every problem with line:col, and nothing changes.
      const policy = compilePolicy(input.policy, { source: 'policy' });
      const tenantId = tenantOf(ctx);
      const active = await policies.resolve(tenantId);
      // Allowing history below the floor is an admin's call, as setting retention with PUT
      // /v1/retention is: a policy author's key must not lower it and so have the history pruned.
      // A policy that keeps the active one's retention as it is changes nothing of it.
      const scopes = ctx?.scopes;
      if (
        policy.retention?.allow_below_floor === true &&
        scopes !== undefined &&
        !hasScope({ scopes }, 'admin') &&
        canonicalJson(policy.retention) !== canonicalJson(active.retention ?? null)
      ) {
        throw new GatehouseError(
          'forbidden',
          "A policy whose retention allows history below the floor (allow_below_floor: true) needs the 'admin' scope to activate, as PUT /v1/retention does.",
          missingScope('admin', ctx?.principal),
        );
      }
      const { pointer } = await policies.activate(tenantId, policy, {
        by: ctx?.keyId ?? ctx?.actor ?? 'in-process',
        expected,
        principal: principalOf(ctx),
      });
      return activeView(policy, pointer);
    },

    async listPolicyRevisions(rawQuery, ctx) {
      const query = parseInput(PolicyRevisionQuerySchema, rawQuery ?? {}, 'query');
      const tenantId = tenantOf(ctx);
      const active = (await policies.resolve(tenantId)).revision;
      const rows = await store.listPolicyRevisions(tenantId, {
        limit: query.limit + 1,
        before_seq: query.cursor === undefined ? undefined : decodeRevisionCursor(query.cursor),
      });
      const page = rows.slice(0, query.limit);
      const last = page[page.length - 1];
      return {
        revisions: page.map(({ source: _s, seq: _q, ...row }) => ({
          ...row,
          active: row.revision === active,
        })),
        next_cursor: rows.length > query.limit && last ? encodeRevisionCursor(last.seq) : null,
      };
    },

    async getPolicyRevision(revision, ctx) {
      const tenantId = tenantOf(ctx);
      if (!RevisionIdSchema.safeParse(revision).success) throw notFound(`Policy revision '${revision}'`);
      const row = await store.getPolicyRevision(tenantId, revision);
      if (!row) throw notFound(`Policy revision '${revision}'`);
      const active = (await policies.resolve(tenantId)).revision;
      const { seq: _q, ...rest } = row;
      return { ...rest, active: row.revision === active };
    },

    async replayPolicy(rawInput, ctx) {
      const input = parseInput(ReplayInputSchema, rawInput, 'replay');
      const tenantId = tenantOf(ctx);
      const candidate =
        input.policy !== undefined
          ? compilePolicy(input.policy, { source: 'candidate' })
          : await policies.compiled(tenantId, input.revision!);
      const report = await replayDecisions({
        store,
        tenantId,
        candidate,
        since: input.since,
        until: input.until,
        sessionId: input.session_id,
        action: input.action,
        limit: input.limit,
        afterSeq: input.after_seq,
        examples: input.examples,
        // A replay whose caller went away stops there, and records nothing.
        signal: ctx?.signal,
      });
      const [event] = await shared.transaction((tx) =>
        append(
          tx,
          tenantId,
          [
            {
              type: 'policy.replayed',
              session_id: '',
              data: {
                revision: candidate.revision,
                filters: report.filters,
                decisions: report.decisions,
                unchanged: report.unchanged,
                changed: report.changed,
                rules_changed: report.rules_changed,
                pinned: report.pinned,
                unreplayable: report.unreplayable,
                by_verdict: report.by_verdict,
                from_seq: report.from_seq,
                to_seq: report.to_seq,
                stopped_by: report.stopped_by,
                example_decision_ids: report.examples.map((e) => e.decision_id),
              },
            },
          ],
          ctx,
        ),
      );
      return { ...report, event_id: event!.event_id };
    },
  };
}
