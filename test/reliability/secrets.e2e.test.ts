/**
 * Secrets stay secret: values that classify as secret (a Stripe live key, a PEM private key, a
 * JWT, a password under a password-named key) are recorded as state and passed in params,
 * context, messages, outcomes and conflicts through the real `gatehouse serve` at debug log
 * level. Then everything that leaves the state API is scanned: every history event, every
 * webhook payload received on loopback, decision reads, evaluate answers, `gatehouse history`,
 * and the service's logs. None of the secret strings appears (the state API itself, which
 * returns what was recorded, is the one place they may).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../adapters/webhooks/index.js';
import { classify } from '../../src/index.js';
import { cli, type ServeProcess, startReceiver, startServe, stopServe, waitFor } from './fixtures.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-secrets-'));

const STRIPE = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc9Xq2';
const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun',
  'VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK',
  '-----END RSA PRIVATE KEY-----',
].join('\n');
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZ2VudC03IiwiaWF0IjoxNzAwMDAwMDAwfQ.' +
  'Ks8dH5p2nX1m4QvY8bZ0cW3rT6uJ9aE2fG7hL1kM0oN';
const PASSWORD = 'correct-horse-battery-staple-42';
/** The distinctive inner parts too, so a partly masked or re-encoded copy is caught. */
const NEEDLES = [
  STRIPE,
  STRIPE.slice(8),
  PEM,
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun',
  JWT,
  JWT.split('.')[2]!,
  PASSWORD,
];

const POLICY = `
version: 1
actions:
  "deploy.*":
    rules:
      - name: echo_key
        when: "has(params.api_key)"
        verdict: Warn
        message: "Deploying with key {params.api_key} and token {context.token}"
      - name: echo_state
        when: "'auth.password' in state"
        verdict: Warn
        message: "The stored password is {state['auth.password'].value}"
`;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function expectNoSecret(where: string, text: string) {
  for (const needle of NEEDLES) {
    expect(text.includes(needle), `${where} contains ${needle.slice(0, 16)}…`).toBe(false);
    // JSON escapes newlines: look for the PEM's JSON form as well.
    expect(text.includes(JSON.stringify(needle).slice(1, -1)), `${where} (JSON)`).toBe(false);
  }
}

describe('secrets never leave through history, webhooks, decisions or logs', () => {
  let serve: ServeProcess | undefined;
  afterAll(async () => {
    if (serve) await stopServe(serve);
  });

  it('the detectors call each test value secret', () => {
    expect(classify('payments.stripe', STRIPE).sensitivity).toBe('secret');
    expect(classify('infra.deploy_key', PEM).sensitivity).toBe('secret');
    expect(classify('auth.session', JWT).sensitivity).toBe('secret');
    expect(classify('auth.password', PASSWORD).sensitivity).toBe('secret');
  });

  it('scans every outlet after a full workout', async () => {
    const receiver = await startReceiver(() => 200);
    const policyFile = join(dir, 'policy.yaml');
    writeFileSync(policyFile, POLICY);
    const db = join(dir, 'secrets.db');
    serve = await startServe(
      ['--database', db, '--policy', policyFile, '--allow-insecure-loopback-webhooks', '--rate-limit', '0'],
      { env: { GATEHOUSE_LOG_LEVEL: 'debug' } },
    );
    const headers = { authorization: `Bearer ${serve.key}`, 'content-type': 'application/json' };
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(serve!.url + path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, text: await res.text() };
    };
    const hook = JSON.parse((await api('POST', '/v1/webhooks', { url: receiver.url, events: ['*'] })).text);

    const item = (key: string, value: string, source = 'user_input') => ({
      session_id: 'sec',
      key,
      value,
      type: 'fact',
      source,
      metadata: { note: `rotated from ${value}` },
    });
    for (const [key, value] of [
      ['payments.stripe', STRIPE],
      ['infra.deploy_key', PEM],
      ['auth.session', JWT],
      ['auth.password', PASSWORD],
    ] as const) {
      expect((await api('POST', '/v1/state/items', item(key, value))).status).toBe(201);
    }
    // A secret of the session quoted in another item's metadata.
    const hint = { ...item('auth.hint', 'ask the admin'), metadata: { was: PASSWORD } };
    expect((await api('POST', '/v1/state/items', hint)).status).toBe(201);
    // A lower-trust write of a secret: a conflict (both values in the event), then accepted.
    const conflict = JSON.parse(
      (await api('POST', '/v1/state/items', item('payments.stripe', `${STRIPE}x`, 'tool_output'))).text,
    );
    expect(conflict.outcome).toBe('conflict');
    expect(
      (
        await api('POST', `/v1/state/conflicts/${conflict.conflict.conflict_id}/resolve`, {
          resolution: 'accept_proposed',
          note: `accepted ${STRIPE}; the admin password is ${PASSWORD}`,
        })
      ).status,
    ).toBe(200);

    // Secrets in params, context, action messages, and an outcome's detail.
    const evaluations: string[] = [];
    for (const params of [
      { api_key: STRIPE, nested: { deeper: [{ pem: PEM }] } },
      { api_key: 'not-a-secret', note: `the password is ${PASSWORD}` },
    ]) {
      const r = await api('POST', '/v1/gates/evaluate', {
        session_id: 'sec',
        action: 'deploy.prod',
        params,
        context: { token: JWT },
      });
      expect(r.status).toBe(200);
      evaluations.push(r.text);
    }
    const decisionId = JSON.parse(evaluations[0]!).decision_id as string;
    expect(
      (
        await api('POST', `/v1/decisions/${decisionId}/outcome`, {
          outcome: 'failed',
          detail: `401 for ${JWT}, retried with ${PASSWORD}`,
        })
      ).status,
    ).toBe(201);

    // ---- scan ---------------------------------------------------------------------------------
    for (const [i, text] of evaluations.entries()) expectNoSecret(`evaluate answer ${i}`, text);
    expect(evaluations[0]).toContain('[secret masked]');

    const history = await api('GET', '/v1/history/events?order=asc&limit=500');
    const events = JSON.parse(history.text).events as Array<{ event_id: string; type: string }>;
    expect(new Set(events.map((e) => e.type))).toEqual(
      new Set([
        'policy.activated',
        'state_change',
        'state_conflict',
        'conflict_resolved',
        'gate_evaluation',
        'action_outcome',
      ]),
    );
    expectNoSecret('history', history.text);

    for (const e of events.filter((x) => x.type === 'gate_evaluation')) {
      const d = await api(
        'GET',
        `/v1/decisions/${(e as unknown as { data: { decision_id: string } }).data.decision_id}`,
      );
      expect(d.status).toBe(200);
      expectNoSecret('decision read', d.text);
    }

    await waitFor(() => receiver.received.length >= events.length, 10_000, 'every webhook delivery');
    for (const got of receiver.received) {
      const event = verifyWebhook(hook.secret, got.headers as Record<string, string>, got.body);
      expect(events.map((e) => e.event_id)).toContain(event.id);
      expectNoSecret(`webhook ${event.type}`, got.body);
    }

    const cliHistory = await run(process.execPath, [
      cli,
      'history',
      '--database',
      db,
      '--json',
      '--limit',
      '500',
    ]);
    expectNoSecret('gatehouse history --json', cliHistory.stdout);

    // The state API returns what was recorded: the secret is stored, only its copies are masked.
    const stored = await api('GET', '/v1/state/items/auth.session?session_id=sec');
    expect(JSON.parse(stored.text)).toMatchObject({ value: JWT, sensitivity: 'secret' });

    expect(await stopServe(serve)).toBe(0);
    const logs = serve.stderr();
    serve = undefined;
    expect(logs).toContain('"level":20'); // debug lines were written
    expectNoSecret('service logs', logs);
    await receiver.close();
  });
});
