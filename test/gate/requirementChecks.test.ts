import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../../src/gate/index.js';
import { conflict, input, item } from './gateFixtures.js';

const POLICY = `
version: 1
actions:
  payments.transfer:
    requires:
      - key: budget.limit
        min_trust: user_input
        types: [fact, constraint]
      - user.email
`;

const policy = compilePolicy(POLICY);
const goodState = () => ({
  'budget.limit': item('1000'),
  'user.email': item('alice@corp.com'),
});

describe('requires: built-in checks', () => {
  it('allows when every required key is present, current, typed and trusted', () => {
    const result = policy.evaluate(input('payments.transfer', { state: goodState() }));
    expect(result).toMatchObject({ verdict: 'Allow', reason: 'Allowed: no rule objected.', reasons: [] });
  });

  it('blocks a missing required key (required_missing)', () => {
    const state = goodState();
    delete (state as Record<string, unknown>)['budget.limit'];
    const result = policy.evaluate(input('payments.transfer', { state }));
    expect(result.verdict).toBe('Block');
    expect(result.reasons).toEqual([
      {
        rule: 'required_missing',
        verdict: 'Block',
        message: 'Required state "budget.limit" is missing.',
        keys: ['budget.limit'],
      },
    ]);
    expect(result.reason).toBe('Required state "budget.limit" is missing.');
  });

  it('blocks a required key whose item is conflicted (required_conflicted)', () => {
    const state = { ...goodState(), 'budget.limit': item('1000', { status: 'conflicted' }) };
    const result = policy.evaluate(
      input('payments.transfer', { state, conflicts: [conflict('budget.limit')] }),
    );
    expect(result.verdict).toBe('Block');
    expect(result.reasons.map((r) => [r.rule, r.keys])).toEqual([['required_conflicted', ['budget.limit']]]);
  });

  it('treats an open conflict record on a required key as conflicted even if the item says current', () => {
    const result = policy.evaluate(
      input('payments.transfer', { state: goodState(), conflicts: [conflict('user.email')] }),
    );
    expect(result.verdict).toBe('Block');
    expect(result.reasons.map((r) => r.rule)).toEqual(['required_conflicted']);
    expect(result.reasons[0]?.keys).toEqual(['user.email']);
  });

  it('blocks a required key of a type the entry does not allow (required_wrong_type)', () => {
    const state = { ...goodState(), 'budget.limit': item('1000', { type: 'assumption' }) };
    const result = policy.evaluate(input('payments.transfer', { state }));
    expect(result.verdict).toBe('Block');
    expect(result.reasons).toEqual([
      {
        rule: 'required_wrong_type',
        verdict: 'Block',
        message: 'Required state "budget.limit" has type assumption; expected fact or constraint.',
        keys: ['budget.limit'],
      },
    ]);
  });

  it('blocks a required key below min_trust given as a source name (required_untrusted)', () => {
    const state = { ...goodState(), 'budget.limit': item('1000', { source: 'tool_output', trust: 2 }) };
    const result = policy.evaluate(input('payments.transfer', { state }));
    expect(result.verdict).toBe('Block');
    expect(result.reasons).toEqual([
      {
        rule: 'required_untrusted',
        verdict: 'Block',
        message:
          'Required state "budget.limit" comes from tool_output (trust 2); at least user_input (trust 3) is required.',
        keys: ['budget.limit'],
      },
    ]);
  });

  it('accepts min_trust as a number', () => {
    const numeric = compilePolicy(
      'version: 1\nactions:\n  a.b:\n    requires: [{ key: x.y, min_trust: 4 }]\n',
    );
    const low = numeric.evaluate(input('a.b', { state: { 'x.y': item('1') } }));
    expect(low.reasons.map((r) => r.message)).toEqual([
      'Required state "x.y" comes from user_input (trust 3); at least trust 4 is required.',
    ]);
    const high = numeric.evaluate(
      input('a.b', { state: { 'x.y': item('1', { source: 'system', trust: 4 }) } }),
    );
    expect(high.verdict).toBe('Allow');
  });

  it('warns when a required fact only has low-trust backing and no min_trust is set (required_low_trust)', () => {
    const state = { ...goodState(), 'user.email': item('a@b.c', { source: 'retrieval', trust: 1 }) };
    const result = policy.evaluate(input('payments.transfer', { state }));
    expect(result.verdict).toBe('Warn');
    expect(result.reasons).toEqual([
      {
        rule: 'required_low_trust',
        verdict: 'Warn',
        message: 'Required fact "user.email" comes only from retrieval (trust 1), a low-trust source.',
        keys: ['user.email'],
      },
    ]);
    expect(result.reason).toBe(result.reasons[0]?.message);
  });

  it('does not warn about low trust for non-facts, or when low_trust_below is lowered', () => {
    const assumption = { ...goodState(), 'user.email': item('a@b.c', { type: 'assumption', trust: 1 }) };
    expect(policy.evaluate(input('payments.transfer', { state: assumption })).verdict).toBe('Allow');

    const lenient = compilePolicy(`${POLICY}low_trust_below: 1\n`);
    const lowFact = { ...goodState(), 'user.email': item('a@b.c', { source: 'retrieval', trust: 1 }) };
    expect(lenient.lowTrustBelow).toBe(1);
    expect(lenient.evaluate(input('payments.transfer', { state: lowFact })).verdict).toBe('Allow');
  });

  it('reports every failed check of every requirement, strictest verdict first in the sentence', () => {
    const state = {
      'budget.limit': item('1000', { type: 'preference', source: 'tool_output', trust: 2 }),
      'user.email': item('a@b.c', { source: 'retrieval', trust: 1 }),
    };
    const result = policy.evaluate(input('payments.transfer', { state }));
    expect(result.verdict).toBe('Block');
    expect(result.reasons.map((r) => r.rule)).toEqual([
      'required_wrong_type',
      'required_untrusted',
      'required_low_trust',
    ]);
    expect(result.reason).toBe(
      'Required state "budget.limit" has type preference; expected fact or constraint.',
    );
  });

  it('reports one objection when two matching entries require the same key', () => {
    const twice = compilePolicy(`
version: 1
actions:
  "payments.*": { requires: [budget.limit] }
  payments.transfer: { requires: [budget.limit] }
`);
    const result = twice.evaluate(input('payments.transfer'));
    expect(result.reasons.map((r) => r.rule)).toEqual(['required_missing']);
  });
});

describe('open conflicts', () => {
  it('warns about unresolved conflicts on keys the action does not require (open_conflicts)', () => {
    const result = policy.evaluate(
      input('payments.transfer', {
        state: { ...goodState(), 'user.phone': item('1', { status: 'conflicted' }) },
        conflicts: [conflict('user.phone'), conflict('ship.address')],
      }),
    );
    expect(result.verdict).toBe('Warn');
    expect(result.reasons).toEqual([
      {
        rule: 'open_conflicts',
        verdict: 'Warn',
        message: 'The session has unresolved conflicts on "ship.address", "user.phone".',
        keys: ['ship.address', 'user.phone'],
      },
    ]);
  });

  it('applies to actions no entry matches, too (built-in default policy behaviour)', () => {
    const result = policy.evaluate(input('email.send', { conflicts: [conflict('user.phone')] }));
    expect(result.verdict).toBe('Warn');
    expect(result.reason).toBe('The session has an unresolved conflict on "user.phone".');
  });

  it('follows the open_conflicts setting: Block, or Allow to turn it off', () => {
    const conflicts = [conflict('user.phone')];
    const strict = compilePolicy('version: 1\nopen_conflicts: Block\n');
    expect(strict.evaluate(input('a.b', { conflicts })).verdict).toBe('Block');
    const off = compilePolicy('version: 1\nopen_conflicts: Allow\n');
    expect(off.evaluate(input('a.b', { conflicts }))).toMatchObject({ verdict: 'Allow', reasons: [] });
  });
});
