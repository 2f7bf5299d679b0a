/**
 * The one-line event summary every text face shows, and the trust cap every face computes.
 */
import { describe, expect, it } from 'vitest';
import { maxClaimableTrust, summarizeEvent } from '../../src/index.js';

describe('summarizeEvent', () => {
  it.each([
    [
      'state_change',
      { key: 'budget.limit', value: '5000', version: 2, source: 'user_input' },
      'budget.limit = "5000" v2 from user_input',
    ],
    ['state_conflict', { key: 'budget.limit', conflict_id: 'cfl_1' }, 'budget.limit conflict cfl_1'],
    [
      'conflict_resolved',
      { key: 'budget.limit', resolution: 'keep_current', conflict_id: 'cfl_1' },
      'budget.limit keep_current (cfl_1)',
    ],
    [
      'gate_evaluation',
      { action: 'payments.transfer', verdict: 'Block', decision_id: 'dec_1', reason: 'over budget' },
      'payments.transfer → Block (dec_1): over budget',
    ],
    ['action_outcome', { decision_id: 'dec_1', outcome: 'succeeded' }, 'dec_1 succeeded'],
    [
      'erasure.completed',
      { reason: 'retention', events: 3, fields: 4, erased: [], before: '2026-01-01T00:00:00.000Z' },
      'retention erased 4 field(s) of 3 event(s) older than 2026-01-01T00:00:00.000Z',
    ],
    [
      'erasure.completed',
      {
        reason: 'retention',
        events: 0,
        fields: 0,
        erased: [],
        conflicts: ['cfl_1'],
        approvals: ['apr_1', 'apr_2'],
        before: '2026-01-01T00:00:00.000Z',
      },
      'retention erased 0 field(s) of 0 event(s), the values of 1 conflict(s), 2 approval(s) older than 2026-01-01T00:00:00.000Z',
    ],
  ] as const)('%s', (type, data, line) => {
    expect(summarizeEvent({ type, data })).toBe(line);
  });

  it('shows missing fields as empty, never "undefined"', () => {
    expect(summarizeEvent({ type: 'action_outcome', data: {} })).toBe(' ');
  });
});

describe('maxClaimableTrust', () => {
  const sources = { system: 4, user_input: 3, tool_output: 2, agent_inference: 0 };
  it('is the highest trust among the sources a caller may claim', () => {
    expect(maxClaimableTrust(sources, ['tool_output', 'agent_inference'])).toBe(2);
    expect(maxClaimableTrust(sources)).toBe(4);
    expect(maxClaimableTrust(sources, ['unknown'])).toBe(-Infinity);
    expect(maxClaimableTrust(sources, [])).toBe(-Infinity);
  });
});
