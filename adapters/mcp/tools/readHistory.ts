/**
 * `read_history`: read the hash-chained history, newest first.
 */
import { HistoryPageSchema, HistoryQuerySchema } from '../../../src/index.js';
import { renderHistory } from '../toolResults.js';
import { defineTool } from './defineTool.js';

/** `read_history`: scope `history:read`; `session_id` filters (every session by default, unless the server has a default). */
export const readHistoryTool = defineTool({
  name: 'read_history',
  title: 'Read history',
  scope: 'history:read',
  description: (env) =>
    [
      'Read the append-only, hash-chained history: state changes, conflicts, resolutions, gate decisions and ' +
        'action outcomes, newest first. Use it to explain why an action was blocked, what a value was before, ' +
        'or where it came from.',
      'Fields (all optional):',
      env.defaultSessionId === undefined
        ? '- session_id: only this session (default: every session).'
        : `- session_id: only this session (default "${env.defaultSessionId}").`,
      '- type: state_change, state_conflict, conflict_resolved, gate_evaluation or action_outcome.',
      '- decision_id: the events of one decision.',
      '- limit: 1 to 500 (default 50). order: desc (default) or asc.',
      '- cursor: the next_cursor of the previous page.',
    ].join('\n'),
  // session_id is a filter here, never required: the query schema's own field stays.
  input: () => HistoryQuerySchema,
  output: HistoryPageSchema,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async handler(args, env) {
    const sessionId = args.session_id ?? env.defaultSessionId;
    const page = await env.gatehouse.readHistory(
      { ...args, ...(sessionId === undefined ? {} : { session_id: sessionId }) },
      env.context,
    );
    return { structured: page, text: renderHistory(page) };
  },
});
