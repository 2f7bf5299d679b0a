import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GatehouseError } from '../../src/errors.js';
import { compilePolicy, DEFAULT_POLICY_YAML, defaultPolicy, loadPolicyFile } from '../../src/gate/index.js';
import { conflict, input, item } from './gateFixtures.js';

/** The error compilePolicy throws for `yaml` (fails the test if it compiles). */
function compileError(yaml: string, source?: string): GatehouseError {
  try {
    compilePolicy(yaml, source === undefined ? {} : { source });
  } catch (error) {
    if (error instanceof GatehouseError) return error;
    throw error;
  }
  throw new Error('expected the policy not to compile');
}

describe('compilePolicy: settings', () => {
  it('applies the documented defaults', () => {
    const policy = compilePolicy('version: 1\n');
    expect(policy.defaultVerdict).toBe('Allow');
    expect(policy.types).toEqual(['fact', 'assumption', 'preference', 'constraint']);
    expect(policy.sources).toEqual({
      system: 4,
      user_input: 3,
      tool_output: 2,
      retrieval: 1,
      agent_inference: 1,
    });
    expect(policy.lowTrustBelow).toBe(3);
  });

  it('exposes configured types, sources and thresholds', () => {
    const policy = compilePolicy(`
version: 1
default_verdict: Block
types: [fact, goal]
sources: { admin: 9, bot: 1 }
low_trust_below: 5
`);
    expect(policy).toMatchObject({ defaultVerdict: 'Block', types: ['fact', 'goal'], lowTrustBelow: 5 });
    expect(policy.sources).toEqual({ admin: 9, bot: 1 });
  });

  it('canonicalises required keys like state writes do', () => {
    const policy = compilePolicy('version: 1\nactions:\n  a.b: { requires: ["  Budget.Limit "] }\n');
    expect(policy.evaluate(input('a.b')).reasons[0]?.keys).toEqual(['budget.limit']);
  });
});

describe('compilePolicy: revision', () => {
  const BLOCK_STYLE = `
# a comment
version: 1
default_verdict: Warn
actions:
  payments.transfer:
    requires:
      - key: budget.limit
        min_trust: user_input
    rules:
      - name: over_budget
        when: "double(params.amount) > 100.0"
        verdict: Block
`;
  const FLOW_STYLE = `{actions: {payments.transfer: {rules: [{verdict: Block, name: over_budget,
  when: 'double(params.amount) > 100.0'}], requires: [{min_trust: user_input, key: budget.limit}]}},
  default_verdict: "Warn", version: 1}`;

  it('is a SHA-256 hex digest, stable across formatting, comments, quoting and key order', () => {
    const revision = compilePolicy(BLOCK_STYLE).revision;
    expect(revision).toMatch(/^[0-9a-f]{64}$/);
    expect(compilePolicy(FLOW_STYLE).revision).toBe(revision);
    expect(compilePolicy(BLOCK_STYLE).revision).toBe(revision);
  });

  it('changes when the content changes', () => {
    const revision = compilePolicy(BLOCK_STYLE).revision;
    expect(compilePolicy(BLOCK_STYLE.replace('100.0', '200.0')).revision).not.toBe(revision);
    expect(compilePolicy(BLOCK_STYLE.replace('Warn', 'Block')).revision).not.toBe(revision);
    expect(compilePolicy(BLOCK_STYLE.replace('over_budget', 'too_much')).revision).not.toBe(revision);
  });

  it('is the same for a default written out and a default left implicit', () => {
    expect(compilePolicy('version: 1\nopen_conflicts: Warn\n').revision).toBe(
      compilePolicy('version: 1\n').revision,
    );
  });
});

describe('compilePolicy: errors', () => {
  it('reports a YAML syntax error with its line and column', () => {
    const error = compileError('version: 1\nrules: [\n  - name: x\n', 'policy.yaml');
    expect(error.code).toBe('invalid_request');
    expect(error.errors.length).toBeGreaterThan(0);
    expect(error.errors[0]?.message).toMatch(/^policy\.yaml:\d+:\d+: YAML syntax error: /);
    expect(error.message).toContain('Invalid policy policy.yaml');
  });

  it('reports a duplicate YAML key', () => {
    const error = compileError('version: 1\nversion: 1\n');
    expect(error.errors).toEqual([{ path: '', message: '2:1: YAML syntax error: Map keys must be unique' }]);
  });

  it('rejects an unknown field with its path, position and the allowed fields', () => {
    const error = compileError(
      'version: 1\nactions:\n  "payments.*":\n    require: [budget.limit]\n',
      'policy.yaml',
    );
    expect(error.errors).toEqual([
      {
        path: 'actions["payments.*"].require',
        message: 'policy.yaml:4:5: Unknown field "require"; allowed: description, requires, rules',
      },
    ]);
    expect(error.message).toContain(
      'policy.yaml:4:5: actions["payments.*"].require: Unknown field "require"; allowed: description, requires, rules',
    );
  });

  it('rejects a bad verdict, naming the value given', () => {
    const error = compileError('version: 1\nrules:\n  - name: x\n    when: "true"\n    verdict: Deny\n');
    expect(error.errors).toEqual([
      {
        path: 'rules[0].verdict',
        message: '5:14: Invalid option: expected one of "Block"|"Warn", got "Deny"',
      },
    ]);
  });

  it('rejects an Allow rule verdict and a bad default verdict', () => {
    const error = compileError(
      'version: 1\ndefault_verdict: Maybe\nrules: [{ name: x, when: "true", verdict: Allow }]\n',
    );
    expect(error.errors.map((e) => e.path)).toEqual(['default_verdict', 'rules[0].verdict']);
  });

  it('reports a CEL syntax error at its column inside the expression', () => {
    const error = compileError(
      'version: 1\nrules:\n  - name: x\n    when: "action == "\n    verdict: Block\n',
    );
    expect(error.errors).toEqual([
      { path: 'rules[0].when', message: '4:21: CEL syntax error: Unexpected token: EOF' },
    ]);
  });

  it('reports CEL type errors: unknown variables, unknown state fields, wrong operands', () => {
    const error = compileError(`version: 1
rules:
  - { name: a, when: "user.admin", verdict: Block }
  - { name: b, when: "state['x.y'].valu == 'v'", verdict: Block }
  - { name: c, when: "action + 1 == 2", verdict: Block }
`);
    expect(error.errors.map((e) => [e.path, e.message])).toEqual([
      ['rules[0].when', '3:23: CEL type error: Unknown variable: user'],
      ['rules[1].when', '4:36: CEL type error: No such key: valu'],
      ['rules[2].when', '5:23: CEL type error: no such overload: string + int'],
    ]);
  });

  it('rejects a condition that can never be a bool', () => {
    const error = compileError('version: 1\nrules: [{ name: x, when: "size(conflicts)", verdict: Warn }]\n');
    expect(error.errors[0]).toEqual({
      path: 'rules[0].when',
      message: '2:27: A condition must be a bool expression; this one is int',
    });
  });

  it('rejects a bad message placeholder at its position', () => {
    const error = compileError(
      'version: 1\nrules: [{ name: x, when: "true", verdict: Warn, message: "Hi {nope}!" }]\n',
    );
    expect(error.errors.map((e) => [e.path, e.message])).toEqual([
      ['rules[0].message', '2:63: In placeholder {nope}: CEL type error: Unknown variable: nope'],
    ]);
    const unclosed = compileError(
      'version: 1\nrules: [{ name: x, when: "true", verdict: Warn, message: "a {b" }]\n',
    );
    expect(unclosed.errors[0]?.message).toContain('Unclosed "{" in message');
  });

  it('rejects duplicate rule names within a list, but allows the same name in different lists', () => {
    const error = compileError(`version: 1
rules:
  - { name: check, when: "true", verdict: Warn }
  - { name: check, when: "false", verdict: Block }
actions:
  a.b:
    rules: [{ name: check, when: "true", verdict: Warn }]
`);
    expect(error.errors).toEqual([
      { path: 'rules[1].name', message: '4:13: Duplicate rule name "check" in this list' },
    ]);
  });

  it('requires a rule name and rejects the names of built-in checks', () => {
    const error = compileError(`version: 1
rules:
  - { when: "true", verdict: Warn }
  - { name: policy_error, when: "true", verdict: Warn }
`);
    expect(error.errors.map((e) => [e.path, e.message.replace(/^\d+:\d+: /, '')])).toEqual([
      ['rules[0].name', 'Required field "name" is missing'],
      ['rules[1].name', expect.stringContaining('Reserved for a built-in check')],
    ]);
  });

  it('rejects an unknown min_trust source, an unknown type and a malformed key', () => {
    const error = compileError(`version: 1
actions:
  a.b:
    requires:
      - { key: budget.limit, min_trust: admin, types: [fact, rumour] }
      - budget
`);
    expect(error.errors.map((e) => e.path)).toEqual([
      'actions["a.b"].requires[0].min_trust',
      'actions["a.b"].requires[0].types[1]',
      'actions["a.b"].requires[1].key',
    ]);
    expect(error.errors[0]?.message).toContain('Unknown source "admin"');
  });

  it('requires version 1 and an object document', () => {
    expect(compileError('version: 2\n').errors).toEqual([
      { path: 'version', message: '1:10: The policy format version must be 1, got 2' },
    ]);
    expect(compileError('').errors[0]?.message).toMatch(/^1:1: /);
    expect(compileError('- a\n- b\n').errors[0]?.path).toBe('');
  });

  it('refuses YAML alias bombs instead of expanding them', () => {
    let yaml = 'version: 1\na0: &a0 [x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 9; i++)
      yaml += `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(', ')}]\n`;
    const error = compileError(yaml);
    expect(error.errors).toEqual([
      { path: '', message: expect.stringMatching(/^1:1: YAML error: Excessive alias count/) },
    ]);
  });

  it('reports every problem of a file at once, in file order, prefixed with the source', () => {
    const error = compileError(
      `version: 1
colour: blue
rules:
  - { name: x, when: "nope > 1", verdict: Warn }
  - { name: y, when: "true", verdict: Stop }
`,
      'gate.yaml',
    );
    expect(error.errors.map((e) => e.message.split(' ')[0])).toEqual([
      'gate.yaml:2:1:',
      'gate.yaml:4:23:',
      'gate.yaml:5:39:',
    ]);
    expect(error.message).toMatch(/^Invalid policy gate\.yaml \(3 problems\):\n/);
  });
});

describe('compilePolicy: what would otherwise vanish or fail later', () => {
  const RULE = '{ name: r, when: "true", verdict: Block }';

  it('refuses a __proto__ action pattern or source name at its key, instead of dropping it', () => {
    const action = compileError(`version: 1\nactions:\n  __proto__:\n    rules: [${RULE}]\n`, 'p.yaml');
    expect(action.errors).toEqual([
      { path: 'actions.__proto__', message: 'p.yaml:3:3: "__proto__" is not allowed as an action pattern' },
    ]);
    const source = compileError('version: 1\nsources: { __proto__: 5, user_input: 3 }\n');
    expect(source.errors).toEqual([
      { path: 'sources.__proto__', message: '2:12: "__proto__" is not allowed as a source name' },
    ]);
  });

  it('refuses two action patterns that are one once trimmed, instead of keeping only the last', () => {
    const error = compileError(
      `version: 1\nactions:\n  "a.b": { rules: [${RULE}] }\n  " a.b": { rules: [${RULE}] }\n`,
    );
    expect(error.errors).toEqual([
      { path: 'actions[" a.b"]', message: '4:3: " a.b" and "a.b" are the same action pattern once trimmed' },
    ]);
  });

  it('points an invalid source name at the key and says why', () => {
    expect(compileError('version: 1\nsources: { Admin: 5, user_input: 3 }\n').errors).toEqual([
      {
        path: 'sources.Admin',
        message:
          '2:12: Invalid name "Admin": Must be lower-case letters, digits and _, starting with a letter',
      },
    ]);
    // A map whose only name is invalid is not also reported as empty.
    expect(compileError('version: 1\nsources: { Admin: 5 }\n').errors.map((e) => e.path)).toEqual([
      'sources.Admin',
    ]);
    expect(compileError('version: 1\nsources: {}\n').errors).toEqual([
      { path: 'sources', message: '2:10: At least one source is required' },
    ]);
  });

  it('refuses a matches() pattern, timestamp or duration literal that fails on every evaluation', () => {
    const error = compileError(`version: 1
rules:
  - { name: a, when: "action.matches('(')", verdict: Block }
  - { name: b, when: "action.matches('[')", verdict: Block, on_error: Allow }
  - { name: c, when: "timestamp('nope') < now", verdict: Block }
  - { name: d, when: "now - state['k.k'].updated_at > duration('1 day')", verdict: Warn }
  - { name: e, when: "action.matches('^a+$') && timestamp('2025-01-06T12:00:00Z') < now", verdict: Warn }
`);
    expect(error.errors.map((e) => [e.path, e.message])).toEqual([
      ['rules[0].when', '3:38: Invalid regular expression: (; this would fail on every evaluation'],
      ['rules[1].when', '4:38: Invalid regular expression: [; this would fail on every evaluation'],
      [
        'rules[2].when',
        '5:33: timestamp() requires a string in ISO 8601 format; this would fail on every evaluation',
      ],
      ['rules[3].when', '6:64: Invalid duration string: 1 day; this would fail on every evaluation'],
    ]);
  });

  it('reports an expression nested too deeply once, in words', () => {
    const chain = Array(5000).fill('true').join(' && ');
    const error = compileError(`version: 1\nrules: [{ name: r, when: "${chain}", verdict: Block }]\n`);
    expect(error.errors).toEqual([
      {
        path: 'rules[0].when',
        message: expect.stringMatching(/^2:\d+: The expression nests too deeply \(at most 200 levels/),
      },
    ]);
    // A long chain within the limit still loads.
    const fine = Array(150).fill('true').join(' && ');
    expect(
      compilePolicy(`version: 1\nrules: [{ name: r, when: "${fine}", verdict: Block }]\n`).rules,
    ).toHaveLength(1);
  });

  it('reports YAML nested too deeply once, however deep and wherever on the stack it loads', () => {
    const nested = (depth: number) => `version: 1\nx: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
    // The parser overflows the stack on the deep one, at a place that depends on the stack left.
    const atStackDepth = (frames: number, run: () => GatehouseError): GatehouseError =>
      frames === 0 ? run() : atStackDepth(frames - 1, run);
    for (const [depth, frames] of [
      [64, 0],
      [5000, 0],
      [5000, 500],
      [5000, 1000],
    ] as const) {
      expect(atStackDepth(frames, () => compileError(nested(depth))).errors).toEqual([
        {
          path: '',
          message: expect.stringMatching(/^2:\d+: The YAML nests too deeply \(at most 64 levels\)$/),
        },
      ]);
    }
    expect(compileError(nested(63)).errors[0]?.path).toBe('x');
  });

  it('says a policy is one YAML document', () => {
    expect(compileError('version: 1\n---\nversion: 1\n').errors).toEqual([
      { path: '', message: '2:1: A policy is one YAML document; this text holds another one from here' },
    ]);
  });

  it('refuses an unknown YAML tag, reported with the other problems', () => {
    const error = compileError(
      'version: 1\ndefault_verdict: !foo Allow\nrules: [{ name: x, when: "true", verdict: Stop }]\n',
    );
    expect(error.errors).toEqual([
      { path: '', message: '2:18: Unknown YAML tag !foo' },
      { path: 'rules[0].verdict', message: expect.stringContaining('3:43: Invalid option') },
    ]);
  });

  it('does not repeat the word policy in the title', () => {
    expect(compileError('version: 2\n', 'policy').message).toMatch(
      /^Invalid policy \(1 problem\):\n {2}policy:1:10: /,
    );
    expect(compileError('version: 2\n', 'default policy').message).toMatch(
      /^Invalid default policy \(1 problem\)/,
    );
  });
});

describe('loadPolicyFile', () => {
  it('compiles a policy file, prefixing error positions with its path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-policy-'));
    const good = join(dir, 'good.yaml');
    await writeFile(good, 'version: 1\ndefault_verdict: Block\n');
    const policy = await loadPolicyFile(good);
    expect(policy.evaluate(input('x.y')).verdict).toBe('Block');

    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'version: 1\nrules: [{ name: x, when: "true", verdict: Nope }]\n');
    await expect(loadPolicyFile(bad)).rejects.toMatchObject({
      code: 'invalid_request',
      errors: [{ path: 'rules[0].verdict', message: expect.stringMatching(new RegExp(`^${bad}:2:`)) }],
    });
  });

  it('fails with a clear message when the file cannot be read', async () => {
    const missing = join(tmpdir(), 'gatehouse-no-such-policy.yaml');
    const error = await loadPolicyFile(missing).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(GatehouseError);
    expect(error).toMatchObject({
      code: 'invalid_request',
      message: `Cannot read policy file ${missing}: no such file (ENOENT)`,
    });
  });
});

describe('defaultPolicy', () => {
  it('is compiled from DEFAULT_POLICY_YAML once and shared', () => {
    expect(defaultPolicy()).toBe(defaultPolicy());
    expect(defaultPolicy().revision).toBe(compilePolicy(DEFAULT_POLICY_YAML).revision);
  });

  it('allows actions and warns about unresolved conflicts', () => {
    expect(defaultPolicy().evaluate(input('email.send'))).toMatchObject({ verdict: 'Allow', reasons: [] });
    const result = defaultPolicy().evaluate(input('email.send', { conflicts: [conflict('user.email')] }));
    expect(result.verdict).toBe('Warn');
    expect(result.reasons.map((r) => r.rule)).toEqual(['open_conflicts']);
  });

  it('holds commented examples that compile and work once uncommented', () => {
    const lines = DEFAULT_POLICY_YAML.split('\n');
    const exampleAt = (firstLine: string): string => {
      const block: string[] = [];
      for (let i = lines.findIndex((line) => line.startsWith(firstLine)); lines[i]?.startsWith('#   '); i++) {
        block.push(lines[i]?.slice(3) ?? '');
      }
      return block.join('\n');
    };
    const example = compilePolicy(`version: 1\nrules:\n${exampleAt('#   - name: no_deploy')}\n`);
    expect(example.evaluate(input('deploy.prod')).verdict).toBe('Block');
  });

  it('guards payments: a trusted budget is required and may not be exceeded', () => {
    const transfer = defaultPolicy().evaluate(
      input('payments.transfer', { params: { amount: 20000 }, state: { 'budget.limit': item('1000') } }),
    );
    expect(transfer.reasons.map((r) => r.rule)).toEqual(['over_budget']);
    expect(transfer.shadow.map((r) => r.rule)).toEqual(['large_transfer']);
    const missing = defaultPolicy().evaluate(input('payments.transfer', { params: { amount: 1 } }));
    expect(missing.reasons.map((r) => r.rule)).toEqual(['required_missing']);
    const ok = defaultPolicy().evaluate(
      input('payments.transfer', { params: { amount: 10 }, state: { 'budget.limit': item('1000') } }),
    );
    expect(ok.verdict).toBe('Allow');
  });
});
