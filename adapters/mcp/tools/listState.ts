/**
 * `list_state`: the items in force for a session and its open conflicts.
 */
import { z } from 'zod';
import { ConflictSchema, StateItemSchema } from '../../../src/index.js';
import { renderState } from '../toolResults.js';
import { defineTool } from './defineTool.js';
import { sessionHelp, sessionOf } from './toolEnvironment.js';

/** `list_state`: scope `state:read`. */
export const listStateTool = defineTool({
  name: 'list_state',
  title: 'List state',
  scope: 'state:read',
  description: (env) =>
    [
      'List the state items in force for a session (key, value, type, source, trust, version) and its open ' +
        'conflicts. Use it to check what is already known before you record a value or act.',
      'Fields:',
      `- ${sessionHelp(env)}`,
    ].join('\n'),
  input: (session) => z.strictObject({ session_id: session }),
  output: z.object({
    session_id: z.string(),
    items: z.array(StateItemSchema),
    conflicts: z.array(ConflictSchema),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async handler(args, env) {
    const sessionId = sessionOf(env, args.session_id);
    const [items, conflicts] = await Promise.all([
      env.gatehouse.listItems(sessionId, env.context),
      env.gatehouse.listConflicts({ session_id: sessionId, status: 'open' }, env.context),
    ]);
    return {
      structured: { session_id: sessionId, items, conflicts },
      text: renderState(sessionId, items, conflicts),
    };
  },
});
