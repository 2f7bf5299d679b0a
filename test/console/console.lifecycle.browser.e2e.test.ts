/**
 * The console's Erasure and Retention & holds pages in a real headless Chromium against a real
 * `gatehouse serve` on SQLite: each page only for the scope its routes need; a dry run lists what
 * an erasure would take and takes nothing; the typed confirmation erases, and the history then
 * shows the field as erased; a legal hold and bad input are refused with the API's message; the
 * retention form is refused below the floor and saves a valid period; holds are placed and
 * released. Screenshots go to test-artifacts/console/lifecycle-*.png.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startReceiver, stopServe, waitFor } from '../reliability/fixtures.js';
import {
  APPROVAL_POLICY,
  artifacts,
  callApi,
  hasChromium,
  launchChromium,
  openPage,
  root,
  signIn,
  startConsoleServe,
} from './consoleHarness.js';

describe.skipIf(!hasChromium)('erasure, retention and legal holds in the console, in Chromium', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-lifecycle-'));
  let server: ServeProcess;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let browser: Browser;
  let admin: string;
  /** A privacy officer: may erase and read, not administer. */
  let eraser: string;
  let viewer: string;
  const pageErrors: string[] = [];
  /** Text that must be gone from every page once its session is erased. */
  const marker = `Ada${Date.now()}`;

  const api = (method: string, path: string, body?: unknown, key = admin) =>
    callApi(server.url, key, method, path, body);
  const open = (context: BrowserContext, hash: string): Promise<Page> =>
    openPage(context, `${server.url}/ui/${hash}`, pageErrors, { consoleErrors: true });
  /** `GATEHOUSE_CONSOLE_DOCS=1` (or `=erasure-dry-run,…`) also refreshes docs/console-<name>.png. */
  const DOC_SHOTS = ['erasure-dry-run', 'retention-holds'];
  const shot = async (page: Page, name: string) => {
    await page.screenshot({ path: join(artifacts, `lifecycle-${name}.png`), fullPage: true });
    const docs = process.env['GATEHOUSE_CONSOLE_DOCS'];
    if (docs && DOC_SHOTS.includes(name) && (docs === '1' || docs.split(',').includes(name)))
      await page.screenshot({ path: join(root, 'docs', `console-${name}.png`), fullPage: true });
  };
  const signedIn = async (key: string, hash: string, viewport = { width: 1280, height: 860 }) => {
    const context = await browser.newContext({ viewport });
    const page = await open(context, hash);
    await signIn(page, key);
    return { context, page, main: page.locator('main') };
  };

  beforeAll(async () => {
    // Refuses every delivery: each stays pending for its next attempt, for the dry run to list.
    receiver = await startReceiver(() => 500);
    const started = await startConsoleServe(dir, APPROVAL_POLICY);
    server = started.server;
    admin = server.key!;
    eraser = await started.createKey('--name', 'privacy', '--scopes', 'data:erase,history:read,state:read');
    viewer = await started.createKey('--name', 'viewer', '--scopes', 'history:read,state:read');
    await api('POST', '/v1/webhooks', { url: receiver.url, events: ['gate_evaluation'] });
    for (const session of ['dsr-1', 'held-1']) {
      await api('POST', '/v1/state/items', {
        session_id: session,
        key: 'budget.limit',
        value: '5000',
        type: 'fact',
        source: 'user_input',
        metadata: { said_by: marker },
      });
    }
    await api('POST', '/v1/gates/evaluate', {
      session_id: 'dsr-1',
      action: 'payments.transfer',
      params: { amount: 9000, to: marker },
    });
    await waitFor(() => receiver.received.length >= 1, 10_000, 'the first delivery attempt');
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    if (server) await stopServe(server);
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows Erasure only to a key with data:erase, and Retention & holds only to admin', async () => {
    const nav = (page: Page) => page.getByRole('navigation', { name: 'Console' }).textContent();
    const asViewer = await signedIn(viewer, '#/history');
    expect(await nav(asViewer.page)).not.toContain('Erasure');
    expect(await nav(asViewer.page)).not.toContain('Retention');
    await asViewer.page.goto(`${server.url}/ui/#/erasure`);
    await expect.poll(() => asViewer.main.textContent()).toContain('This key may not see this page.');
    await asViewer.context.close();

    const asEraser = await signedIn(eraser, '#/history');
    expect(await nav(asEraser.page)).toContain('Erasure');
    expect(await nav(asEraser.page)).not.toContain('Retention');
    await asEraser.page.goto(`${server.url}/ui/#/retention`);
    await expect.poll(() => asEraser.main.textContent()).toContain('This key may not see this page.');
    await asEraser.context.close();

    // `admin` holds every scope.
    const asAdmin = await signedIn(admin, '#/history');
    expect(await nav(asAdmin.page)).toContain('Erasure');
    expect(await nav(asAdmin.page)).toContain('Retention');
    await asAdmin.context.close();
    expect(pageErrors).toEqual([]);
  });

  it('a dry run lists what would go and erases nothing; the typed confirmation erases it', async () => {
    const { context, page, main } = await signedIn(eraser, '#/erasure');
    await page.getByLabel('Session ID').fill('dsr-1');
    await page.getByLabel('Reference (optional)').fill('DSR-7');
    await page.getByRole('button', { name: 'Dry run' }).click();
    const result = page.locator('#erasure-result');
    await expect.poll(() => result.textContent()).toContain('Nothing has been erased yet');
    const { approvals } = await api('GET', '/v1/approvals?session_id=dsr-1&status=pending');
    const { deliveries } = await api(
      'GET',
      `/v1/webhooks/${(await api('GET', '/v1/webhooks')).webhooks[0].id}/deliveries`,
    );
    const text = (await result.textContent())!;
    expect(text).toContain('budget.limit');
    expect(text).toContain('/value');
    expect(text).toContain('/params');
    expect(text).toContain('1 delivery');
    expect(deliveries[0].status).toBe('pending');
    // This key may not open approvals: the pending one is listed by its whole ID, as text.
    expect(text).toContain(approvals[0].id);
    expect(await result.locator('table').first().locator('tbody tr').count()).toBeGreaterThanOrEqual(2);
    const item = await api('GET', '/v1/state/items/budget.limit?session_id=dsr-1');
    expect(item.value).toBe('5000');
    await shot(page, 'erasure-dry-run');

    const erase = page.getByRole('button', { name: 'Erase session dsr-1' });
    expect(await erase.isDisabled()).toBe(true);
    await page.getByLabel('Type the session ID again').fill('dsr-');
    expect(await erase.isDisabled()).toBe(true);
    await page.getByLabel('Type the session ID again').fill('dsr-1');
    await erase.click();
    const done = page.locator('#erasure-done');
    await done.waitFor();
    const { events } = await api('GET', '/v1/history/events?session_id=dsr-1&type=erasure.completed');
    expect(events).toHaveLength(1);
    expect(events[0].data.reference).toBe('DSR-7');
    const seq = events[0].seq as number;
    expect(await done.textContent()).toContain(`recorded as erasure.completed, seq ${seq}`);
    await shot(page, 'erasure-done');

    await page.getByRole('link', { name: 'Show session dsr-1 in History' }).click();
    const change = page.locator('#history-table tbody tr', { hasText: 'state_change' });
    await expect.poll(() => change.first().textContent()).toContain(`(erased by #${seq})`);
    await expect.poll(() => main.textContent()).toContain('DSR-7');
    expect(await main.textContent()).not.toContain(marker);
    await shot(page, 'erasure-history');
    await context.close();
    expect(pageErrors).toEqual([]);
  });

  it('erases every session tagged with a subject, one erasure.completed each', async () => {
    for (const session of ['subj-a', 'subj-b']) {
      await api('POST', '/v1/state/items', {
        session_id: session,
        key: 'user.name',
        value: marker,
        type: 'fact',
        source: 'user_input',
      });
      await api('POST', '/v1/subject-tags', { session_id: session, subject: 'p-1234' });
    }
    const { context, page } = await signedIn(eraser, '#/erasure');
    await page.getByLabel('Subject', { exact: true }).check();
    await page.getByLabel('Subject', { exact: true }).and(page.locator('#erase-target')).fill('p-1234');
    await page.getByRole('button', { name: 'Dry run' }).click();
    const result = page.locator('#erasure-result');
    await expect
      .poll(() => result.textContent())
      .toContain('2 sessions, 4 fields in 2 events, 2 state items');
    expect(await result.locator('section.erasure-report').count()).toBe(2);
    await page.getByLabel('Type the subject again').fill('p-1234');
    await page.getByRole('button', { name: 'Erase subject p-1234' }).click();
    const done = page.locator('#erasure-done');
    await done.waitFor();
    expect(await done.locator('li').allTextContents()).toEqual([
      expect.stringMatching(/^Session subj-a: recorded as erasure\.completed, seq \d+/),
      expect.stringMatching(/^Session subj-b: recorded as erasure\.completed, seq \d+/),
    ]);
    expect((await api('GET', '/v1/state/items/user.name?session_id=subj-b')).status).toBe('erased');
    await context.close();
    expect(pageErrors).toEqual([]);
  });

  it('a legal hold refuses the erasure with its message; bad input shows the field at fault', async () => {
    const hold = await api('POST', '/v1/legal-holds', { session_id: 'held-1', reference: 'CASE-7' });
    const { context, page } = await signedIn(eraser, '#/erasure');
    await page.getByLabel('Session ID').fill('held-1');
    await page.getByLabel('Reference (optional)').fill('DSR 8');
    await page.getByRole('button', { name: 'Dry run' }).click();
    const result = page.locator('#erasure-result');
    await expect.poll(() => result.locator('[role="alert"]').count()).toBe(1);
    expect(await result.textContent()).toContain('a ticket ID, not personal data');

    await page.getByLabel('Reference (optional)').fill('DSR-8');
    await page.getByRole('button', { name: 'Dry run' }).click();
    await expect.poll(() => result.textContent()).toContain('Nothing has been erased yet');
    // The dry run already says the hold will refuse it.
    expect(await result.textContent()).toContain('CASE-7 (this session): the erasure will be refused');
    await page.getByLabel('Type the session ID again').fill('held-1');
    await page.getByRole('button', { name: 'Erase session held-1' }).click();
    const refusal = result.locator('[role="alert"]');
    await refusal.waitFor();
    const text = (await refusal.textContent())!;
    expect(text).toContain(`Legal hold ${hold.hold_id} (CASE-7) covers this erasure`);
    expect(text).toContain('An admin can release it when the matter is closed');
    expect((await api('GET', '/v1/state/items/budget.limit?session_id=held-1')).value).toBe('5000');
    await shot(page, 'erasure-held');
    await context.close();
    await api('DELETE', `/v1/legal-holds/${hold.hold_id}`);
    expect(pageErrors).toEqual([]);
  });

  it('the retention form is refused below the floor with its message, and saves a valid period', async () => {
    const { context, page } = await signedIn(admin, '#/retention');
    const facts = page.locator('#retention-facts');
    await expect.poll(() => facts.textContent()).toContain('nothing set: everything is kept');
    await page.getByLabel('Prune history after (days)').fill('30');
    await page.getByRole('button', { name: 'Save retention' }).click();
    const notice = page.locator('#retention-notice');
    await expect.poll(() => notice.textContent()).toContain('below the floor of 183 days');
    expect((await api('GET', '/v1/retention')).source).toBe('none');
    await shot(page, 'retention-refused');

    await page.getByLabel('Erase values after (days)').fill('90');
    await page.getByLabel('Prune history after (days)').fill('400');
    await page.getByRole('button', { name: 'Save retention' }).click();
    await expect.poll(() => page.locator('#retention-notice').textContent()).toContain('Retention saved');
    const saved = await api('GET', '/v1/retention');
    expect(saved).toMatchObject({ values_after_days: 90, history_after_days: 400, source: 'api' });
    const text = (await page.locator('#retention-facts').textContent())!;
    expect(text).toContain('90 days');
    expect(text).toContain('400 days');
    expect(text).toContain('set here');
    await context.close();
    expect(pageErrors).toEqual([]);
  });

  it('places a hold on a session and on the tenant, and releases one after a confirmation', async () => {
    const { context, page } = await signedIn(admin, '#/retention');
    const holds = page.locator('#holds');
    await expect.poll(() => holds.textContent()).toContain('No legal hold is in force.');
    await page.getByLabel('Session ID').fill('dsr-2');
    await page.getByLabel('Reference', { exact: true }).fill('CASE-9');
    await page.getByRole('button', { name: 'Place hold' }).click();
    await expect.poll(() => holds.textContent()).toContain('CASE-9');
    await page.getByLabel('The whole tenant').check();
    expect(await page.getByLabel('Session ID').isDisabled()).toBe(true);
    await page.getByLabel('Reference', { exact: true }).fill('LIT-1');
    await page.getByRole('button', { name: 'Place hold' }).click();
    await expect.poll(() => holds.textContent()).toContain('the whole tenant');
    const listed = (await api('GET', '/v1/legal-holds')).holds as Array<{
      reference: string;
      session_id: string | null;
    }>;
    expect(listed.map((x) => [x.reference, x.session_id]).sort()).toEqual([
      ['CASE-9', 'dsr-2'],
      ['LIT-1', null],
    ]);
    await shot(page, 'retention-holds');

    await page.getByRole('button', { name: 'Release hold CASE-9 on session dsr-2' }).click();
    await page.getByRole('button', { name: 'Confirm release of CASE-9' }).click();
    await expect.poll(() => page.locator('#holds-notice').textContent()).toContain('Released hold');
    expect(await holds.textContent()).not.toContain('CASE-9');
    const left = (await api('GET', '/v1/legal-holds')).holds as Array<{ reference: string }>;
    expect(left.map((x) => x.reference)).toEqual(['LIT-1']);
    await context.close();
    expect(pageErrors).toEqual([]);
  });

  it('both pages fit a phone without sideways scrolling', async () => {
    for (const hash of ['#/retention', '#/erasure']) {
      const { context, page } = await signedIn(admin, hash, { width: 390, height: 844 });
      await page.locator('main h2').first().waitFor();
      if (hash === '#/erasure') {
        await page.getByLabel('Session ID').fill('held-1');
        await page.getByRole('button', { name: 'Dry run' }).click();
        await page.locator('#erase-confirm').waitFor();
      }
      const overflow = await page.evaluate<number>(
        'document.documentElement.scrollWidth - window.innerWidth',
      );
      expect(overflow, hash).toBeLessThanOrEqual(0);
      await shot(page, `phone-${hash.slice(2)}`);
      await context.close();
    }
    expect(pageErrors).toEqual([]);
  });
});
