/**
 * `resolve_conflict`: keep the value in force or accept the proposed one, on the user's word.
 */
import { z } from 'zod';
import { ConflictSchema, ResolveConflictInputSchema } from '../../../src/index.js';
import { renderResolution } from '../toolResults.js';
import { defineTool } from './defineTool.js';

/** `resolve_conflict`: scope `state:write`; needs at least the trust of the value in force. */
export const resolveConflictTool = defineTool({
  name: 'resolve_conflict',
  title: 'Resolve conflict',
  scope: 'state:write',
  description: () =>
    [
      'Resolve an open conflict (listed by list_state): keep_current keeps the value in force; accept_proposed ' +
        "replaces it with the proposed value as a new version. Do this only on the user's explicit instruction. " +
        "Resolving needs at least the trust of the value in force, so a conflict over a user's value is refused " +
        '(forbidden) unless this client may write user_input.',
      'Fields:',
      '- conflict_id: the conflict (cfl_…).',
      '- resolution: keep_current or accept_proposed.',
      '- note (optional): why, for the history.',
    ].join('\n'),
  input: () =>
    z.strictObject({
      conflict_id: z.string().min(1, 'conflict_id must not be empty').max(64),
      ...ResolveConflictInputSchema.shape,
    }),
  output: ConflictSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async handler({ conflict_id, ...input }, env) {
    const conflict = await env.gatehouse.resolveConflict(conflict_id, input, env.context);
    return { structured: conflict, text: renderResolution(conflict) };
  },
});
