/**
 * The traced operations: evaluate, record state and read history each run in a span, whose
 * attributes are set from the result — IDs, names, verdicts, counts. Never a param, context or
 * state value, never a reason message (messages can quote params): those may be secrets.
 */
import type { Attributes } from '@opentelemetry/api';
import type { Gatehouse } from '../gatehouseTypes.js';
import type { Decision } from '../schemas.js';
import { decisionsCounter, inSpan, SPAN_ATTRIBUTES } from '../telemetry.js';

type Traced = Pick<Gatehouse, 'evaluate' | 'recordState' | 'readHistory'>;

/** A decision's span attributes. */
export function decisionAttributes(decision: Decision): Attributes {
  return {
    [SPAN_ATTRIBUTES.decisionId]: decision.decision_id,
    [SPAN_ATTRIBUTES.verdict]: decision.verdict,
    [SPAN_ATTRIBUTES.action]: decision.action,
    [SPAN_ATTRIBUTES.sessionId]: decision.session_id,
    [SPAN_ATTRIBUTES.rules]: decision.reasons.map((r) => r.rule),
    [SPAN_ATTRIBUTES.shadowRules]: decision.shadow.map((r) => r.rule),
    [SPAN_ATTRIBUTES.policyRevision]: decision.policy.revision,
  };
}

/** Wraps `evaluate`, `recordState` and `readHistory` in spans; counts decisions by verdict. */
export function tracedOperations(ops: Traced): Traced {
  return {
    evaluate: (input, ctx) =>
      inSpan('gatehouse.evaluate', {}, async (span) => {
        const decision = await ops.evaluate(input, ctx);
        if (span.isRecording()) span.setAttributes(decisionAttributes(decision));
        decisionsCounter().add(1, { [SPAN_ATTRIBUTES.verdict]: decision.verdict });
        return decision;
      }),

    recordState: (input, ctx) =>
      inSpan('gatehouse.record_state', {}, async (span) => {
        const result = await ops.recordState(input, ctx);
        if (span.isRecording()) {
          span.setAttributes({
            [SPAN_ATTRIBUTES.sessionId]: result.item.session_id,
            [SPAN_ATTRIBUTES.stateKey]: result.item.key,
            [SPAN_ATTRIBUTES.stateOutcome]: result.outcome,
            [SPAN_ATTRIBUTES.stateVersion]: result.item.version,
          });
        }
        return result;
      }),

    readHistory: (query, ctx) =>
      inSpan('gatehouse.read_history', {}, async (span) => {
        const page = await ops.readHistory(query, ctx);
        if (span.isRecording()) {
          // The query passed validation, so its fields are a session ID, a decision ID and an event type.
          span.setAttributes({
            ...(query?.session_id === undefined ? {} : { [SPAN_ATTRIBUTES.sessionId]: query.session_id }),
            ...(query?.decision_id === undefined ? {} : { [SPAN_ATTRIBUTES.decisionId]: query.decision_id }),
            ...(query?.type === undefined ? {} : { [SPAN_ATTRIBUTES.eventType]: query.type }),
            [SPAN_ATTRIBUTES.historyCount]: page.events.length,
          });
        }
        return page;
      }),
  };
}
