/**
 * The text a model reads for a decision names the state items it rested on: the ones that
 * existed, not the key-set entry (`*`) nor keys read while absent (version 0).
 */
import { describe, expect, it } from 'vitest';
import { renderDecision } from '../../adapters/mcp/toolResults.js';
import type { Decision } from '../../src/index.js';

const decision: Decision = {
  decision_id: 'dec_1',
  verdict: 'Allow',
  allowed: true,
  reason: 'Allowed: no rule objected.',
  reasons: [],
  shadow: [],
  session_id: 's1',
  action: 'payments.payout',
  policy: { revision: 'r' },
  state_versions: { '*': 2, 'limits.cap': 0, 'risk.country': 3, 'user.name': 1 },
  evaluated_at: '2026-01-01T00:00:00.000Z',
};

describe('renderDecision', () => {
  it('names the items that existed when no reason names keys', () => {
    expect(renderDecision(decision)).toBe(
      'Allow: Allowed: no rule objected. (decision dec_1; keys risk.country, user.name)',
    );
  });
});
