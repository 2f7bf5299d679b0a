/**
 * `keysRead` and `stateVersions` hold what an evaluation actually read of `state`: keys computed
 * from the params, keys looked up while absent (version 0), and the whole key set after an
 * enumeration (`*`). A decision's `state_versions` and an approval's binding are built from them.
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy, type StateView } from '../../src/gate/index.js';
import { input, item } from './gateFixtures.js';

function policyWith(when: string, message?: string) {
  return compilePolicy(`
version: 1
rules:
  - name: r
    when: ${JSON.stringify(when)}
    verdict: Block
${message === undefined ? '' : `    message: ${JSON.stringify(message)}\n`}`);
}

const state: Record<string, StateView> = {
  'limits.daily': item('5000', { version: 3 }),
  'user.name': item('Ada', { version: 2 }),
};

describe('what an evaluation read of state', () => {
  it('binds a key computed from the params', () => {
    const policy = policyWith('double(params.amount) > state[params.limit_key].number');
    const result = policy.evaluate(
      input('payments.transfer', { params: { amount: 9000, limit_key: 'limits.daily' }, state }),
    );
    expect(result.verdict).toBe('Block');
    expect(result.keysRead).toEqual(['limits.daily']);
    expect(result.stateVersions).toEqual({ 'limits.daily': 3 });
  });

  it('binds a key looked up while absent as version 0, and not a name that can be no key', () => {
    const policy = policyWith("params.key in state || has(state.nokey) || 'other.key' in state");
    const absent = policy.evaluate(input('a.b', { params: { key: 'limits.cap' }, state }));
    expect(absent.verdict).toBe('Allow');
    expect(absent.stateVersions).toEqual({ 'limits.cap': 0, 'other.key': 0 });

    const present = policy.evaluate(input('a.b', { params: { key: 'user.name' }, state }));
    expect(present.verdict).toBe('Block');
    // `||` stopped at the first true: nothing after it was read.
    expect(present.stateVersions).toEqual({ 'user.name': 2 });
  });

  it('binds only what was evaluated: a condition decided before it reaches state reads nothing', () => {
    const policy = policyWith('params.skip || state[params.key].number > 1.0');
    const skipped = policy.evaluate(input('a.b', { params: { skip: true, key: 'limits.daily' }, state }));
    expect(skipped.verdict).toBe('Block');
    expect(skipped.stateVersions).toEqual({});
  });

  it.each([
    ["state.exists(k, k.startsWith('risk.'))", 'Allow'],
    ['state.all(k, state[k].trust >= 3)', 'Block'],
    ["size(state.filter(k, k.startsWith('user.'))) == 1", 'Block'],
    ['state.map(k, state[k].version).exists(v, v > 2)', 'Block'],
    ['size(state) > 1', 'Block'],
  ])('binds every key and the key set after an enumeration: %s', (when, verdict) => {
    const result = policyWith(when).evaluate(input('a.b', { state }));
    expect(result.verdict).toBe(verdict);
    expect(result.keysRead).toEqual(['limits.daily', 'user.name']);
    expect(result.stateVersions).toEqual({ '*': 2, 'limits.daily': 3, 'user.name': 2 });
  });

  it('binds the keys a comprehension over the params looks up (a metered evaluation)', () => {
    const policy = policyWith('params.keys.exists(k, k in state && state[k].number > 100.0)');
    const result = policy.evaluate(
      input('a.b', { params: { keys: ['limits.monthly', 'limits.daily'] }, state }),
    );
    expect(result.verdict).toBe('Block');
    expect(result.stateVersions).toEqual({ 'limits.daily': 3, 'limits.monthly': 0 });
  });

  it("binds the keys a firing rule's message placeholders read", () => {
    const policy = policyWith('params.amount > 10', 'Over the {state[params.limit_key].value} limit');
    const fired = policy.evaluate(input('a.b', { params: { amount: 20, limit_key: 'limits.daily' }, state }));
    expect(fired.reasons[0]?.message).toBe('Over the 5000 limit');
    expect(fired.stateVersions).toEqual({ 'limits.daily': 3 });
    // A message that is not rendered reads nothing.
    const quiet = policy.evaluate(input('a.b', { params: { amount: 1, limit_key: 'limits.daily' }, state }));
    expect(quiet.stateVersions).toEqual({});
  });

  it('records each evaluation on its own, also over one frozen state shared between them', () => {
    const shared = Object.freeze({ ...state });
    const lookup = policyWith('state[params.key].version > 2 || (params.all && size(state) > 5)');
    const run = (key: string, all: boolean) =>
      lookup.evaluate(input('a.b', { params: { key, all }, state: shared }));
    const first = run('limits.daily', false);
    const second = run('user.name', true);
    const third = run('user.name', false);
    expect([first.verdict, second.verdict, third.verdict]).toEqual(['Block', 'Allow', 'Allow']);
    expect(first.stateVersions).toEqual({ 'limits.daily': 3 });
    expect(second.stateVersions).toEqual({ '*': 2, 'limits.daily': 3, 'user.name': 2 });
    expect(third.stateVersions).toEqual({ 'user.name': 2 });
  });

  it('a policy whose rules never name state reads only its required keys', () => {
    const policy = compilePolicy(`
version: 1
actions:
  "payments.*":
    requires: [budget.limit]
    rules:
      - { name: big, when: "params.amount > 10", verdict: Warn, message: "{params.amount}" }
`);
    const result = policy.evaluate(input('payments.transfer', { params: { amount: 20 }, state }));
    expect(result.verdict).toBe('Block');
    expect(result.stateVersions).toEqual({ 'budget.limit': 0 });
  });
});
