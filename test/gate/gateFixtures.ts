import { expect } from 'vitest';
import { type ConflictView, compilePolicy, type GateInput, type StateView } from '../../src/gate/index.js';

/** A Friday, 10:00 UTC. */
export const NOW = new Date('2025-01-03T10:00:00.000Z');

/** A current state item; defaults to a user_input fact. */
export function item(value: string, overrides: Partial<StateView> = {}): StateView {
  const number = Number(value);
  return {
    value,
    number: value.trim() !== '' && Number.isFinite(number) ? number : null,
    type: 'fact',
    source: 'user_input',
    trust: 3,
    version: 1,
    status: 'current',
    updated_at: '2025-01-03T09:00:00.000Z',
    ...overrides,
  };
}

/** An unresolved conflict on `key`. */
export function conflict(key: string, overrides: Partial<ConflictView> = {}): ConflictView {
  return {
    conflict_id: `cfl_${key}`,
    key,
    current_value: 'a',
    proposed_value: 'b',
    proposed_source: 'tool_output',
    created_at: '2025-01-03T09:30:00.000Z',
    ...overrides,
  };
}

/** A gate input for `action` with empty params, context, state and conflicts. */
export function input(action: string, overrides: Partial<GateInput> = {}): GateInput {
  return { action, params: {}, context: {}, state: {}, conflicts: [], now: NOW, ...overrides };
}

/** A policy of one rule that blocks when `when` holds (Allow otherwise). */
export function oneRulePolicy(when: string) {
  return compilePolicy(
    `version: 1\ndefault_verdict: Allow\nrules:\n  - name: r\n    when: ${JSON.stringify(when)}\n    verdict: Block\n`,
  );
}

/** A CEL list literal of `n` ints: `[0, 1, …]`. */
export const intListLiteral = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(', ')}]`;

/** The reason of an evaluation its cost budget stopped. */
export const COST_LIMIT_REASON = {
  rule: 'policy_error',
  verdict: 'Block',
  message: expect.stringContaining('evaluation cost limit exceeded'),
  keys: [],
};
