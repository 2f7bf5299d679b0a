/**
 * Policy safety: a rule that throws, hits a type error, returns a non-bool or costs too much
 * fails closed (`policy_error`, Block unless the rule says otherwise), and evaluation stays
 * bounded whatever the caller sends. A broken policy file is refused at start (exit 1) and on
 * reload (SIGHUP: the old policy stays in force, no request fails), then a good one takes over.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, GatehouseError, LIMITS } from '../../src/index.js';
import { cli, type ServeProcess, startServe, stopServe, waitFor } from './fixtures.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-policy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function policy(rules: Array<{ name: string; when: string; on_error?: string }>): string {
  const body = rules
    .map(
      (r) =>
        `      - name: ${r.name}\n        when: ${JSON.stringify(r.when)}\n        verdict: Block\n        message: "${r.name} fired"\n` +
        (r.on_error ? `        on_error: ${r.on_error}\n` : ''),
    )
    .join('');
  return `version: 1\nactions:\n  "tool.*":\n    rules:\n${body}`;
}

async function decide(yaml: string, params: Record<string, unknown>) {
  const gh = createGatehouse({ store: openSqliteStore(), policy: compilePolicy(yaml) });
  try {
    return await gh.evaluate({ session_id: 's1', action: 'tool.run', params });
  } finally {
    await gh.store.close();
  }
}

/** The largest list a caller can send: `[0,0,…]` filling the 16 KiB params limit. */
const bigList = Array.from({ length: Math.floor((LIMITS.objectBytes - 20) / 2) }, () => 0);

describe('rules that fail at evaluation fail closed', () => {
  it.each([
    ['throws (int of a non-number)', 'int(params.x) > 1', { x: 'abc' }],
    ['type error at runtime (string > int)', 'params.x > 1', { x: 'abc' }],
    ['reads a missing field', 'params.missing > 1', {}],
    ['returns a non-bool', 'dyn(params.x)', { x: 'yes' }],
    ['divides by zero', '1 / int(params.x) == 1', { x: 0 }],
  ])('a rule that %s: Block with policy_error', async (_what, when, params) => {
    const d = await decide(policy([{ name: 'r', when }]), params);
    expect(d).toMatchObject({ verdict: 'Block', allowed: false });
    expect(d.reasons).toEqual([
      expect.objectContaining({
        rule: 'policy_error',
        verdict: 'Block',
        message: expect.stringContaining('r'),
      }),
    ]);
  });

  it('on_error picks the verdict of a failing rule (Warn), and it is still reported', async () => {
    const d = await decide(policy([{ name: 'r', when: 'params.missing > 1', on_error: 'Warn' }]), {});
    expect(d).toMatchObject({ verdict: 'Warn', reasons: [{ rule: 'policy_error', verdict: 'Warn' }] });
  });
});

describe('evaluation is bounded whatever the caller sends', () => {
  it.each([
    ['a cross product', 'params.l.exists(a, params.l.exists(b, a + b == -1))'],
    [
      'three nested comprehensions',
      'params.l.exists(a, params.l.exists(b, params.l.exists(c, a + b + c == -1)))',
    ],
    ['a nested map()', 'params.l.map(a, params.l.map(b, b)).size() == -1'],
    ['a linear scan per element', 'params.l.exists(a, (a + 1.0) in params.l && false)'],
    ['map keys against map keys', "params.m.exists(k, params.m.exists(j, k == j + 'x'))"],
  ])('%s over the largest params: policy_error, not a stalled process', async (_what, when) => {
    // As many map entries as fit in 16 KiB ({"k1234":1,…} is 10 bytes an entry).
    const m = Object.fromEntries(Array.from({ length: 1400 }, (_, i) => [`k${i}`, i]));
    const started = performance.now();
    const d = await decide(
      policy([{ name: 'expensive', when }]),
      when.includes('params.m') ? { m } : { l: bigList },
    );
    // Unbounded, the first case alone is 64 million steps (~30 s); the budget stops it in ~0.1 s.
    // This is a liveness bound, far above the budget, not a timing measurement.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(d.verdict).toBe('Block');
    expect(d.reasons[0]).toMatchObject({
      rule: 'policy_error',
      message: expect.stringContaining('evaluation cost limit exceeded'),
    });
  });

  it('a linear rule over the largest params still evaluates, and decides right', async () => {
    const yaml = policy([
      { name: 'has_negative', when: 'params.l.exists(x, x < 0)' },
      { name: 'all_zero', when: 'params.l.all(x, x == 0) && size(params.l) > 8000' },
    ]);
    const d = await decide(yaml, { l: bigList });
    expect(d.reasons.map((r) => r.rule)).toEqual(['all_zero']);
  });

  it('a regular expression chosen by the caller is refused at load', () => {
    for (const when of [
      'params.s.matches(params.p)',
      "'abc'.matches(context.p)",
      "params.s.matches('^' + params.p)",
      "params.s.matches(state['re.x'].value)",
    ]) {
      expect(() => compilePolicy(policy([{ name: 'r', when }]))).toThrow(
        /matches\(\) needs a literal pattern/,
      );
    }
    expect(() => compilePolicy(policy([{ name: 'r', when: "params.s.matches('^[a-z]+$')" }]))).not.toThrow();
  });
});

describe('evaluation is bounded whatever the policy says', () => {
  const literal = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(', ')}]`;
  const costError = {
    rule: 'policy_error',
    verdict: 'Block',
    message: expect.stringContaining('evaluation cost limit exceeded'),
    keys: [],
  };
  function loadProblem(when: string): string {
    try {
      compilePolicy(policy([{ name: 'r', when }]));
    } catch (error) {
      if (error instanceof GatehouseError) return error.errors.map((e) => e.message).join('\n');
      throw error;
    }
    throw new Error('expected the policy to be refused at load');
  }

  it('refuses at load comprehensions nested four deep (a policy of 800 bytes that ran for seconds)', () => {
    const l = literal(40);
    const when = `${l}.exists(a, ${l}.exists(b, ${l}.exists(c, ${l}.exists(d, a + b + c + d == -1))))`;
    expect(policy([{ name: 'r', when }]).length).toBeLessThan(832);
    expect(loadProblem(when)).toMatch(/Comprehensions .* nest 4 deep here; at most 3 may nest/);
  });

  it('refuses at load nested comprehensions over literals that iterate past the budget', () => {
    const l = literal(100);
    expect(loadProblem(`${l}.exists(a, ${l}.exists(b, ${l}.exists(c, a + b + c == -1)))`)).toMatch(
      /over literals iterate up to 1,000,000 times on every evaluation, more than the evaluation cost limit/,
    );
  });

  it('refuses at load a list literal past the parser limit, saying so', () => {
    expect(loadProblem(`action in ${literal(1001)}.map(x, string(x))`)).toMatch(
      /A list literal may have at most 1000 elements/,
    );
  });

  it('stops a literal nest that loads but costs too much at evaluation: policy_error', async () => {
    const l = literal(70);
    const d = await decide(
      policy([{ name: 'r', when: `${l}.exists(a, ${l}.exists(b, ${l}.exists(c, a + b + c == -1)))` }]),
      {},
    );
    expect(d.reasons).toEqual([costError]);
  });

  // A comma-separated list near the params limit: 3,200 distinct IDs of 3 characters.
  const ids = Array.from({ length: 3200 }, (_, i) => i.toString(36).padStart(3, '0')).join(',');

  it.each([
    [
      'duplicates by split() and filter()',
      "params.ids.split(',').filter(id, params.ids.split(',').filter(j, j == id).size() > 1).size() > 0",
    ],
    [
      'a scan of a bound split() list per element',
      "cel.bind(l, params.ids.split(','), l.exists(a, !(a in l)))",
    ],
    [
      'a scan of a split() list inside a literal',
      "[params.ids.split(',')].exists(l, l.exists(a, !(a in l)))",
    ],
    ['a long string rebuilt per element', "params.ids.split(',').map(x, params.ids + x).size() == 0"],
  ])('%s over the largest params: policy_error', async (_what, when) => {
    const d = await decide(policy([{ name: 'r', when }]), { ids });
    expect(d.reasons).toEqual([costError]);
  });

  it('a linear rule over a split() list of the largest params still decides right', async () => {
    const d = await decide(
      policy([
        { name: 'has_admin', when: "params.ids.split(',').exists(t, t == 'admin')" },
        {
          name: 'all_ids',
          when: "params.ids.split(',').all(t, t.size() == 3) && params.ids.size() > 12000",
        },
      ]),
      { ids },
    );
    expect(d.reasons.map((r) => r.rule)).toEqual(['all_ids']);
  });

  it('keeps the metering hook out of the policy language', () => {
    expect(loadProblem('gatehouse_cost_probe(true)')).toMatch(/gatehouse_cost_probe/);
  });
});

// ---- the real process: start, reload, regular expressions --------------------------------------

describe('gatehouse serve and its policy file', () => {
  const file = join(dir, 'policy.yaml');
  const goodA = policy([
    { name: 'big', when: 'has(params.amount) && params.amount > 100' },
    { name: 'runaway_regex', when: "has(params.s) && params.s.matches('^(a+)+$')" },
  ]);
  const goodB = policy([{ name: 'big', when: 'has(params.amount) && params.amount > 10' }]);
  const broken =
    'version: 1\nactions:\n  "tool.*":\n    rules:\n      - name: r\n        when: "params.amount >"\n';
  let serve: ServeProcess | undefined;
  afterAll(async () => {
    if (serve) await stopServe(serve);
  });

  it('refuses to start on a broken policy file (exit 1, the problem named)', async () => {
    writeFileSync(file, broken);
    const error = (await run(
      process.execPath,
      [cli, 'serve', '--port', '0', '--database', join(dir, 'a.db'), '--policy', file],
      {
        timeout: 20_000,
      },
    ).catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(error.code).toBe(1);
    expect(error.stderr).toMatch(/policy\.yaml.*5:/);
    expect(error.stderr).not.toMatch(/at .*\.js:\d+/);
  });

  it('keeps the old policy when a reload meets a broken file, serving throughout; a good file takes over', async () => {
    writeFileSync(file, goodA);
    serve = await startServe(['--database', join(dir, 'b.db'), '--policy', file, '--rate-limit', '0'], {
      env: { GATEHOUSE_LOG_LEVEL: 'info' },
    });
    const url = serve.url;
    const key = serve.key!;
    const evaluate = async (params: Record<string, unknown>) => {
      const res = await fetch(`${url}/v1/gates/evaluate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: 's1', action: 'tool.run', params }),
      });
      return {
        status: res.status,
        json: (await res.json()) as { verdict: string; policy: { revision: string } },
      };
    };

    const first = await evaluate({ amount: 50 });
    expect(first).toMatchObject({ status: 200, json: { verdict: 'Allow' } });
    const revisionA = first.json.policy.revision;

    // Requests keep flowing while the file is broken and reloaded, then replaced.
    let stop = false;
    const statuses: number[] = [];
    const traffic = (async () => {
      while (!stop) statuses.push((await evaluate({ amount: 50 })).status);
    })();

    writeFileSync(file, broken);
    serve.proc.kill('SIGHUP');
    await waitFor(
      () => /policy reload failed/.test(serve!.stderr()),
      10_000,
      'the reload failure in the log',
    );
    const during = await evaluate({ amount: 50 });
    expect(during.json).toMatchObject({ verdict: 'Allow', policy: { revision: revisionA } });
    expect((await evaluate({ amount: 500 })).json.verdict).toBe('Block');

    writeFileSync(file, goodB);
    serve.proc.kill('SIGHUP');
    await waitFor(
      async () => (await evaluate({ amount: 50 })).json.policy.revision !== revisionA,
      10_000,
      'the new revision',
    );
    expect((await evaluate({ amount: 50 })).json.verdict).toBe('Block');
    stop = true;
    await traffic;
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    // The log line follows the switch; it reaches this process through a pipe, maybe a moment later.
    await waitFor(() => /policy reloaded/.test(serve!.stderr()), 10_000, 'the reload in the log');
  });

  it('a runaway regular expression in the policy does not stall the service', async () => {
    writeFileSync(file, goodA);
    serve!.proc.kill('SIGHUP');
    const url = serve!.url;
    const headers = { authorization: `Bearer ${serve!.key}`, 'content-type': 'application/json' };
    await waitFor(
      async () => {
        const res = await fetch(`${url}/v1/gates/evaluate`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ session_id: 's1', action: 'tool.run', params: { amount: 50 } }),
        });
        return ((await res.json()) as { verdict: string }).verdict === 'Allow';
      },
      10_000,
      'policy A again',
    );
    // 2^40 steps on a backtracking engine; V8's linear fallback (set by the CLI) answers at once.
    const started = performance.now();
    const res = await fetch(`${url}/v1/gates/evaluate`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ session_id: 's1', action: 'tool.run', params: { s: `${'a'.repeat(40)}!` } }),
      signal: AbortSignal.timeout(15_000),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { verdict: string }).verdict).toBe('Allow');
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

it('GatehouseError is what a broken policy throws in-process', () => {
  expect(() => compilePolicy('version: 1\nbogus: 1\n')).toThrow(GatehouseError);
});
