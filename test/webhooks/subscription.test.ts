import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/schemas.js';
import type { MatchableEvent, SubscriptionMatch } from '../../src/webhooks/index.js';
import { matchesSubscription, WEBHOOK_EVENT_TYPES } from '../../src/webhooks/index.js';

const block: MatchableEvent = { type: 'gate_evaluation', session_id: 's1', data: { verdict: 'Block' } };
const allow: MatchableEvent = { type: 'gate_evaluation', session_id: 's1', data: { verdict: 'Allow' } };
const change: MatchableEvent = { type: 'state_change', session_id: 's2', data: { key: 'user.email' } };

describe('WEBHOOK_EVENT_TYPES', () => {
  it('lists the history event types', () => {
    expect(WEBHOOK_EVENT_TYPES).toEqual([
      'state_change',
      'state_conflict',
      'conflict_resolved',
      'gate_evaluation',
      'action_outcome',
      'approval.requested',
      'approval.approved',
      'approval.denied',
      'approval.expired',
      'approval.used',
      'policy.activated',
      'policy.replayed',
      'erasure.completed',
      'history.upgraded',
      'retention.pruned',
      'legal_hold.placed',
      'legal_hold.released',
      'legal_hold.overridden',
      'retention.configured',
    ]);
  });

  it('stays in step with the history event types (subscriptions name history events)', () => {
    expect([...WEBHOOK_EVENT_TYPES]).toEqual([...EVENT_TYPES]);
  });
});

describe('matchesSubscription', () => {
  const sub = (events: string[], filter: SubscriptionMatch['filter'] = null): SubscriptionMatch => ({
    events,
    filter,
  });

  it.each<[string, SubscriptionMatch, MatchableEvent, boolean]>([
    ['listed type', sub(['gate_evaluation']), block, true],
    ['unlisted type', sub(['state_change']), block, false],
    ['wildcard', sub(['*']), change, true],
    ['no events', sub([]), change, false],
    ['empty filter object', sub(['*'], {}), change, true],
    ['session equal', sub(['*'], { session_id: 's1' }), block, true],
    ['session different', sub(['*'], { session_id: 's1' }), change, false],
    ['verdict listed', sub(['*'], { verdicts: ['Block'] }), block, true],
    ['verdict not listed', sub(['*'], { verdicts: ['Block'] }), allow, false],
    ['verdict is case-sensitive', sub(['*'], { verdicts: ['block'] }), block, false],
    ['event without verdict', sub(['*'], { verdicts: ['Block'] }), change, false],
    ['empty verdict list', sub(['*'], { verdicts: [] }), block, false],
    [
      'both filters hold',
      sub(['gate_evaluation'], { verdicts: ['Block', 'Warn'], session_id: 's1' }),
      block,
      true,
    ],
    ['one filter fails', sub(['gate_evaluation'], { verdicts: ['Block'], session_id: 's2' }), block, false],
  ])('%s', (_name, subscription, event, expected) => {
    expect(matchesSubscription(subscription, event)).toBe(expected);
  });

  it.each([null, 'Block', ['Block'], { verdict: 1 }, { verdict: null }])(
    'treats data %j as carrying no verdict',
    (data) => {
      expect(matchesSubscription(sub(['*'], { verdicts: ['Block'] }), { ...block, data })).toBe(false);
    },
  );
});
