/**
 * The real `gatehouse` process on loopback: the two-command start, the README walk-through run
 * as written, the in-process example, and the CLI's other commands.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../adapters/webhooks/index.js';
import { type ServeProcess, startServe, stopServe } from '../reliability/fixtures.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const cli = join(root, 'dist/adapters/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-'));

function block(name: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.split(`<!-- ${name}:start -->`)[1]!.split(`<!-- ${name}:end -->`)[0]!;
  return section.replace(/^\s*```\w*\n/, '').replace(/```\s*$/, '');
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('gatehouse serve', () => {
  let server: ServeProcess;
  const db = join(dir, 'serve.db');

  // Tests never resolve names or leave loopback: the walk-through's webhook URL is swapped for a
  // loopback receiver, which the development setting allows over http.
  const received: Array<{ headers: Record<string, string>; body: string }> = [];
  let receiverUrl = '';
  let receiver: Server;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        received.push({ headers: req.headers as Record<string, string>, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/gatehouse`;
    server = await startServe(['--database', db, '--allow-insecure-loopback-webhooks'], { cwd: dir });
  });
  afterAll(async () => {
    await stopServe(server);
    receiver.closeAllConnections();
    receiver.close();
  });

  it('prints an admin key once, with how to use it', () => {
    expect(server.key).toMatch(/^gh_/);
    expect(server.stdout()).toContain('curl -s -X POST');
  });

  it('runs the README walk-through as written', async () => {
    const script = block('walkthrough').replace('https://hooks.example.com/gatehouse', receiverUrl);
    expect(script).toContain(receiverUrl);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
      env: { ...process.env, GATEHOUSE_URL: server.url, GATEHOUSE_KEY: server.key! },
    });
    const [hook, created, conflict, resolved, decision, bySession, byDecision, verified] = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(hook).toMatchObject({ url: receiverUrl, secret: expect.stringMatching(/^whsec_/) });
    expect(created).toMatchObject({ outcome: 'created', item: { key: 'budget.limit', value: '5000' } });
    expect(conflict).toMatchObject({ outcome: 'conflict', item: { value: '5000', status: 'conflicted' } });
    expect(resolved).toMatchObject({ status: 'resolved', resolution: 'keep_current' });
    expect(decision).toMatchObject({
      verdict: 'Block',
      allowed: false,
      decision_id: expect.stringMatching(/^dec_/),
    });
    expect(decision.reason).toContain('9000');
    expect(bySession.events[0].data.decision_id).toBe(decision.decision_id);
    expect(byDecision.events.map((e: { type: string }) => e.type)).toEqual(['gate_evaluation']);
    expect(verified).toMatchObject({ ok: true });
    for (let i = 0; i < 300 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(received).toHaveLength(1);
    const event = verifyWebhook(hook.secret, received[0]!.headers, received[0]!.body);
    expect(event).toMatchObject({
      type: 'gate_evaluation',
      data: { decision_id: decision.decision_id, verdict: 'Block' },
    });
  });

  it('the CLI reads the same database: history, verify, keys', async () => {
    const history = await run(process.execPath, [
      cli,
      'history',
      '--database',
      db,
      '--type',
      'gate_evaluation',
    ]);
    expect(history.stdout).toContain('payments.transfer → Block');
    const verify = await run(process.execPath, [cli, 'verify', '--database', db]);
    expect(verify.stdout).toMatch(/tenant default: ok, \d+ events/);
    const created = await run(process.execPath, [
      cli,
      'keys',
      'create',
      '--database',
      db,
      '--scopes',
      'gate:evaluate',
      '--name',
      'agent',
    ]);
    const newKey = created.stdout.split('\n')[0]!;
    const res = await fetch(`${server.url}/v1/gates/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${newKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: 'demo', action: 'email.send' }),
    });
    expect(res.status).toBe(200);
    const denied = await fetch(`${server.url}/v1/history/events`, {
      headers: { authorization: `Bearer ${newKey}` },
    });
    expect(denied.status).toBe(403);
    const list = await run(process.execPath, [cli, 'keys', 'list', '--database', db]);
    expect(list.stdout).toContain('name=agent');
    expect(list.stdout).not.toContain(newKey);
    const id = /^(key_\S+)/m.exec(list.stdout.split('\n').find((l) => l.includes('name=agent'))!)![1]!;
    await run(process.execPath, [cli, 'keys', 'revoke', id, '--database', db]);
    const revoked = await fetch(`${server.url}/v1/gates/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${newKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(revoked.status).toBe(401);
  });

  it('stops cleanly on SIGTERM and prints no key on the next start', async () => {
    expect(await stopServe(server)).toBe(0);
    const again = await startServe(['--database', db, '--allow-insecure-loopback-webhooks'], { cwd: dir });
    expect(again.key).toBeUndefined();
    expect(again.stdout()).toContain('API keys exist already');
    expect(await stopServe(again)).toBe(0);
  });
});

describe('gatehouse policy and errors', () => {
  it('policy check reports problems with line numbers and exits 1', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'version: 1\nactions:\n  "x.*":\n    rules:\n      - name: r\n        when: "params.amount >"\n        verdict: Block\n',
    );
    const error = await run(process.execPath, [cli, 'policy', 'check', bad]).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect((error as { code: number }).code).toBe(1);
    expect((error as { stderr: string }).stderr).toMatch(/bad\.yaml.*6:/);
    const good = join(dir, 'good.yaml');
    writeFileSync(good, (await run(process.execPath, [cli, 'policy', 'default'])).stdout);
    expect((await run(process.execPath, [cli, 'policy', 'check', good])).stdout).toContain('ok');
  });

  it('serve refuses to start on a broken policy (fail closed)', async () => {
    const bad = join(dir, 'bad2.yaml');
    writeFileSync(bad, 'version: 1\nbogus: true\n');
    const error = await run(
      process.execPath,
      [cli, 'serve', '--port', '0', '--database', join(dir, 'x.db'), '--policy', bad],
      {
        timeout: 20_000,
      },
    ).catch((e: { code: number; stderr: string }) => e);
    expect((error as { code: number }).code).toBe(1);
    expect((error as { stderr: string }).stderr).toContain('bogus');
  });

  it('reports a bad flag clearly', async () => {
    const error = await run(process.execPath, [cli, 'serve', '--port', 'abc']).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect((error as { code: number }).code).toBe(1);
    expect((error as { stderr: string }).stderr).toContain('--port must be an integer');
  });
});

describe('the README in-process example', () => {
  it('runs as written', async () => {
    const file = join(root, '.gatehouse', `readme-example-${process.pid}.mjs`);
    mkdirSync(join(root, '.gatehouse'), { recursive: true });
    writeFileSync(file, block('in-process'));
    try {
      const { stdout } = await run(process.execPath, [file], { cwd: root });
      expect(stdout).toMatch(/^Block - Transfer of 9000 exceeds/m);
      expect(stdout).toContain('chain ok: true');
    } finally {
      rmSync(file, { force: true });
    }
  });
});
