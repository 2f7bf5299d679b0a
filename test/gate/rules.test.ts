import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../../src/gate/index.js';
import { conflict, input, item } from './gateFixtures.js';

describe('global and action rules', () => {
  const policy = compilePolicy(`
version: 1
rules:
  - name: no_deploy_friday
    when: "action.startsWith('deploy.') && now.getDayOfWeek() == 5"
    verdict: Block
    message: "No deploys on Friday ({action})"
  - name: external_recipient
    when: "has(params.to) && !params.to.endsWith('@corp.com')"
    verdict: Warn
    message: "Sending outside the company to {params.to}"
actions:
  "payments.*":
    rules:
      - name: over_budget
        when: "'budget.limit' in state && double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}"
`);

  it('applies global rules to every action', () => {
    const deploy = policy.evaluate(input('deploy.prod'));
    expect(deploy.verdict).toBe('Block');
    expect(deploy.reasons).toEqual([
      { rule: 'no_deploy_friday', verdict: 'Block', message: 'No deploys on Friday (deploy.prod)', keys: [] },
    ]);
    const email = policy.evaluate(input('email.send', { params: { to: 'eve@evil.com' } }));
    expect(email).toMatchObject({ verdict: 'Warn', reason: 'Sending outside the company to eve@evil.com' });
  });

  it('evaluates `now` from the input: the same deploy on a Thursday is allowed', () => {
    const thursday = policy.evaluate(input('deploy.prod', { now: new Date('2025-01-02T10:00:00Z') }));
    expect(thursday.verdict).toBe('Allow');
  });

  it('applies action rules only to matching actions, together with global rules', () => {
    const state = { 'budget.limit': item('1000') };
    const params = { amount: 5000, to: 'eve@evil.com' };
    const transfer = policy.evaluate(input('payments.transfer', { params, state }));
    expect(transfer.verdict).toBe('Block');
    expect(transfer.reasons.map((r) => r.rule)).toEqual(['external_recipient', 'over_budget']);
    expect(transfer.reason).toBe('Transfer of 5000 exceeds the budget of 1000');
    expect(transfer.reasons[1]?.keys).toEqual(['budget.limit']);

    const other = policy.evaluate(input('refunds.transfer', { params, state }));
    expect(other.reasons.map((r) => r.rule)).toEqual(['external_recipient']);
  });

  it('adds nothing when a rule condition is false', () => {
    const state = { 'budget.limit': item('1000') };
    const result = policy.evaluate(input('payments.transfer', { params: { amount: 10 }, state }));
    expect(result).toMatchObject({ verdict: 'Allow', reasons: [], reason: 'Allowed: no rule objected.' });
  });

  it('uses a default message when a rule has none', () => {
    const bare = compilePolicy('version: 1\nrules:\n  - { name: always, when: "true", verdict: Warn }\n');
    expect(bare.evaluate(input('a.b')).reason).toBe('Rule always matched.');
  });
});

describe('action matching', () => {
  const policy = compilePolicy(`
version: 1
actions:
  payments.transfer: { rules: [{ name: exact, when: "true", verdict: Warn }] }
  "payments.*": { rules: [{ name: one_segment, when: "true", verdict: Warn }] }
  "payments.**": { rules: [{ name: any_depth, when: "true", verdict: Warn }] }
  "{refunds,chargebacks}.create": { rules: [{ name: alternatives, when: "true", verdict: Warn }] }
`);
  const matched = (action: string) => policy.evaluate(input(action)).reasons.map((r) => r.rule);

  it('applies every matching entry, exact and glob alike, in file order', () => {
    expect(matched('payments.transfer')).toEqual(['exact', 'one_segment', 'any_depth']);
  });

  it('matches one segment with * and any number of segments with **', () => {
    expect(matched('payments.refund')).toEqual(['one_segment', 'any_depth']);
    expect(matched('payments.refund.bulk')).toEqual(['any_depth']);
    expect(matched('payments')).toEqual(['any_depth']);
    expect(matched('paymentsX.refund')).toEqual([]);
  });

  it('supports brace alternatives', () => {
    expect(matched('refunds.create')).toEqual(['alternatives']);
    expect(matched('chargebacks.create')).toEqual(['alternatives']);
    expect(matched('invoices.create')).toEqual([]);
  });

  it('supports negated globs', () => {
    const negated = compilePolicy(
      'version: 1\nactions:\n  "!payments.**": { rules: [{ name: not_payments, when: "true", verdict: Warn }] }\n',
    );
    expect(negated.evaluate(input('email.send')).reasons.map((r) => r.rule)).toEqual(['not_payments']);
    expect(negated.evaluate(input('payments.refund')).reasons).toEqual([]);
  });

  it('gives the same answer for a repeated action (plans are cached per action name)', () => {
    for (let i = 0; i < 3; i++) expect(matched('payments.refund')).toEqual(['one_segment', 'any_depth']);
  });
});

describe('default verdict', () => {
  it('allows an unmatched action by default and says why', () => {
    const policy = compilePolicy('version: 1\nactions:\n  a.b: {}\n');
    expect(policy.defaultVerdict).toBe('Allow');
    const result = policy.evaluate(input('x.y'));
    expect(result).toMatchObject({ verdict: 'Allow', reasons: [] });
    expect(result.reason).toBe(
      'Allowed: no policy entry matches action "x.y" and the default verdict is Allow.',
    );
  });

  it('blocks an unmatched action with default_verdict: Block, but not a matched one', () => {
    const policy = compilePolicy('version: 1\ndefault_verdict: Block\nactions:\n  a.b: {}\n');
    const result = policy.evaluate(input('x.y'));
    expect(result.verdict).toBe('Block');
    expect(result.reasons).toEqual([
      {
        rule: 'default_verdict',
        verdict: 'Block',
        message: 'No policy entry matches action "x.y"; the default verdict is Block.',
        keys: [],
      },
    ]);
    expect(policy.evaluate(input('a.b'))).toMatchObject({ verdict: 'Allow', reasons: [] });
  });

  it('still evaluates global rules for an unmatched action', () => {
    const policy = compilePolicy(`
version: 1
default_verdict: Warn
rules: [{ name: no_rm, when: "action == 'shell.rm'", verdict: Block, message: "No rm" }]
`);
    const result = policy.evaluate(input('shell.rm'));
    expect(result.verdict).toBe('Block');
    expect(result.reasons.map((r) => r.rule)).toEqual(['default_verdict', 'no_rm']);
    expect(result.reason).toBe('No rm');
  });
});

describe('shadow mode', () => {
  const policy = compilePolicy(`
version: 1
rules:
  - name: big_transfer
    when: "double(params.amount) > 10000.0"
    verdict: Block
    message: "Large transfer of {params.amount}"
    mode: shadow
  - name: broken_shadow
    when: "params.missing == 1"
    verdict: Block
    mode: shadow
`);

  it('records a matching shadow rule in `shadow` without enforcing it', () => {
    const result = policy.evaluate(input('payments.transfer', { params: { amount: 50000, missing: 2 } }));
    expect(result.verdict).toBe('Allow');
    expect(result.reasons).toEqual([]);
    expect(result.shadow).toEqual([
      { rule: 'big_transfer', verdict: 'Block', message: 'Large transfer of 50000', keys: [] },
    ]);
  });

  it('records a failing shadow rule as a shadow policy_error, not an enforced one', () => {
    const result = policy.evaluate(input('payments.transfer', { params: { amount: 1 } }));
    expect(result.verdict).toBe('Allow');
    expect(result.shadow).toEqual([
      {
        rule: 'policy_error',
        verdict: 'Block',
        message: 'Rule broken_shadow could not be evaluated: No such key: missing',
        keys: [],
      },
    ]);
  });
});

describe('rule errors fail closed', () => {
  const policy = compilePolicy(`
version: 1
rules:
  - name: limit_check
    when: "state['budget.limit'].number < 100.0"
    verdict: Warn
  - name: soft_check
    when: "params.count > 3"
    verdict: Block
    on_error: Warn
  - name: ignored_check
    when: "params.other > 3"
    verdict: Block
    on_error: Allow
  - name: flag_check
    when: "params.flag"
    verdict: Warn
`);

  it('blocks with policy_error when a rule reads a missing state key', () => {
    const result = policy.evaluate(input('a.b', { params: { count: 1, other: 1, flag: false } }));
    expect(result.verdict).toBe('Block');
    expect(result.reasons).toEqual([
      {
        rule: 'policy_error',
        verdict: 'Block',
        message: 'Rule limit_check could not be evaluated: No such key: budget.limit',
        keys: [],
      },
    ]);
    expect(result.reason).toBe('Rule limit_check could not be evaluated: No such key: budget.limit');
  });

  it('uses on_error: Warn and ignores the failure with on_error: Allow', () => {
    const state = { 'budget.limit': item('1000') };
    const result = policy.evaluate(input('a.b', { state, params: { count: 'many', flag: false } }));
    expect(result.verdict).toBe('Warn');
    expect(result.reasons).toEqual([
      {
        rule: 'policy_error',
        verdict: 'Warn',
        message: 'Rule soft_check could not be evaluated: no such overload: dyn<string> > int',
        keys: [],
      },
    ]);
  });

  it('treats a non-bool result as an evaluation error', () => {
    const state = { 'budget.limit': item('1000') };
    const result = policy.evaluate(input('a.b', { state, params: { count: 1, other: 1, flag: 'yes' } }));
    expect(result.verdict).toBe('Block');
    expect(result.reasons).toEqual([
      {
        rule: 'policy_error',
        verdict: 'Block',
        message: 'Rule flag_check could not be evaluated: it returned string, not bool',
        keys: [],
      },
    ]);
  });

  it('never throws, even for params CEL cannot represent', () => {
    const state = { 'budget.limit': item('1000') };
    const params = { count: () => 1, other: 1, flag: false };
    const result = policy.evaluate(input('a.b', { state, params }));
    expect(result.verdict).toBe('Warn');
    expect(result.reasons[0]?.message).toMatch(/^Rule soft_check could not be evaluated: /);
  });
});

describe('CEL values', () => {
  const check = (when: string, overrides: Parameters<typeof input>[1] = {}) =>
    compilePolicy(
      `version: 1\nrules: [{ name: r, when: ${JSON.stringify(when)}, verdict: Block }]\n`,
    ).evaluate(input('a.b', overrides)).verdict;

  it('compares JSON numbers with int and double literals alike', () => {
    const params = { amount: 5000, ratio: 0.5 };
    expect(check('params.amount > 100', { params })).toBe('Block');
    expect(check('params.amount > 100.0', { params })).toBe('Block');
    expect(check('params.amount == 5000', { params })).toBe('Block');
    expect(check('params.ratio < 1', { params })).toBe('Block');
    expect(check('params.amount < 100', { params })).toBe('Allow');
  });

  it('exposes trust and version as ints and number as a double or null', () => {
    const state = { 'a.b': item('12.5', { trust: 3, version: 7 }), 'c.d': item('text') };
    expect(check("state['a.b'].trust + 1 == 4 && state['a.b'].version == 7", { state })).toBe('Block');
    expect(check("state['a.b'].number == 12.5 && state['c.d'].number == null", { state })).toBe('Block');
  });

  it('handles null params, `in` on maps and has()', () => {
    const params = { note: null };
    expect(check('params.note == null', { params })).toBe('Block');
    expect(check("'x.y' in state", { state: { 'x.y': item('1') } })).toBe('Block');
    expect(check("'x.y' in state", {})).toBe('Allow');
    expect(check('has(params.note) && !has(params.other)', { params })).toBe('Block');
  });

  it('exposes timestamps: now, updated_at and created_at', () => {
    const state = { 'a.b': item('1', { updated_at: '2025-01-02T09:00:00Z' }) };
    expect(check("now - state['a.b'].updated_at > duration('24h')", { state })).toBe('Block');
    expect(check("now - state['a.b'].updated_at > duration('48h')", { state })).toBe('Allow');
    const conflicts = [conflict('user.email')];
    expect(check("conflicts.exists(c, c.key == 'user.email' && c.created_at < now)", { conflicts })).toBe(
      'Block',
    );
  });

  it('reads context', () => {
    expect(check("context.env == 'prod'", { context: { env: 'prod' } })).toBe('Block');
  });
});

describe('message placeholders', () => {
  const policy = compilePolicy(`
version: 1
rules:
  - name: show
    when: "true"
    verdict: Warn
    message: "{action} {params.amount} {params.ratio} {state['a.b'].trust} {params.tags} {now} {{literal}} {params.nope} end"
`);

  it('renders each placeholder; a failing one renders as ?', () => {
    const result = policy.evaluate(
      input('a.b', { params: { amount: 5000, ratio: 0.25, tags: ['x', 'y'] }, state: { 'a.b': item('1') } }),
    );
    expect(result.reasons[0]?.message).toBe(
      'a.b 5000 0.25 3 [x, y] 2025-01-03T10:00:00.000Z {literal} ? end',
    );
    expect(result.verdict).toBe('Warn');
  });

  it('does not change the decision when every placeholder fails', () => {
    const result = policy.evaluate(input('a.b'));
    expect(result.verdict).toBe('Warn');
    expect(result.reasons[0]?.message).toBe('a.b ? ? ? ? 2025-01-03T10:00:00.000Z {literal} ? end');
  });
});

describe('keysRead', () => {
  const policy = compilePolicy(`
version: 1
rules:
  - name: global_rule
    when: "'user.email' in state && state['user.email'].value.endsWith('@corp.com')"
    verdict: Warn
actions:
  "payments.*":
    requires: [budget.limit, budget.currency]
    rules:
      - name: over_budget
        when: "'budget.limit' in state && double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Over {state['budget.max'].value}"
  "deploy.*":
    rules:
      - name: freeze
        when: "'deploy.freeze' in state"
        verdict: Block
`);
  const state = {
    'budget.limit': item('1000'),
    'budget.max': item('2000'),
    'user.email': item('a@corp.com'),
    'deploy.freeze': item('true'),
    'other.key': item('x'),
  };

  it('holds the required keys plus state keys named in the evaluated rules, sorted and unique', () => {
    const result = policy.evaluate(input('payments.transfer', { params: { amount: 5 }, state }));
    // budget.currency is required (though missing); '@corp.com' is a literal but not a state key;
    // deploy.freeze belongs to an entry that does not match; other.key is never named.
    expect(result.keysRead).toEqual(['budget.currency', 'budget.limit', 'budget.max', 'user.email']);
  });

  it('leaves out literal keys that are not in the state, unless a rule looked them up (version 0)', () => {
    const result = policy.evaluate(input('payments.transfer', { params: { amount: 5 }, state: {} }));
    // 'user.email' in state looked it up; budget.max is only named in a message that never rendered.
    expect(result.keysRead).toEqual(['budget.currency', 'budget.limit', 'user.email']);
    expect(result.stateVersions).toEqual({ 'budget.currency': 0, 'budget.limit': 0, 'user.email': 0 });
  });

  it('names the state keys a firing rule read in its reason', () => {
    const result = policy.evaluate(input('deploy.prod', { state }));
    expect(result.reasons).toEqual([
      { rule: 'global_rule', verdict: 'Warn', message: 'Rule global_rule matched.', keys: ['user.email'] },
      { rule: 'freeze', verdict: 'Block', message: 'Rule freeze matched.', keys: ['deploy.freeze'] },
    ]);
    expect(result.keysRead).toEqual(['deploy.freeze', 'user.email']);
  });
});

describe('reason sentence', () => {
  it('is the first Block message even when a Warn came first', () => {
    const policy = compilePolicy(`
version: 1
rules:
  - { name: w, when: "true", verdict: Warn, message: "a warning" }
  - { name: b1, when: "true", verdict: Block, message: "first block" }
  - { name: b2, when: "true", verdict: Block, message: "second block" }
`);
    const result = policy.evaluate(input('a.b'));
    expect(result.verdict).toBe('Block');
    expect(result.reason).toBe('first block');
    expect(result.reasons).toHaveLength(3);
  });
});
