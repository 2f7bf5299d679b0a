/**
 * A tool through which the agent records what it learned. The model chooses the key, value and
 * type; the source (and so the trust) is fixed by whoever builds the tool, so a model can never
 * promote its own guess to a user-stated fact.
 */
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { DEFAULT_TYPES, isGatehouseError, maskValue } from '../../src/index.js';
import type { GateBackend } from '../toolgate/index.js';
import { requireSession } from './sessionRule.js';

/** Options for {@link createRecordStateTool}. */
export interface RecordStateToolOptions {
  /** The Gatehouse to write to. */
  backend: GateBackend;
  /**
   * The session to write in.
   * @default the run's `configurable.thread_id` (then `session_id`, then `metadata.session_id`)
   */
  sessionId?: string;
  /**
   * The source every write claims; the model cannot change it. A remote key must be allowed to
   * write it.
   * @default 'agent_inference'
   */
  source?: string;
  /** @default 'record_state' */
  name?: string;
  /**
   * The types the model may pick (they must be in the policy's `types`).
   * @default the core's `DEFAULT_TYPES`: ['fact', 'assumption', 'preference', 'constraint']
   */
  types?: readonly [string, ...string[]];
}

/**
 * A LangChain `tool()` that records one state item: `{ key, value, type }` from the model, the
 * session and `source` from configuration. It answers with a short JSON summary; an invalid
 * key or value comes back as `{ recorded: false, error, message }` for the model to fix, while
 * configuration and connection errors are thrown.
 * @example
 * const recordState = createRecordStateTool({ backend: gatehouse });
 * const agent = createAgent({ model, tools: [recordState, transferMoney] });
 */
export function createRecordStateTool(options: RecordStateToolOptions) {
  const source = options.source ?? 'agent_inference';
  // The core's list: what a policy without `types` accepts (never empty, as z.enum needs).
  const types = options.types ?? DEFAULT_TYPES;
  const schema = z.object({
    key: z
      .string()
      .describe("Dotted, lower-case key with at least two segments, e.g. 'budget.limit' or 'user.email'."),
    value: z.union([z.string(), z.number(), z.boolean()]).describe('The value, as text or a number.'),
    type: z
      .enum(types as [string, ...string[]])
      .describe(
        'fact: known; assumption: believed, unverified; preference; constraint: a limit that must hold.',
      ),
  });
  return tool(
    async (input, config) => {
      const sessionId = requireSession(options.name ?? 'record_state', {
        pinned: options.sessionId,
        configurable: config?.configurable,
        metadata: config?.metadata,
      });
      try {
        const result = await options.backend.recordState({
          session_id: sessionId,
          key: input.key,
          value: String(input.value),
          type: input.type,
          source,
        });
        return JSON.stringify({
          recorded: result.changed,
          outcome: result.outcome,
          key: result.item.key,
          version: result.item.version,
          status: result.item.status,
          ...(result.conflict === null
            ? {}
            : {
                conflict_id: result.conflict.conflict_id,
                // The model reads this (and its transcript keeps it): a secret in force is masked,
                // or a guess at a password would be answered with the password.
                note: `A more trusted value ('${maskValue(
                  result.conflict.current.value,
                  result.conflict.current.sensitivity ?? result.item.sensitivity,
                )}') stays in force until the conflict is resolved.`,
              }),
        });
      } catch (error) {
        if (isGatehouseError(error) && error.code === 'invalid_request') {
          return JSON.stringify({
            recorded: false,
            error: error.code,
            message: error.message,
            errors: error.errors,
          });
        }
        throw error;
      }
    },
    {
      name: options.name ?? 'record_state',
      description:
        'Record a fact, assumption, preference or constraint you learned, so later actions are checked against it.',
      schema,
    },
  );
}
