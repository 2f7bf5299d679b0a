/**
 * What the CLI prints for people cannot drive their terminal. Agents choose actions and params, a
 * rule's message renders params into a reason, approvers write comments, callers write state:
 * the real CLI, run against a SQLite file (and a /v1 server for `approvals`), prints each such
 * value with its control characters, line breaks and bidi controls escaped, and ordinary text as
 * it is. Without this an agent's `\x1b[5A\r\x1b[2K` redraws the params line of a held 900000
 * transfer to show 90 to the approver.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  compilePolicy,
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Scope,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';
import { cli } from '../reliability/fixtures.js';

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-escape-'));
const database = join(dir, 'gatehouse.db');

const POLICY = `
version: 1
actions:
  "payments.*":
    requires: [{ key: budget.limit, min_trust: user_input }]
    rules:
      - name: large_transfer
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} to {params.to} exceeds the budget of {state['budget.limit'].value}"
        approval: { approvers: [finance] }
`;

// Cursor up five lines, back to the start, clear the line, a fake params line, back down.
const REDRAW = '\u001b[5A\r\u001b[2Kparams       {"amount":90,"to":"acct-9"}\u001b[5B';
/** The escaped form the CLI prints instead. */
const REDRAW_SHOWN = '\\x1b[5A\\r\\x1b[2Kparams       {"amount":90,"to":"acct-9"}\\x1b[5B';
// C1 CSI (U+009B) clears the screen on terminals that read 8-bit controls; U+202E reverses
// what follows; a newline would forge a line of its own. (An action holding them is refused by
// the API: an agent puts them in params.)
const HOSTILE_TO = '\u009b2J\u202e';
const HOSTILE_COMMENT = 'fine\nstatus       approved\u001b]0;owned\u0007 \u2066x\u2069';
/** Plain text in several scripts that must print exactly as written. */
const ORDINARY = 'Zürich — checked with the CFO ✓ שלום';

/** Any character a value must not put raw on the reader's terminal (newline is the CLI's own). */
const RAW_CONTROL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

let store: Store;
let server: RunningServer;
let approver: string;
const ids: Record<'redraw' | 'action' | 'toApprove' | 'plain' | 'hostileComment' | 'plainComment', string> = {
  redraw: '',
  action: '',
  toApprove: '',
  plain: '',
  hostileComment: '',
  plainComment: '',
};

async function key(scopes: Scope[], options: { labels?: string[]; name?: string } = {}): Promise<string> {
  const { secret } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes, tenantId: 'default', sources: ['user_input'], ...options },
  );
  return secret;
}

/** Runs the built CLI; resolves with the exit code instead of rejecting on a non-zero one. */
async function gatehouse(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [cli, ...args], {
      cwd: dir,
      timeout: 30_000,
      env: { ...process.env, GATEHOUSE_URL: server.url, GATEHOUSE_API_KEY: approver },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Stdout of a command that must succeed, checked for raw control and bidi characters. */
async function shown(...args: string[]): Promise<string> {
  const r = await gatehouse(...args);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).not.toMatch(RAW_CONTROL);
  return r.stdout;
}

beforeAll(async () => {
  store = openSqliteStore({ filename: database });
  const gh = createGatehouse({ store, policy: compilePolicy(POLICY) });
  server = await startHttpServer(createHttpApp({ gatehouse: gh, rateLimit: false }), { port: 0 });
  const agent = { authorization: `Bearer ${await key(['gate:evaluate', 'state:write'])}` };
  approver = await key(['approvals:decide'], { labels: ['finance'] });
  const colleague = { authorization: `Bearer ${await key(['approvals:decide'], { labels: ['finance'] })}` };
  await key(['state:read'], { name: `reader${REDRAW}` });

  const post = async (path: string, headers: Record<string, string>, body: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status, path).toBeLessThan(300);
    return (await response.json()) as { approval: { id: string } };
  };
  const state = (session: string, key: string, value: string) =>
    post('/v1/state/items', agent, { session_id: session, key, value, type: 'fact', source: 'user_input' });
  const held = async (session: string, action: string, params: Record<string, unknown>) =>
    (await post('/v1/gates/evaluate', agent, { session_id: session, action, params })).approval.id;

  await state('s1', 'budget.limit', '5000');
  await state('s1', 'note.city', `${ORDINARY}\u009b2J\u202e`);
  ids.redraw = await held('s1', 'payments.transfer', { amount: 900000, to: `acct-9${REDRAW}` });
  ids.action = await held('s1', 'payments.transfer', { amount: 800000, to: `acct-2${HOSTILE_TO}` });
  ids.toApprove = await held('s1', 'payments.transfer', { amount: 700000, to: `acct-3${HOSTILE_TO}` });
  ids.plain = await held('s1', 'payments.transfer', { amount: 7000, to: 'acct-1' });
  ids.hostileComment = await held('s1', 'payments.transfer', { amount: 6000, to: 'acct-4' });
  ids.plainComment = await held('s1', 'payments.transfer', { amount: 6500, to: 'acct-5' });
  await post(`/v1/approvals/${ids.hostileComment}/deny`, colleague, { comment: HOSTILE_COMMENT });
  await post(`/v1/approvals/${ids.plainComment}/approve`, colleague, { comment: ORDINARY });
});

afterAll(async () => {
  await server?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('approvals, as the approver reads them', () => {
  it('show: a reason rendering agent params cannot redraw the screen; the amount held stays in view', async () => {
    const out = await shown('approvals', 'show', ids.redraw);
    const lines = out.trimEnd().split('\n');
    expect(lines.map((l) => l.slice(0, 13).trim())).toEqual([
      'approval',
      'status',
      'session',
      'action',
      'params',
      'state read',
      'held by',
      'approvers',
      'requested by',
      'uses',
      'created',
      'expires',
      'policy',
      'digest',
    ]);
    expect(lines[4]).toContain('"amount":900000');
    expect(lines[6]).toBe(
      `held by      large_transfer: Transfer of 900000 to acct-9${REDRAW_SHOWN} exceeds the budget of 5000`,
    );
  });

  it('show: params with C1 and bidi controls are printed escaped', async () => {
    const out = await shown('approvals', 'show', ids.action);
    expect(out).toContain('\nparams       {"amount":800000,"to":"acct-2\\x9b2J\\u202e"}\n');
  });

  it("show: another approver's comment cannot forge a line or retitle the terminal; a plain one prints as written", async () => {
    const hostile = await shown('approvals', 'show', ids.hostileComment);
    const decided = hostile.split('\n').filter((l) => l.startsWith('decided'));
    expect(decided).toHaveLength(1);
    expect(decided[0]).toMatch(/: fine\\nstatus {7}approved\\x1b\]0;owned\\x07 \\u2066x\\u2069$/);
    expect(hostile.split('\n').filter((l) => l.startsWith('status'))).toEqual(['status       denied']);

    const plain = await shown('approvals', 'show', ids.plainComment);
    expect(plain).toMatch(new RegExp(`\\ndecided {6}key_\\w+ at \\S+: ${ORDINARY}\\n`));
  });

  it('list: one line per approval, hostile values escaped, ordinary ones unchanged', async () => {
    const out = await shown('approvals', 'list', '--session', 's1');
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(6);
    expect(lines.every((l) => /^apr_\w+ {2}\w+ +s1 {2}payments\.transfer/.test(l))).toBe(true);
    expect(out).toContain('payments.transfer {"amount":800000,"to":"acct-2\\x9b2J\\u202e"}');
    expect(out).toContain(' payments.transfer {"amount":7000,"to":"acct-1"}  expires ');
  });

  it('approve: the confirmation names the hostile params escaped', async () => {
    const out = await shown('approvals', 'approve', ids.toApprove, '--comment', 'ok');
    expect(out).toBe(
      `approved ${ids.toApprove}: payments.transfer {"amount":700000,"to":"acct-3\\x9b2J\\u202e"} in session s1\n`,
    );
  });
});

describe('commands that read the database', () => {
  it('history: one line per event, agent actions, reasons, comments and values escaped', async () => {
    const out = await shown('history', '--database', database, '--limit', '500');
    const lines = out.trimEnd().split('\n');
    expect(lines.every((l) => /^ +\d+ {2}\d{4}-/.test(l))).toBe(true);
    expect(out).toContain(`to acct-9${REDRAW_SHOWN} exceeds`);
    expect(out).toContain('to acct-2\\x9b2J\\u202e exceeds');
    expect(out).toContain('denied by key_');
    expect(out).toContain(': fine\\nstatus       approved\\x1b]0;owned\\x07 \\u2066x\\u2069');
    // JSON escapes C0 controls in a value but leaves C1 and bidi ones raw.
    expect(out).toContain(`note.city = "${ORDINARY}\\x9b2J\\u202e" v1`);
    expect(out).toContain(`: ${ORDINARY}\n`);
  });

  it('policy replay: example reasons rendering agent params are escaped', async () => {
    const candidate = join(dir, 'candidate.yaml');
    writeFileSync(candidate, 'version: 1\nactions:\n  "payments.*":\n    rules: []\n');
    const out = await shown(
      'policy',
      'replay',
      candidate,
      '--database',
      database,
      '--session',
      's1',
      '--examples',
      '50',
    );
    expect(out).toMatch(
      /\n {4}before: Block Held for approval apr_\w+ \(expires \S+\): Transfer of 900000 to acct-9\\x1b\[5A/,
    );
    expect(out).toContain(`to acct-9${REDRAW_SHOWN} exceeds`);
    expect(out).toContain('Transfer of 800000 to acct-2\\x9b2J\\u202e exceeds');
  });

  it("keys list: a key's name is escaped", async () => {
    const out = await shown('keys', 'list', '--database', database);
    expect(out).toContain(`name=reader${REDRAW_SHOWN}  scopes=state:read`);
    expect(
      out
        .trimEnd()
        .split('\n')
        .every((l) => l.startsWith('key_')),
    ).toBe(true);
  });
});

describe('commands that read files', () => {
  it('policy test: case names and reasons from a test file are escaped, in text and JUnit', async () => {
    const policy = join(dir, 'escape.yaml');
    writeFileSync(policy, POLICY);
    const tests = join(dir, 'escape.test.yaml');
    writeFileSync(
      tests,
      [
        'cases:',
        `  - name: ${JSON.stringify(`a case ${REDRAW} \u202eesrever`)}`,
        '    state:',
        '      - { key: budget.limit, value: "5000", type: fact, source: user_input }',
        '    action: payments.transfer',
        `    params: { amount: 9000, to: ${JSON.stringify(`acct${REDRAW}`)} }`,
        '    expect: { verdict: Allow }',
        '',
      ].join('\n'),
    );
    const text = await gatehouse('policy', 'test', policy, tests);
    expect(text.code).toBe(1);
    expect(text.stdout).not.toMatch(RAW_CONTROL);
    expect(text.stdout).toContain(`  ✗ a case ${REDRAW_SHOWN} \\u202eesrever\n`);
    expect(text.stdout).toMatch(
      /\n {6}answer {3}Block: Held for approval .+: Transfer of 9000 to acct\\x1b\[5A/,
    );

    const junit = await gatehouse('policy', 'test', policy, tests, '--format', 'junit');
    expect(junit.stdout).not.toMatch(RAW_CONTROL);
    expect(junit.stdout).toContain('<testcase name="a case \\x1b[5A\\r\\x1b[2Kparams');
  });
});
