/**
 * `createGatehouse` — the one entry point. Every face (HTTP, MCP, LangChain, CLI) calls these
 * methods; none of them holds a rule of its own. The operations live in `operations/`, one
 * module per area, over one shared {@link OperationContext}; the API's types in `gatehouseTypes.ts`.
 */

import type { Gatehouse, GatehouseOptions } from './gatehouseTypes.js';
import { approvalOperations } from './operations/approvalOperations.js';
import { decisionOperations } from './operations/decisionOperations.js';
import { erasureOperations } from './operations/erasureOperations.js';
import { historyOperations } from './operations/historyOperations.js';
import { legalHoldOperations } from './operations/legalHolds.js';
import { createOperationContext, type OperationContext } from './operations/operationContext.js';
import { policyOperations } from './operations/policyOperations.js';
import { pruneOperations } from './operations/pruneOperations.js';
import { retentionOperations } from './operations/retentionOperations.js';
import { stateOperations } from './operations/stateOperations.js';
import { tracedOperations } from './operations/tracedOperations.js';
import { webhookOperations } from './operations/webhookOperations.js';

/**
 * Creates the Gatehouse core over a Store.
 * @example
 * const gh = createGatehouse({ store: openSqliteStore({ filename: 'gh.db' }) });
 * await gh.recordState({ session_id: 's1', key: 'budget.limit', value: '5000', type: 'fact', source: 'user_input' });
 * const d = await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } });
 */
export function createGatehouse(options: GatehouseOptions): Gatehouse {
  const shared: OperationContext = createOperationContext(options);
  const state = stateOperations(shared);
  const decisions = decisionOperations(shared);
  const history = historyOperations(shared);
  const { finishPrune, ...pruning } = pruneOperations(shared, {
    signer: options.checkpointSigner,
    publicKey: options.checkpointPublicKey,
  });
  return {
    get policy() {
      return shared.policy;
    },
    setPolicy(next) {
      shared.setPolicy(next);
    },
    store: shared.store,
    ...state,
    ...decisions,
    ...history,
    ...webhookOperations(shared),
    ...tracedOperations({
      evaluate: decisions.evaluate,
      recordState: state.recordState,
      readHistory: history.readHistory,
    }),
    ...approvalOperations(shared),
    ...policyOperations(shared),
    ...erasureOperations(shared),
    // After `history`: a pruned chain verifies from its checkpoint.
    ...pruning,
    ...retentionOperations(shared, { ...pruning, finishPrune }),
    ...legalHoldOperations(shared),
  };
}
