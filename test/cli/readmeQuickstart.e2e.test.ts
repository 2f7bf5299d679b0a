/**
 * The README's quick start, as a newcomer runs it: `npm start` (the built CLI's `serve`, with its
 * default SQLite file), the printed key, the walk-through block pasted unchanged (its webhook
 * URL included) and the banner's ready-to-paste curl lines. The served process has no working
 * DNS (test/cli/fixtures/noDns.mjs), as on a machine whose resolver cannot answer: the webhook of
 * step 0 is registered through the real check with a warning, and its deliveries fail to resolve
 * and wait for a retry, so nothing leaves loopback.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root, type ServeProcess, startServe, stopServe } from '../reliability/fixtures.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-quickstart-'));
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const noDns = join(import.meta.dirname, 'fixtures/noDns.mjs');

/** The fenced code between `<!-- name:start -->` and `<!-- name:end -->`, as written. */
function block(name: string): string {
  const section = readme.split(`<!-- ${name}:start -->`)[1]!.split(`<!-- ${name}:end -->`)[0]!;
  return section.replace(/^\s*```\w*\n/, '').replace(/```\s*$/, '');
}

async function bash(script: string, serve: ServeProcess): Promise<unknown[]> {
  const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
    env: { ...process.env, GATEHOUSE_URL: serve.url, GATEHOUSE_KEY: serve.key! },
  });
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
}

describe('README quick start', () => {
  let serve: ServeProcess;

  beforeAll(async () => {
    // `--port 0` (added by startServe) instead of 8787, so parallel runs never collide.
    serve = await startServe([], {
      cwd: dir,
      env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${noDns}`.trim() },
    });
  });
  afterAll(async () => {
    await stopServe(serve);
    rmSync(dir, { recursive: true, force: true });
  });

  it('`npm start` is the build, then the CLI serve this test runs', () => {
    expect(readme).toMatch(/npm install && npm start {5}# builds, then serves on http:\/\/127\.0\.0\.1:8787/);
    const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(scripts.prestart).toBe('npm run build');
    expect(scripts.start).toBe('node dist/adapters/cli/main.js serve');
  });

  it('first start: SQLite in .gatehouse/, an admin key printed once with curl lines', () => {
    expect(existsSync(join(dir, '.gatehouse/gatehouse.db'))).toBe(true);
    expect(serve.key).toMatch(/^gh_/);
    expect(serve.stdout()).toContain(`export GATEHOUSE_KEY=${serve.key}`);
  });

  let webhookId = '';

  it('the walk-through, pasted as written, works with no DNS answer for hooks.example.com', async () => {
    const script = block('walkthrough');
    expect(script).toContain('https://hooks.example.com/gatehouse');
    const [hook, created, conflict, resolved, decision, bySession, byDecision, verified] = (await bash(
      script,
      serve,
    )) as any[];
    expect(hook).toMatchObject({
      url: 'https://hooks.example.com/gatehouse',
      events: ['gate_evaluation'],
      filter: { verdicts: ['Block'] },
      secret: expect.stringMatching(/^whsec_/),
      warnings: [
        {
          code: 'url_not_resolved',
          message: expect.stringContaining('hooks.example.com could not be resolved now (EAI_AGAIN)'),
        },
      ],
    });
    webhookId = hook.id;
    expect(created).toMatchObject({ outcome: 'created', item: { key: 'budget.limit', value: '5000' } });
    expect(conflict).toMatchObject({ outcome: 'conflict', item: { value: '5000', status: 'conflicted' } });
    expect(resolved).toMatchObject({ status: 'resolved', resolution: 'keep_current' });
    expect(decision).toMatchObject({ verdict: 'Block', decision_id: expect.stringMatching(/^dec_/) });
    expect(bySession.events[0].data.decision_id).toBe(decision.decision_id);
    expect(byDecision.events.map((e: { type: string }) => e.type)).toEqual(['gate_evaluation']);
    expect(verified).toMatchObject({ ok: true });
  });

  it('the blocked action is queued for the webhook; the attempt fails to resolve and waits for a retry', async () => {
    expect(webhookId).not.toBe('');
    const auth = { authorization: `Bearer ${serve.key}` };
    let deliveries: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${serve.url}/v1/webhooks/${webhookId}/deliveries`, { headers: auth });
      deliveries = ((await res.json()) as { deliveries: typeof deliveries }).deliveries;
      if (deliveries.some((d) => (d.attempts as number) > 0)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(deliveries).toEqual([
      expect.objectContaining({
        event_type: 'gate_evaluation',
        status: 'pending',
        attempts: 1,
        last_status_code: null,
        last_error: expect.stringContaining('EAI_AGAIN'),
        next_attempt_at: expect.any(String),
      }),
    ]);
    // The only names the process tried: the registration check, then the delivery's connection.
    const names = serve
      .stderr()
      .split('\n')
      .filter((line) => line.startsWith('no-dns: '));
    expect(names.length).toBeGreaterThanOrEqual(2);
    expect(new Set(names)).toEqual(new Set(['no-dns: hooks.example.com']));
  });

  it("the banner's ready-to-paste curl lines work as printed", async () => {
    const out = serve.stdout();
    const tryIt = out.split('Try it:\n')[1]!.split('\n\n')[0]!;
    expect(tryIt).toContain('curl -s -X POST');
    // Each printed command ends without a newline of its own; print one, as a shell user sees.
    const [recorded, evaluated] = (await bash(tryIt.replace(/'$/gm, "'; echo"), serve)) as any[];
    expect(recorded).toMatchObject({ item: { key: 'budget.limit', value: '5000' } });
    expect(evaluated).toMatchObject({ verdict: 'Block' });
  });
});
