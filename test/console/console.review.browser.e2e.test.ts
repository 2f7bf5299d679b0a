/**
 * The console's fixes after review, in a real headless Chromium against a real `gatehouse serve`:
 * secret state values masked on every page, a temporary error on reload keeps the key, a 401
 * anywhere goes back to sign-in, one decision per approval (and a 409 shows the state now), long
 * session IDs keep the decide buttons on screen, the Policy link only for keys that may read it,
 * and a phone-width header and webhook page without sideways scrolling.
 * Screenshots go to test-artifacts/console/review-*.png.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startReceiver, stopServe } from '../reliability/fixtures.js';
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

/** Payments over budget held for a `finance` approver; a deploy reads the Stripe key. */
const POLICY = `${APPROVAL_POLICY}  "deploy.*":
    requires:
      - key: integrations.stripe_key
`;

const STRIPE = 'sk_live_51H8abcdEFGHijklMNOPqrstUVwxyz0123456789AbCd';
const GITHUB = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789AB';
const DB_PASSWORD = 'hunter2-Very-Secret!';
const LONG_SESSION = `support-ticket-${'x'.repeat(70)}-customer-acme-corporation-incident`;

describe.skipIf(!hasChromium)('the console after review, in Chromium', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-review-'));
  let server: ServeProcess;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let browser: Browser;
  let admin: string;
  let alice: string;
  let agent: string;
  let reader: string;
  let stateOnly: string;
  let webhookId: string;
  const pageErrors: string[] = [];

  const api = (method: string, path: string, body?: unknown, key = admin) =>
    callApi(server.url, key, method, path, body);
  const write = (session: string, key: string, value: string, source: string) =>
    api('POST', '/v1/state/items', { session_id: session, key, value, type: 'fact', source });
  /** A payment over the session's budget: held for a `finance` approver. */
  const hold = async (session: string, amount: number) => {
    const held = await api(
      'POST',
      '/v1/gates/evaluate',
      { session_id: session, action: 'payments.transfer', params: { amount, to: `acct-${amount}` } },
      agent,
    );
    expect(held.approval.status).toBe('pending');
    return held.approval.id as string;
  };

  const open = (context: BrowserContext, hash = ''): Promise<Page> =>
    openPage(context, `${server.url}/ui/${hash}`, pageErrors);
  /** Requests matching `pattern` get a 401, as they would once the key is revoked. */
  const answer401 = (page: Page, pattern: string) =>
    page.route(pattern, (route) =>
      route.fulfill({
        status: 401,
        contentType: 'application/problem+json',
        body: '{"code":"unauthorized"}',
      }),
    );
  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(artifacts, `review-${name}.png`), fullPage: true });
  const overflow = (page: Page) =>
    page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
  /** The element lies inside the viewport, left to right. */
  const onScreen = async (page: Page, selector: ReturnType<Page['locator']>) => {
    const box = (await selector.boundingBox())!;
    const width = page.viewportSize()!.width;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(width);
  };

  beforeAll(async () => {
    receiver = await startReceiver(() => 204);
    const started = await startConsoleServe(dir, POLICY);
    server = started.server;
    admin = server.key!;
    const { createKey } = started;
    alice = await createKey(
      '--name',
      'alice',
      '--scopes',
      'approvals:decide,history:read',
      '--label',
      'finance',
    );
    agent = await createKey('--name', 'agent', '--scopes', 'gate:evaluate,state:write');
    reader = await createKey('--name', 'reader', '--scopes', 'history:read');
    stateOnly = await createKey('--name', 'state-only', '--scopes', 'state:read');
    webhookId = (await api('POST', '/v1/webhooks', { url: receiver.url, events: ['gate_evaluation'] })).id;

    await write('ops-7', 'integrations.stripe_key', STRIPE, 'user_input');
    // A lower-trust write of another secret: an open conflict with two secret values.
    await write('ops-7', 'integrations.stripe_key', GITHUB, 'tool_output');
    await write('ops-7', 'integrations.db_password', DB_PASSWORD, 'user_input');
    await write('ops-7', 'deploy.region', 'eu-west-1', 'user_input');
    await write(LONG_SESSION, 'budget.limit', '100', 'user_input');
    await write('pay-1', 'budget.limit', '100', 'user_input');
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    if (server) await stopServe(server);
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('masks every secret value: sessions, versions, conflicts and the state a decision read', async () => {
    const { items } = await api('GET', '/v1/state/items?session_id=ops-7');
    const sensitivity = Object.fromEntries(
      items.map((i: { key: string; sensitivity: string }) => [i.key, i.sensitivity]),
    );
    expect(sensitivity).toMatchObject({
      'integrations.stripe_key': 'secret',
      'integrations.db_password': 'secret',
      'deploy.region': 'public',
    });
    const decision = await api('POST', '/v1/gates/evaluate', { session_id: 'ops-7', action: 'deploy.api' });
    expect(Object.keys(decision.state_versions ?? {})).toContain('integrations.stripe_key');

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await open(context, '#/sessions');
    await signIn(page, admin);
    const main = page.locator('main');
    const clear = (text: string | null) => {
      for (const secret of [STRIPE, GITHUB, DB_PASSWORD]) expect(text).not.toContain(secret);
    };
    await page.getByRole('button', { name: 'Keep current for integrations.stripe_key in ops-7' }).waitFor();
    const conflictRow = page.locator('tr', { hasText: 'integrations.stripe_key' }).first();
    expect(await conflictRow.textContent()).toContain('[secret masked]');
    clear(await main.textContent());

    await page.goto(`${server.url}/ui/#/sessions/ops-7?key=integrations.stripe_key`);
    await page.getByRole('heading', { name: 'Versions of integrations.stripe_key' }).waitFor();
    await page.locator('tr', { hasText: 'integrations.db_password' }).waitFor();
    const text = await main.textContent();
    clear(text);
    // Only secrets are masked.
    expect(text).toContain('eu-west-1');
    expect(await page.locator('tr', { hasText: 'integrations.db_password' }).textContent()).toContain(
      '[secret masked]',
    );
    await shot(page, 'session-secrets');

    await page.goto(`${server.url}/ui/#/decisions/${decision.decision_id}`);
    await page.getByRole('heading', { name: 'State it read' }).waitFor();
    const readRow = page
      .locator('table', { hasText: 'State items read' })
      .locator('tbody tr', { hasText: 'integrations.stripe_key' });
    await expect.poll(() => readRow.textContent()).toContain('[secret masked]');
    clear(await main.textContent());
    await shot(page, 'decision-secrets');
    await context.close();
  });

  it('a temporary error on reload keeps the key and offers a retry; a 401 signs out', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await open(context);
    await signIn(page, reader);
    const stored = () => page.evaluate<number>('sessionStorage.length');

    await page.route('**/v1/me', (route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/problem+json',
        body: JSON.stringify({ code: 'unavailable', detail: 'Restarting.' }),
      }),
    );
    await page.reload();
    await page.getByRole('button', { name: 'Try again' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('Restarting.');
    expect(await stored()).toBe(1);
    await shot(page, 'boot-503');

    await page.unroute('**/v1/me');
    await page.route('**/v1/me', (route) => route.abort('connectionrefused'));
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByRole('button', { name: 'Try again' }).waitFor();
    expect(await stored()).toBe(1);

    await page.unroute('**/v1/me');
    await page.getByRole('button', { name: 'Try again' }).click();
    await expect.poll(() => page.locator('#whoami').count()).toBe(1);

    await page.route('**/v1/me', (route) =>
      route.fulfill({
        status: 401,
        contentType: 'application/problem+json',
        body: '{"code":"unauthorized"}',
      }),
    );
    await page.reload();
    await page.getByText('The key is no longer valid; sign in again.').waitFor();
    expect(await stored()).toBe(0);
    await context.close();
  });

  it('a 401 on History and on Approve leads back to sign-in', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await open(context, '#/sessions');
    await signIn(page, reader);
    await answer401(page, '**/v1/history/events**');
    await page.evaluate("location.hash = '#/history'");
    await page.getByText('The key is no longer valid; sign in again.').waitFor();
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
    await context.close();

    const id = await hold('pay-1', 150);
    const deciding = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const alicePage = await open(deciding, `#/approvals/${id}`);
    await signIn(alicePage, alice);
    await answer401(alicePage, '**/approve');
    await alicePage.getByRole('button', { name: /^Approve / }).click();
    await alicePage.getByText('The key is no longer valid; sign in again.').waitFor();
    expect(await alicePage.evaluate<number>('sessionStorage.length')).toBe(0);
    await deciding.close();
    expect((await api('GET', `/v1/approvals/${id}`, undefined, alice)).status).toBe('pending');
  });

  it('one decision per approval: both buttons wait, and a 409 shows the approval as it is now', async () => {
    const id = await hold('pay-1', 160);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await open(context, `#/approvals/${id}`);
    await signIn(page, alice);
    const approve = page.getByRole('button', { name: /^Approve / });
    const deny = page.getByRole('button', { name: /^Deny / });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/approve', async (route) => {
      await held;
      await route.continue();
    });
    await approve.click();
    await expect.poll(() => deny.isDisabled()).toBe(true);
    expect(await approve.isDisabled()).toBe(true);
    release();
    await page.getByText('You approved this approval.').waitFor();
    await page.unroute('**/approve');

    // Decided elsewhere while this page was open: Deny gets a 409, the page shows "approved".
    const other = await hold('pay-1', 170);
    await page.goto(`${server.url}/ui/#/approvals/${other}`);
    await page.getByRole('button', { name: /^Deny / }).waitFor();
    await api('POST', `/v1/approvals/${other}/approve`, { comment: 'by phone' }, alice);
    await page.getByRole('button', { name: /^Deny / }).click();
    await page.getByText('This approval was already decided: it is approved.').waitFor();
    const facts = await page.locator('dl.facts').textContent();
    expect(facts).toContain('approved');
    expect(facts).toContain('(you)');
    expect(facts).toContain('by phone');
    expect(await page.getByRole('button', { name: /^(Approve|Deny) / }).count()).toBe(0);
    await shot(page, 'approval-409');

    // The same in the queue: the row shows the approval as it is now.
    const third = await hold('pay-1', 180);
    await page.goto(`${server.url}/ui/#/approvals`);
    const denyThird = page.getByRole('button', { name: `Deny payments.transfer (${third})` });
    await denyThird.waitFor();
    await api('POST', `/v1/approvals/${third}/approve`, {}, alice);
    await denyThird.click();
    await page.getByText(`payments.transfer (${third}) was already decided: it is approved.`).waitFor();
    expect(await denyThird.count()).toBe(0);
    await context.close();
  });

  it('long session IDs wrap: the decide buttons stay on screen at 1280 and 390 wide', async () => {
    const id = await hold(LONG_SESSION, 250);
    for (const [name, viewport] of [
      ['desktop', { width: 1280, height: 800 }],
      ['phone', { width: 390, height: 844 }],
    ] as const) {
      const context = await browser.newContext({ viewport, isMobile: name === 'phone' });
      const page = await open(context, `#/approvals?session=${LONG_SESSION}`);
      await signIn(page, alice);
      const approve = page.getByRole('button', { name: `Approve payments.transfer (${id})` });
      await approve.waitFor();
      const heldRow = page.locator('tbody tr', { hasText: 'amount=250' });
      await onScreen(page, approve);
      await onScreen(page, page.getByRole('button', { name: `Deny payments.transfer (${id})` }));
      await onScreen(page, heldRow.getByRole('link', { name: 'payments.transfer' }));
      await onScreen(page, heldRow.locator('.mono', { hasText: 'amount=250' }));
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      await shot(page, `${name}-approvals-long-session`);

      await page.goto(`${server.url}/ui/#/history?session=${LONG_SESSION}`);
      const eventRow = page.locator('#history-table tbody tr', { hasText: 'payments.transfer' }).first();
      await eventRow.waitFor();
      const what = (await eventRow.locator('td').last().boundingBox())!;
      expect(what.x + what.width).toBeLessThanOrEqual(viewport.width);
      // "What" keeps room for its text instead of being squeezed by the session ID.
      expect(what.width).toBeGreaterThan(name === 'phone' ? 150 : 400);
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      await shot(page, `${name}-history-long-session`);
      await context.close();
    }
  });

  it('shows the Policy link only to keys that may read the policy', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await open(context);
    await signIn(page, stateOnly);
    const nav = page.getByRole('navigation', { name: 'Console' });
    expect(await nav.textContent()).toContain('Sessions');
    expect(await nav.textContent()).not.toContain('Policy');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, reader);
    expect(await nav.textContent()).toContain('Policy');
    await context.close();
  });

  it('at phone width the admin header wraps and the webhook page does not scroll sideways', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    const page = await open(context, `#/webhooks/${webhookId}`);
    await signIn(page, admin);
    await page.locator('#deliveries').waitFor();
    const links = page.getByRole('navigation', { name: 'Console' }).getByRole('link');
    // History, Sessions, Approvals, Webhooks, Policy, Erasure, Retention: admin holds every scope.
    expect(await links.count()).toBe(7);
    for (const link of await links.all()) await onScreen(page, link);
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await shot(page, 'phone-webhook');
    await context.close();
    expect(pageErrors).toEqual([]);
  });
});
