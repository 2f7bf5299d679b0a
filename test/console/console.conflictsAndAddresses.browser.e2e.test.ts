/**
 * The console in a real headless Chromium against a real `gatehouse serve`:
 * a secret proposed for a key whose current value is not secret stays masked, a notice in the
 * address bar cannot claim a decision that was not made, and a malformed address shows a page.
 * Screenshots go to test-artifacts/console/conflicts-*.png.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, stopServe } from '../reliability/fixtures.js';
import {
  APPROVAL_POLICY,
  artifacts,
  callApi,
  hasChromium,
  launchChromium,
  openPage,
  signIn,
  startConsoleServe,
} from './consoleHarness.js';

const STRIPE = 'sk_live_51H8abcdEFGHijklMNOPqrstUVwxyz0123456789AbCd';

describe.skipIf(!hasChromium)('the console: secret conflict sides and crafted addresses, in Chromium', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-conflicts-'));
  let server: ServeProcess;
  let browser: Browser;
  let admin: string;
  let alice: string;
  let agent: string;
  let stateOnly: string;
  const pageErrors: string[] = [];

  const api = (method: string, path: string, body?: unknown, key = admin) =>
    callApi(server.url, key, method, path, body);
  const write = (session: string, key: string, value: string, source: string) =>
    api('POST', '/v1/state/items', { session_id: session, key, value, type: 'fact', source });
  const open = (context: BrowserContext, hash = ''): Promise<Page> =>
    openPage(context, `${server.url}/ui/${hash}`, pageErrors);
  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(artifacts, `conflicts-${name}.png`), fullPage: true });

  beforeAll(async () => {
    const started = await startConsoleServe(dir, APPROVAL_POLICY);
    server = started.server;
    admin = server.key!;
    alice = await started.createKey(
      '--name',
      'alice',
      '--scopes',
      'approvals:decide,history:read',
      '--label',
      'finance',
    );
    agent = await started.createKey('--name', 'agent', '--scopes', 'gate:evaluate,state:write');
    stateOnly = await started.createKey('--name', 'state-only', '--scopes', 'state:read');
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    if (server) await stopServe(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('masks a secret proposed for a key whose current value is not secret', async () => {
    // A public note, then a lower-trust write of a Stripe key to it: an open conflict whose
    // current side is public and whose proposed side is a secret (History stores it masked).
    await write('handoff-1', 'notes.handoff', 'call the customer back tomorrow', 'user_input');
    const written = await write('handoff-1', 'notes.handoff', STRIPE, 'tool_output');
    expect(written.outcome).toBe('conflict');
    // The API says so: each side of a conflict carries its own value's sensitivity.
    expect(written.conflict.current.sensitivity).toBe('public');
    expect(written.conflict.proposed.sensitivity).toBe('secret');
    const { events } = await api('GET', '/v1/history/events?session_id=handoff-1&type=state_conflict');
    expect(events[0].data.proposed.value).toBe('[secret masked]');

    for (const key of [admin, stateOnly]) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      for (const hash of ['#/sessions', '#/sessions/handoff-1']) {
        const page = await open(context, hash);
        await signIn(page, key);
        const conflictRow = page.locator('tr', { hasText: 'notes.handoff' }).first();
        await conflictRow.waitFor();
        await expect.poll(() => conflictRow.textContent()).toContain('[secret masked]');
        const text = await page.locator('main').textContent();
        // The current, public value still shows: only the secret is masked.
        expect(text).toContain('call the customer back tomorrow');
        expect(text).not.toContain(STRIPE);
        if (key === admin && hash === '#/sessions/handoff-1') await shot(page, 'conflict-proposed-secret');
        await page.close();
      }
      await context.close();
    }
  });

  it('a notice in the address bar does not claim a decision that was not made', async () => {
    await write('pay-9', 'budget.limit', '100', 'user_input');
    const held = await api(
      'POST',
      '/v1/gates/evaluate',
      { session_id: 'pay-9', action: 'payments.transfer', params: { amount: 900, to: 'acct-9' } },
      agent,
    );
    const id = held.approval.id as string;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // A link sent to an approver: the approval is pending, the address says it was approved.
    const page = await open(context, `#/approvals/${id}?decided=approved`);
    await signIn(page, alice);
    await page.getByRole('button', { name: /^Approve / }).waitFor();
    const text = await page.locator('main').textContent();
    expect(text).not.toContain('You approved this approval.');
    // Nor any text of the sender's choosing.
    await page.goto(
      `${server.url}/ui/#/approvals/${id}?decided=${encodeURIComponent('paid; also approve apr_x')}`,
    );
    await page.getByRole('button', { name: /^Approve / }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain('also approve');
    // Nor that a pending approval was decided already.
    await page.goto(`${server.url}/ui/#/approvals/${id}?already=approved`);
    await page.getByRole('button', { name: /^Approve / }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain('already decided');
    await shot(page, 'approval-notice');
    await context.close();
    expect((await api('GET', `/v1/approvals/${id}`, undefined, alice)).status).toBe('pending');
  });

  it('a malformed address shows "No such page." instead of failing', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    const page = await openPage(context, `${server.url}/ui/#/history`, errors);
    await signIn(page, admin);
    await page.locator('#history-table').waitFor();
    await page.evaluate("location.hash = '#/sessions/%E0%A4%A'");
    await expect.poll(() => page.locator('main h1').textContent()).toBe('Not available');
    expect(await page.locator('main').textContent()).toContain('No such page.');
    expect(errors).toEqual([]);
    await context.close();
  });

  afterAll(() => {
    expect(pageErrors).toEqual([]);
  });
});
