/**
 * History: paging through events (verifying the chain is in pruneOperations.ts: a pruned chain
 * starts at its checkpoint).
 */
import type { Gatehouse } from '../gatehouseTypes.js';
import { decodeCursor, encodeCursor } from '../history/cursor.js';
import { HistoryQuerySchema } from '../schemas.js';
import { parseInput } from '../validation.js';
import type { OperationContext } from './operationContext.js';

/** History: paging through events. */
export function historyOperations(shared: OperationContext): Pick<Gatehouse, 'readHistory'> {
  const { store, tenantOf } = shared;
  return {
    async readHistory(rawQuery = {}, ctx) {
      const query = parseInput(HistoryQuerySchema, rawQuery, 'history query');
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, query.order).seq;
      const rows = await store.queryEvents(tenantOf(ctx), {
        session_id: query.session_id,
        type: query.type,
        decision_id: query.decision_id,
        after_seq: after,
        order: query.order,
        limit: query.limit + 1,
      });
      const page = rows.slice(0, query.limit).map(({ decision_id: _d, ...e }) => e);
      const last = page[page.length - 1];
      return {
        events: page,
        next_cursor:
          rows.length > query.limit && last ? encodeCursor({ seq: last.seq, order: query.order }) : null,
      };
    },
  };
}
