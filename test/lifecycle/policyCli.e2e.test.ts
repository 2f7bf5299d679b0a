/**
 * `gatehouse policy test | replay | history` through the real CLI (after the build), read as a
 * user reads them. Every example policy ships with tests, and they pass.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, type PolicyTestRun, type ReplayReport } from '../../src/index.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const cli = join(root, 'dist/adapters/cli/main.js');
const examples = join(root, 'examples/policies');
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-policy-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI; resolves with the exit code instead of rejecting on a non-zero one. */
async function gatehouse(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [cli, ...args], { cwd: root, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('gatehouse policy test', () => {
  const policies = readdirSync(examples).filter((f) => f.endsWith('.yaml') && !f.endsWith('.test.yaml'));

  it('finds example policies, each with its tests', () => {
    expect(policies.length).toBeGreaterThanOrEqual(2);
    const files = readdirSync(examples);
    for (const p of policies) expect(files, p).toContain(p.replace(/\.yaml$/, '.test.yaml'));
  });

  it.each(policies)('examples/policies/%s: every case passes and every rule fires', async (file) => {
    const r = await gatehouse('policy', 'test', `examples/policies/${file}`, '--fail-on-empty');
    expect(r.stdout).not.toContain('✗');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/(\d+) cases: \1 passed, 0 failed/);
    expect(r.stdout).not.toContain('never fired');
  });

  it('the built-in policy: every case passes and every rule fires', async () => {
    const r = await gatehouse('policy', 'test', 'builtin', 'examples/policies/builtin.test.yaml');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Policy built-in');
    expect(r.stdout).toContain('Rule coverage: 2 of 2 rules fired');
  });

  it('a failing case: exit 1, a readable difference, coverage, JSON and JUnit for CI', async () => {
    const tests = join(dir, 'failing.test.yaml');
    writeFileSync(
      tests,
      [
        'cases:',
        '  - name: over budget is only a warning',
        '    state: [{ key: budget.limit, value: "5000", type: fact, source: user_input }]',
        '    action: payments.transfer',
        '    params: { amount: 9000 }',
        '    expect: { verdict: Warn, reasons: [large_transfer] }',
        '  - name: small transfer',
        '    state: [{ key: budget.limit, value: "5000", type: fact, source: user_input }]',
        '    action: payments.transfer',
        '    params: { amount: 10 }',
        '    expect: { verdict: Allow }',
      ].join('\n'),
    );
    const text = await gatehouse('policy', 'test', 'examples/policies/spending.yaml', tests);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('✗ over budget is only a warning');
    expect(text.stdout).toContain('verdict  expected Warn, got Block');
    expect(text.stdout).toContain('missing:    large_transfer');
    expect(text.stdout).toContain(
      'unexpected: over_budget (Block) "Transfer of 9000 exceeds the budget of 5000."',
    );
    expect(text.stdout).toContain('✓ small transfer');
    expect(text.stdout).toContain('never fired: large_transfer (shadow, payments.*)');
    expect(text.stdout).toContain('2 cases: 1 passed, 1 failed');

    const json = await gatehouse(
      'policy',
      'test',
      'examples/policies/spending.yaml',
      tests,
      '--format',
      'json',
    );
    expect(json.code).toBe(1);
    const run = JSON.parse(json.stdout) as PolicyTestRun;
    expect(run.totals).toEqual({ cases: 2, passed: 1, failed: 1 });
    expect(run.coverage.find((c) => c.rule === 'over_budget')).toMatchObject({ fired: 1 });

    const junit = await gatehouse(
      'policy',
      'test',
      'examples/policies/spending.yaml',
      tests,
      '--format',
      'junit',
    );
    expect(junit.stdout).toContain('<testsuites name="gatehouse policy test" tests="2" failures="1">');
    expect(junit.stdout).toContain('<failure message="verdict: expected Warn, got Block;');
  });

  it('no cases: exit 0, or 1 with --fail-on-empty; a broken test file names the field', async () => {
    expect((await gatehouse('policy', 'test', 'builtin')).code).toBe(0);
    const empty = await gatehouse('policy', 'test', 'builtin', '--fail-on-empty');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('no test cases were run');
    const broken = join(dir, 'broken.test.yaml');
    writeFileSync(broken, 'cases:\n  - name: x\n    action: a.b\n');
    const r = await gatehouse('policy', 'test', 'builtin', broken);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cases[0].expect: is required');
  });
});

describe('gatehouse policy replay and history', () => {
  it('replays a database against a candidate file and prints the report; history lists activations', async () => {
    const database = join(dir, 'replay.db');
    const store = openSqliteStore({ filename: database });
    const gh = createGatehouse({ store, policyOrigin: 'builtin' });
    for (let s = 0; s < 5; s += 1) {
      const session_id = `s${s}`;
      await gh.recordState({
        session_id,
        key: 'budget.limit',
        value: '5000',
        type: 'fact',
        source: 'user_input',
      });
      for (const amount of [100, 9000])
        await gh.evaluate({ session_id, action: 'payments.transfer', params: { amount } });
      await gh.evaluate({ session_id, action: 'deploy.prod' });
    }
    await store.close();

    const candidate = join(dir, 'candidate.yaml');
    writeFileSync(
      candidate,
      'version: 1\nrules:\n  - name: no_deploys\n    when: "action.startsWith(\'deploy.\')"\n    verdict: Block\n    message: "Deploys are paused."\n',
    );
    const text = await gatehouse('policy', 'replay', candidate, '--database', database, '--examples', '2');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('Replayed 15 recorded decisions against candidate');
    expect(text.stdout).toMatch(/Allow\s+5\s+0\s+5/);
    expect(text.stdout).toMatch(/no_deploys\s+0\s+5 {2}new/);
    expect(text.stdout).toMatch(/over_budget\s+5\s+0 {2}gone/);
    expect(text.stdout).toContain('now:    Block Deploys are paused.  [no_deploys:Block]');

    const json = await gatehouse(
      'policy',
      'replay',
      candidate,
      '--database',
      database,
      '--json',
      '--action',
      'deploy.*',
    );
    const report = JSON.parse(json.stdout) as ReplayReport;
    expect(report).toMatchObject({
      decisions: 5,
      changed: 5,
      candidate: { revision: compilePolicy(readFileSync(candidate, 'utf8')).revision },
    });

    const history = await gatehouse('policy', 'history', '--database', database);
    expect(history.code).toBe(0);
    expect(history.stdout).toMatch(/builtin {2}\(active\)/);

    const bad = await gatehouse(
      'policy',
      'replay',
      candidate,
      '--database',
      database,
      '--since',
      'yesterday',
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("'yesterday' is not a time");
  });

  it('says how many decisions it could not replay because their values were erased, and why', async () => {
    const database = join(dir, 'replay-erased.db');
    const store = openSqliteStore({ filename: database });
    const gh = createGatehouse({ store, policyOrigin: 'builtin' });
    for (const session_id of ['kept', 'erased']) {
      await gh.recordState({
        session_id,
        key: 'budget.limit',
        value: '5000',
        type: 'fact',
        source: 'user_input',
      });
      await gh.evaluate({ session_id, action: 'payments.transfer', params: { amount: 100 } });
      await gh.evaluate({ session_id, action: 'payments.transfer', params: { amount: 9000 } });
    }
    await gh.eraseSession({ session_id: 'erased', reference: 'DSR-1' });
    const expected = await gh.replayPolicy({ policy: 'version: 1\n' });
    await store.close();
    expect(expected).toMatchObject({ decisions: 2, unreplayable: 2 });

    const candidate = join(dir, 'empty.yaml');
    writeFileSync(candidate, 'version: 1\n');
    const text = await gatehouse('policy', 'replay', candidate, '--database', database);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('Replayed 2 recorded decisions');
    expect(text.stdout).toContain(
      `Not replayed: 2 decisions rested on erased values (params or context erased ${expected.unreplayable_reasons.inputs_erased}, state read erased ${expected.unreplayable_reasons.state_erased}); see docs/replay.md`,
    );

    const only = await gatehouse(
      'policy',
      'replay',
      candidate,
      '--database',
      database,
      '--session',
      'erased',
    );
    expect(only.stdout).toContain('Not replayed: 2 decisions rested on erased values');
    expect(only.stdout).toContain('No other recorded decision matched.');
  });
});
