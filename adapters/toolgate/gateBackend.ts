/**
 * The one seam between the agent-framework faces (LangChain, the AI SDK, OpenAI Agents) and a
 * Gatehouse: a few calls, satisfied both by an in-process core and by the `/v1` client, so an
 * agent moves from embedded to remote by swapping one object.
 */
import type {
  Approval,
  ApprovalWait,
  CallContext,
  Decision,
  EvaluateInput,
  Gatehouse,
  OutcomeInput,
  RecordStateInput,
  RecordStateResult,
} from '../../src/index.js';

/**
 * What the framework faces need from a Gatehouse. A `Gatehouse` from
 * `createGatehouse` and a client from `createGatehouseClient` both satisfy it as they are; use
 * {@link inProcessBackend} to bind a tenant or source limits to an in-process core.
 */
export interface GateBackend {
  /** Asks the gate about one action; a Block is a decision, not an error. */
  evaluate(input: EvaluateInput): Promise<Decision>;
  /** Records what happened after a decision, once. */
  recordOutcome(decisionId: string, input: OutcomeInput): Promise<unknown>;
  /** Records one state item. */
  recordState(input: RecordStateInput): Promise<RecordStateResult>;
  /**
   * Reads an approval, waiting up to `wait` seconds (at most 60) for a decision. Needed only by
   * LangChain's `onApproval: 'wait'`.
   */
  getApproval?(approvalId: string, query?: ApprovalWait): Promise<Approval>;
}

/**
 * A {@link GateBackend} over an in-process core with a fixed {@link CallContext} (tenant,
 * sources the agent may claim).
 * @example
 * const backend = inProcessBackend(gatehouse, { tenantId: 'acme', allowedSources: ['agent_inference'] });
 */
export function inProcessBackend(gatehouse: Gatehouse, ctx: CallContext = {}): GateBackend {
  return {
    evaluate: (input) => gatehouse.evaluate(input, ctx),
    recordOutcome: (decisionId, input) => gatehouse.recordOutcome(decisionId, input, ctx),
    recordState: (input) => gatehouse.recordState(input, ctx),
    getApproval: (approvalId, query) => gatehouse.getApproval(approvalId, query, ctx),
  };
}
