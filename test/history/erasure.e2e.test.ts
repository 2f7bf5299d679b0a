/**
 * Erasure through a real `gatehouse serve` process on a SQLite file: a random marker recorded as a
 * state value, in params and so in a rendered reason, is found in the raw database and WAL files,
 * `gatehouse export`, `gatehouse history` and the webhook bodies received on loopback before
 * `POST /v1/erasures`, and nowhere after it; the receiver gets `erasure.completed`; `gatehouse
 * verify` passes and counts the erased fields; `gatehouse erase --dry-run` finds nothing left.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cli,
  type ServeProcess,
  startReceiver,
  startServe,
  stopServe,
  waitFor,
} from '../reliability/fixtures.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-erase-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const POLICY = `
version: 1
actions:
  "payments.*":
    rules:
      - name: named_payee
        when: "has(params.to)"
        verdict: Warn
        message: "Transfer to {params.to} of {state['user.name'].value}"
`;

describe('erasure through gatehouse serve', () => {
  let serve: ServeProcess | undefined;
  afterAll(async () => {
    if (serve) await stopServe(serve);
  });

  it('the marker is in every outlet before and in none after', async () => {
    const marker = `mk${randomBytes(8).toString('hex')}`;
    const receiver = await startReceiver(() => 200);
    const policyFile = join(dir, 'policy.yaml');
    writeFileSync(policyFile, POLICY);
    const db = join(dir, 'erase.db');
    serve = await startServe([
      '--database',
      db,
      '--policy',
      policyFile,
      '--allow-insecure-loopback-webhooks',
      '--rate-limit',
      '0',
    ]);
    const headers = { authorization: `Bearer ${serve.key}`, 'content-type': 'application/json' };
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(serve!.url + path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, text: await res.text() };
    };
    const cliRun = async (...args: string[]) =>
      (await run(process.execPath, [cli, ...args, '--database', db])).stdout;
    const files = () =>
      Buffer.concat([db, `${db}-wal`].filter(existsSync).map((f) => readFileSync(f))).includes(marker);

    expect((await api('POST', '/v1/webhooks', { url: receiver.url, events: ['*'] })).status).toBe(201);
    const item = {
      session_id: 'person-1',
      key: 'user.name',
      value: marker,
      type: 'fact',
      source: 'user_input',
    };
    expect((await api('POST', '/v1/state/items', item)).status).toBe(201);
    const evaluation = await api('POST', '/v1/gates/evaluate', {
      session_id: 'person-1',
      action: 'payments.transfer',
      params: { to: marker, amount: 12 },
    });
    expect(JSON.parse(evaluation.text).reason).toContain(marker);
    await waitFor(() => receiver.received.length >= 2, 10_000, 'the first deliveries');

    // Before: every outlet has it.
    expect(files()).toBe(true);
    expect(await cliRun('export')).toContain(marker);
    expect(await cliRun('history', '--json', '--limit', '100')).toContain(marker);
    expect((await api('GET', '/v1/history/events?limit=500')).text).toContain(marker);
    expect(receiver.received.map((r) => r.body).join('\n')).toContain(marker);

    const dry = JSON.parse(
      (await api('POST', '/v1/erasures', { session_id: 'person-1', dry_run: true })).text,
    );
    expect(dry).toMatchObject({ dry_run: true, fields: 6, state_items: ['user.name'], erasure: null });
    const erased = await api('POST', '/v1/erasures', { session_id: 'person-1', reference: 'DSR-7' });
    expect(erased.status).toBe(200);
    const report = JSON.parse(erased.text);
    expect(report.erasure.seq).toBeGreaterThan(0);
    await waitFor(
      () => receiver.received.some((r) => r.body.includes('erasure.completed')),
      10_000,
      'the erasure.completed delivery',
    );
    const seen = receiver.received.length;

    // After: none has it (what receivers already got is theirs to erase: they are told).
    expect(files()).toBe(false);
    expect(await cliRun('export')).not.toContain(marker);
    expect(await cliRun('history', '--json', '--limit', '100')).not.toContain(marker);
    expect((await api('GET', '/v1/history/events?limit=500')).text).not.toContain(marker);
    expect(
      receiver.received
        .slice(seen - 1)
        .map((r) => r.body)
        .join('\n'),
    ).not.toContain(marker);
    const decision = JSON.parse(
      (await api('GET', `/v1/decisions/${JSON.parse(evaluation.text).decision_id}`)).text,
    );
    expect(decision).toMatchObject({
      verdict: 'Warn',
      reasons: [{ rule: 'named_payee', message: { erased: true, by: report.erasure.seq } }],
    });
    const verify = JSON.parse((await api('GET', '/v1/history/verify')).text);
    expect(verify).toMatchObject({ ok: true, erased_fields: 6 });
    expect(await cliRun('verify')).toMatch(/ok, \d+ events, \d+ values verified, 6 erased/);
    expect(await cliRun('erase', '--session', 'person-1', '--dry-run')).toContain('would erase 0 field(s)');
  });
});
