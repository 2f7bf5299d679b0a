import type { ConflictView, GateInput, StateView } from '../../src/gate/index.js';

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
