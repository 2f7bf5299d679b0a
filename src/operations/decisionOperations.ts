/**
 * Gate decisions: evaluating an action on the session's state, reading a decision, recording its outcome.
 */
import { GatehouseError } from '../errors.js';
import { conflictViewOf, gateStateOf } from '../gate/index.js';
import type { CallContext, DecisionRecord, Gatehouse } from '../gatehouseTypes.js';
import { isoTime } from '../runtime.js';
import { type Decision, EvaluateInputSchema, OutcomeInputSchema } from '../schemas.js';
import { collectSecrets, maskDecision, maskSecrets } from '../state/maskSecrets.js';
import { parseInput } from '../validation.js';
import { sessionSecrets } from './eventSecrets.js';
import { settleHeldDecision } from './heldDecisions.js';
import { assertPlausibleId, notFound } from './notFound.js';
import type { OperationContext } from './operationContext.js';
import { assertUnchanged, itemsRead, StaleRead } from './staleReads.js';

/**
 * Evaluations of one call: another one runs when state it read was erased before its append
 * (staleReads.ts); past this many, the call fails `unavailable` rather than loop.
 */
const EVALUATION_ATTEMPTS = 5;

type ParsedEvaluation = ReturnType<typeof parseInput<typeof EvaluateInputSchema>>;

/** Gate decisions: evaluating an action on the session's state, reading a decision, recording its outcome. */
export function decisionOperations(
  shared: OperationContext,
): Pick<Gatehouse, 'evaluate' | 'getDecision' | 'recordOutcome'> {
  const { store, ids, clock, tenantOf, append, tenantTransaction } = shared;

  /**
   * One evaluation on the session's items as read now.
   * @throws {StaleRead} when an item it depends on was erased before its append (nothing is written).
   */
  async function evaluateOnce(
    input: ParsedEvaluation,
    tenantId: string,
    ctx: CallContext | undefined,
  ): Promise<Decision> {
    const activePolicy = await shared.policyFor(tenantId);
    const items = await store.listItems(tenantId, input.session_id);
    // An open conflict always marks its item conflicted, so most sessions need no second query.
    const conflicts = items.some((i) => i.status === 'conflicted')
      ? await store.listConflicts(tenantId, { session_id: input.session_id, status: 'open' })
      : [];
    const state = gateStateOf(items);
    const secrets = new Set(items.filter((i) => i.sensitivity === 'secret').map((i) => i.value));
    const params = input.params ?? {};
    const context = input.context ?? {};
    // A secret among the caller's own fields is masked wherever it is quoted too (a rule's
    // message, an error naming the value): the walk runs only when masking found one.
    let maskedParams = maskSecrets(params, 'params', secrets);
    let maskedContext = maskSecrets(context, 'context', secrets);
    const known = secrets.size;
    if (maskedParams !== params) collectSecrets(params, 'params', secrets);
    if (maskedContext !== context) collectSecrets(context, 'context', secrets);
    if (secrets.size > known) {
      maskedParams = maskSecrets(params, 'params', secrets);
      maskedContext = maskSecrets(context, 'context', secrets);
    }
    const evaluatedAt = clock();
    const result = activePolicy.evaluate({
      action: input.action,
      params,
      context,
      state,
      conflicts: conflicts.map(conflictViewOf),
      now: evaluatedAt,
    });
    const read = itemsRead(state, result.stateVersions);
    const decision: Decision = {
      decision_id: ids('dec'),
      verdict: result.verdict,
      allowed: result.verdict !== 'Block',
      reason: result.reason,
      reasons: result.reasons,
      shadow: result.shadow,
      session_id: input.session_id,
      action: input.action,
      policy: { revision: activePolicy.revision },
      state_versions: result.stateVersions,
      evaluated_at: isoTime(evaluatedAt),
    };
    if (result.hold !== undefined) {
      // A rule with `approval:` holds it: the approval bound to it decides (heldDecisions.ts).
      return settleHeldDecision(shared, {
        tenantId,
        ctx,
        decision,
        result: { ...result, hold: result.hold },
        params,
        maskedParams: maskedParams as Record<string, unknown>,
        maskedContext: maskedContext as Record<string, unknown>,
        secrets,
        conflicts,
        read,
      });
    }
    const masked = maskDecision(decision, secrets);
    const event = {
      type: 'gate_evaluation',
      session_id: input.session_id,
      decision_id: decision.decision_id,
      data: { ...masked, params: maskedParams, context: maskedContext },
    } as const;
    // Only the check and the append run in the transaction: it may run again (group commit), it
    // has no other effect. The items it checks are locked and read up front with the batch's.
    await tenantTransaction(
      tenantId,
      async (tx) => {
        await assertUnchanged(tx, tenantId, input.session_id, read, conflicts);
        await append(tx, tenantId, [event], ctx);
      },
      { rerunnable: true, items: read.map((r) => ({ sessionId: input.session_id, key: r.key })) },
    );
    return masked;
  }

  return {
    async evaluate(rawInput, ctx) {
      const input = parseInput(EvaluateInputSchema, rawInput, 'gate evaluation');
      const tenantId = tenantOf(ctx);
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await evaluateOnce(input, tenantId, ctx);
        } catch (error) {
          if (!(error instanceof StaleRead)) throw error;
          if (attempt === EVALUATION_ATTEMPTS) {
            throw new GatehouseError(
              'unavailable',
              `Session '${input.session_id}' was erased during each of ${EVALUATION_ATTEMPTS} evaluations; retry.`,
              { cause: error },
            );
          }
        }
      }
    },

    async getDecision(decisionId, ctx) {
      assertPlausibleId(decisionId, 'Decision');
      const [event] = await store.queryEvents(tenantOf(ctx), {
        decision_id: decisionId,
        type: 'gate_evaluation',
        order: 'asc',
        limit: 1,
      });
      if (!event) throw notFound(`Decision '${decisionId}'`);
      return {
        ...(event.data as unknown as Decision & Pick<DecisionRecord, 'params' | 'context'>),
        event_id: event.event_id,
      };
    },

    async recordOutcome(decisionId, rawInput, ctx) {
      const input = parseInput(OutcomeInputSchema, rawInput, 'outcome');
      assertPlausibleId(decisionId, 'Decision');
      const tenantId = tenantOf(ctx);
      return tenantTransaction(tenantId, async (tx) => {
        // The chain head lock serialises outcome writers, so two concurrent reports cannot both pass the check.
        await tx.lockChainHead(tenantId);
        const events = await tx.queryEvents(tenantId, { decision_id: decisionId, order: 'asc', limit: 2 });
        const decision = events.find((e) => e.type === 'gate_evaluation');
        if (!decision) throw notFound(`Decision '${decisionId}'`);
        if (events.some((e) => e.type === 'action_outcome')) {
          throw new GatehouseError(
            'already_recorded',
            `An outcome for decision '${decisionId}' is already recorded.`,
          );
        }
        const [event] = await append(
          tx,
          tenantId,
          [
            {
              type: 'action_outcome',
              session_id: decision.session_id,
              decision_id: decisionId,
              data: {
                decision_id: decisionId,
                action: decision.data['action'],
                verdict: decision.data['verdict'],
                outcome: input.outcome,
                ...(input.detail === undefined
                  ? {}
                  : {
                      detail: maskSecrets(
                        input.detail,
                        'detail',
                        await sessionSecrets(tx, tenantId, decision.session_id),
                      ),
                    }),
              },
            },
          ],
          ctx,
        );
        const { decision_id: _d, ...rest } = event!;
        return rest;
      });
    },
  };
}
