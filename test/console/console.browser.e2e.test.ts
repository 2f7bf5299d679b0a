/**
 * The web console in a real headless Chromium (Debian's `chromium`, driven by playwright-core)
 * against a real `gatehouse serve`: sign in, an evaluate made over HTTP appears live, verify the
 * chain, a decision's page, resolve a conflict, redeliver a webhook delivery, an agent's held
 * action approved in the console (then its next evaluate is Allow), a read-only key sees no action
 * button, a stricter policy replayed over recorded decisions and activated with If-Match (422 and
 * 412 shown), a phone-width page, sign out. Screenshots go to test-artifacts/console/.
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
  CHROMIUM,
  callApi,
  hasChromium,
  launchChromium,
  openPage,
  root,
  signIn,
  startConsoleServe,
} from './consoleHarness.js';

if (!hasChromium)
  console.warn(`console browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

/** The README's pictures: the top of the page, or (with a selector) one part of it. */
const DOC_SHOTS: Record<string, string | null> = {
  history: null,
  decision: null,
  approvals: null,
  'phone-history': null,
  policy: '#replay-result .replay-report',
};

const POLICY = APPROVAL_POLICY;

/** A stricter candidate: the same, plus a global rule that blocks every email. */
const STRICT = POLICY.replace(
  '\nrules: []\n',
  '\nrules:\n  - name: no_email\n    when: "action == \'email.send\'"\n    verdict: Block\n    message: "No email ({action})."\n',
);

/** A payment over the session's budget: held for approval. */
const TRANSFER = {
  session_id: 'checkout-9',
  action: 'payments.transfer',
  params: { amount: 9000, to: 'acct-9' },
};

describe.skipIf(!hasChromium)('the web console in Chromium', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-'));
  let server: ServeProcess;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let browser: Browser;
  let admin: string;
  let viewer: string;
  /** The agent: evaluates, cannot decide. */
  let agent: string;
  /** A person: `approvals:decide` with the `finance` label, and may read the history. */
  let alice: string;
  let webhookId: string;
  const pageErrors: string[] = [];

  const api = (method: string, path: string, body?: unknown, key = admin) =>
    callApi(server.url, key, method, path, body);
  const write = (session: string, key: string, value: string, source: string) =>
    api('POST', '/v1/state/items', { session_id: session, key, value, type: 'fact', source });

  const open = (context: BrowserContext, hash = ''): Promise<Page> =>
    openPage(context, `${server.url}/ui/${hash}`, pageErrors, { consoleErrors: true });

  const shot = async (page: Page, name: string) => {
    await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
    // `GATEHOUSE_CONSOLE_DOCS=1` refreshes the README's pictures (`=approvals,history` some of them):
    // the visible part down to the end of the page's content only, to stay small.
    const docs = process.env['GATEHOUSE_CONSOLE_DOCS'];
    if (docs && name in DOC_SHOTS && (docs === '1' || docs.split(',').includes(name))) {
      const path = join(root, 'docs', `console-${name}.png`);
      const part = DOC_SHOTS[name];
      if (part) {
        // The part with a margin of page around it.
        // (boundingBox is relative to the viewport, a full-page clip to the page.)
        const box = (await page.locator(part).first().boundingBox())!;
        const scrollY = await page.evaluate<number>('window.scrollY');
        const m = 12;
        await page.screenshot({
          path,
          fullPage: true,
          clip: {
            x: box.x - m,
            y: box.y + scrollY - m,
            width: box.width + 2 * m,
            height: box.height + 2 * m,
          },
        });
        return;
      }
      const viewport = page.viewportSize()!;
      const bottom = await page.evaluate<number>(
        "document.querySelector('main').getBoundingClientRect().bottom",
      );
      const height = Math.min(viewport.height, Math.ceil(bottom) + 8);
      await page.screenshot({ path, clip: { x: 0, y: 0, width: viewport.width, height } });
    }
  };

  beforeAll(async () => {
    // The receiver refuses the first delivery, so there is a failed attempt to redeliver.
    receiver = await startReceiver((n) => (n === 1 ? 500 : 204));
    expect(POLICY).toContain('approvers: [finance]');
    const started = await startConsoleServe(dir, POLICY);
    server = started.server;
    admin = server.key!;
    const { createKey } = started;
    viewer = await createKey('--name', 'viewer', '--scopes', 'history:read,state:read');
    agent = await createKey('--name', 'agent', '--scopes', 'gate:evaluate,state:write');
    alice = await createKey(
      '--name',
      'alice',
      '--scopes',
      'approvals:decide,history:read',
      '--label',
      'finance',
    );
    const hook = await api('POST', '/v1/webhooks', { url: receiver.url, events: ['gate_evaluation'] });
    webhookId = hook.id;
    await write('checkout-7', 'budget.limit', '5000', 'user_input');
    await write('checkout-7', 'budget.limit', '9000', 'tool_output');
    await write('checkout-7', 'user.email', 'ada@example.com', 'user_input');
    await api('POST', '/v1/gates/evaluate', {
      session_id: 'checkout-7',
      action: 'payments.transfer',
      params: { amount: 120, api_key: 'sk_live_abcdefghijklmnopqrstuvwx' },
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

  it('loads with no error in the browser console: the page names its icon, and the icon is served', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const errors: string[] = [];
    const page = await openPage(context, `${server.url}/ui/`, errors, { consoleErrors: true });
    await page.getByLabel('API key').waitFor();
    // Without an icon named, a browser asks for /favicon.ico and logs its 404 on every load.
    const link = page.locator('head link[rel="icon"]');
    expect(await link.count()).toBe(1);
    const href = await link.getAttribute('href');
    expect(href).toBe('assets/favicon.svg');
    const icon = await page.request.get(new URL(href!, page.url()).href);
    expect(icon.status()).toBe(200);
    expect(icon.headers()['content-type']).toBe('image/svg+xml');
    // The page's own Content-Security-Policy lets it load, and it is a picture.
    const width = await page.evaluate<number>(
      `(async () => { const img = new Image(); img.src = ${JSON.stringify(href)}; await img.decode(); return img.naturalWidth; })()`,
    );
    expect(width).toBeGreaterThan(0);
    await signIn(page, admin);
    await page.locator('#history-table tbody tr').first().waitFor();
    await page.reload();
    await page.locator('#history-table tbody tr').first().waitFor();
    expect(errors).toEqual([]);
    await context.close();
  });

  it('signs in with a key, shows the pages that key may use, and an evaluate appears live', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await open(context);
    await expect.poll(() => page.getByLabel('API key').count()).toBe(1);
    await shot(page, 'sign-in');
    await signIn(page, admin);
    expect(await page.locator('#whoami').textContent()).toContain('bootstrap admin');
    const nav = await page.getByRole('navigation', { name: 'Console' }).textContent();
    expect(nav).toContain('History');
    expect(nav).toContain('Sessions');
    expect(nav).toContain('Webhooks');
    // `admin` holds every scope, so it sees every page.
    expect(nav).toContain('Approvals');
    expect(nav).toContain('Policy');
    await expect.poll(() => page.getByText('Live: new events appear').count(), { timeout: 10_000 }).toBe(1);

    const decision = await api('POST', '/v1/gates/evaluate', {
      session_id: 'live-1',
      action: 'email.send',
      params: { to: 'ops@example.com' },
    });
    const fresh = page.locator('#history-table tbody tr.new');
    await expect.poll(() => fresh.count(), { timeout: 10_000 }).toBe(1);
    expect(await fresh.first().textContent()).toContain('email.send');
    expect(await fresh.first().locator(`a[href="#/decisions/${decision.decision_id}"]`).count()).toBe(1);

    // Keyboard: the first Tab reaches "Skip to content", which moves focus to the page itself;
    // the next Tab stop is the navigation.
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string>('document.activeElement.textContent')).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('main');
    await page.locator('.skip').focus();
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string>('document.activeElement.textContent')).toBe('History');

    await page.getByRole('button', { name: 'Verify chain' }).click();
    await expect.poll(() => page.getByText(/Chain intact: \d+ events checked/).count()).toBe(1);
    await shot(page, 'history');
    await context.close();
  });

  it('shows a decision: params masked as stored, rules, the state it read, deliveries', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await open(context);
    await signIn(page, admin);
    const link = page
      .locator('#history-table tbody tr', { hasText: 'payments.transfer' })
      .locator('a[href^="#/decisions/"]')
      .first();
    await link.click();
    await expect.poll(() => page.getByRole('heading', { name: 'Rules that fired' }).count()).toBe(1);
    const text = await page.locator('main').textContent();
    expect(text).toContain('payments.transfer');
    expect(text).not.toContain('sk_live_abcdefghijklmnopqrstuvwx');
    expect(text).toContain('budget.limit');
    await expect.poll(() => page.getByText(receiver.url).count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await shot(page, 'decision');
    await context.close();
  });

  it('resolves an open conflict', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await open(context, '#/sessions');
    await signIn(page, admin);
    const keep = page.getByRole('button', { name: 'Keep current for budget.limit in checkout-7' });
    await keep.waitFor();
    await shot(page, 'sessions');
    await keep.click();
    await expect.poll(() => page.getByText('Resolved budget.limit: keep current.').count()).toBe(1);
    const { conflicts } = await api('GET', '/v1/state/conflicts?status=open');
    expect(conflicts).toEqual([]);

    await page.getByRole('link', { name: 'checkout-7' }).first().click();
    await page.getByRole('button', { name: 'Versions of budget.limit' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Versions of budget.limit' }).count()).toBe(1);
    await context.close();
  });

  it('redelivers a webhook delivery', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await open(context, `#/webhooks/${webhookId}`);
    await signIn(page, admin);
    // A delivered delivery: nothing but the redelivery can send its event again.
    const { deliveries } = await api('GET', `/v1/webhooks/${webhookId}/deliveries?status=delivered`);
    const delivered = deliveries[0];
    const sent = () => receiver.received.filter((r) => r.headers['webhook-id'] === delivered.event_id).length;
    const before = sent();
    expect(before).toBeGreaterThan(0);
    const redeliver = page.getByRole('button', { name: `Redeliver ${delivered.delivery_id}` });
    await redeliver.waitFor();
    await shot(page, 'webhook');
    await redeliver.click();
    await expect.poll(() => page.getByText(/queued again/).count()).toBe(1);
    await waitFor(() => sent() > before, 10_000, 'the redelivery');
    await context.close();
  });

  it('a read-only key sees everything it may read and no button it may not use', async () => {
    await write('checkout-8', 'budget.limit', '100', 'user_input');
    await write('checkout-8', 'budget.limit', '999', 'retrieval');
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await open(context, '#/sessions');
    await signIn(page, viewer);
    await page.getByText('read only').first().waitFor();
    const nav = await page.getByRole('navigation', { name: 'Console' }).textContent();
    expect(nav).not.toContain('Webhooks');
    const actions = page.getByRole('button', {
      name: /Keep current|Accept proposed|Redeliver|Approve|Deny|Re-enable/,
    });
    expect(await actions.count()).toBe(0);
    await page.goto(`${server.url}/ui/#/webhooks/${webhookId}`);
    await page.getByText('This key may not see this page.').waitFor();
    expect(await actions.count()).toBe(0);
    await context.close();
  });

  it('a held action is approved in the console with a comment, and the agent proceeds once', async () => {
    await write('checkout-9', 'budget.limit', '5000', 'user_input');
    const evaluate = () => api('POST', '/v1/gates/evaluate', TRANSFER, agent);
    const held = await evaluate();
    expect(held).toMatchObject({ verdict: 'Block', allowed: false, approval: { status: 'pending' } });
    expect(held.reasons.map((r: { rule: string }) => r.rule)).toContain('approval_required');
    const id: string = held.approval.id;

    // `admin` holds approvals:decide but not the `finance` label this rule asks for: no buttons.
    const adminContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const adminPage = await open(adminContext, `#/approvals/${id}`);
    await signIn(adminPage, admin);
    await adminPage.getByText('Deciding needs a key with one of: finance.').waitFor();
    expect(await adminPage.getByRole('button', { name: /^Approve / }).count()).toBe(0);
    await adminContext.close();

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await open(context, '#/approvals');
    await signIn(page, alice);
    const nav = page.getByRole('navigation', { name: 'Console' });
    await expect.poll(() => nav.locator('.count').textContent()).toBe('1');
    const heldRow = page.locator('tbody tr', { hasText: 'payments.transfer' });
    await expect.poll(() => heldRow.count()).toBe(1);
    expect(await heldRow.textContent()).toContain('amount=9000');
    // The approver sees which rule held it and why, in the queue itself.
    const heldBy = heldRow.locator('.held-by');
    expect(await heldBy.count()).toBe(1);
    expect(await heldBy.locator('code').textContent()).toBe('over_budget');
    expect(await heldBy.textContent()).toContain('Transfer of 9000 exceeds the budget of 5000.');
    expect(await heldBy.isVisible()).toBe(true);
    expect(await heldRow.locator(`a[href="#/approvals/${id}"]`).count()).toBe(1);
    await page.getByLabel('Comment (optional)').fill('invoice 42 checked');
    await shot(page, 'approvals');
    await page.getByRole('button', { name: `Approve payments.transfer (${id})` }).click();
    await page.getByText(`payments.transfer approved (${id}).`).waitFor();
    await expect.poll(() => nav.locator('.count').isHidden()).toBe(true);
    expect(await api('GET', `/v1/approvals/${id}`, undefined, alice)).toMatchObject({
      status: 'approved',
      comment: 'invoice 42 checked',
    });

    // The agent asks again with the same params: released once, then held again.
    const released = await evaluate();
    expect(released).toMatchObject({ verdict: 'Allow', allowed: true, approval: { id, status: 'used' } });
    const me = await api('GET', '/v1/me', undefined, alice);
    expect(released.approval.decided_by).toBe(me.key_id);
    expect((await evaluate()).approval.id).not.toBe(id);

    // The approval's page: used, who decided, the comment, and the evaluation it released.
    await page.getByRole('link', { name: 'payments.transfer' }).first().waitFor();
    await page.goto(`${server.url}/ui/#/approvals/${id}`);
    const facts = page.locator('dl.facts');
    await expect.poll(() => facts.textContent()).toContain('Decided by');
    const text = await facts.textContent();
    expect(text).toContain('used');
    expect(text).toContain(`${me.key_id} (you)`);
    expect(text).toContain('invoice 42 checked');
    expect(text).toContain('0 of 1 left');
    await page.locator(`a[href="#/decisions/${released.decision_id}"]`).waitFor();
    expect(await page.getByRole('button', { name: /Approve|Deny/ }).count()).toBe(0);
    await shot(page, 'approval');

    // The held decision cites the approval and links to it.
    await page.locator(`a[href="#/decisions/${held.decision_id}"]`).click();
    await page.getByRole('heading', { name: 'Rules that fired' }).waitFor();
    expect(await page.locator(`main a[href="#/approvals/${id}"]`).count()).toBe(1);
    expect(await page.locator('main').textContent()).toContain('approval_required');
    await context.close();

    // A read-only key: no Approvals page, no link to one, no button.
    const readOnly = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const viewerPage = await open(readOnly, `#/decisions/${held.decision_id}`);
    await signIn(viewerPage, viewer);
    await viewerPage.getByRole('heading', { name: 'Rules that fired' }).waitFor();
    expect(await viewerPage.getByRole('navigation', { name: 'Console' }).textContent()).not.toContain(
      'Approvals',
    );
    expect(await viewerPage.locator('main').textContent()).toContain(id);
    expect(await viewerPage.locator(`a[href="#/approvals/${id}"]`).count()).toBe(0);
    await viewerPage.goto(`${server.url}/ui/#/approvals`);
    await viewerPage.getByText('This key may not see this page.').waitFor();
    expect(await viewerPage.getByRole('button', { name: /Approve|Deny/ }).count()).toBe(0);
    await readOnly.close();

    // The agent's key may read its pending approval, and sees no button to decide it.
    const pending = (await api('GET', '/v1/approvals?status=pending', undefined, alice)).approvals[0];
    const agentContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const agentPage = await open(agentContext, `#/approvals/${pending.id}`);
    await signIn(agentPage, agent);
    await expect.poll(() => agentPage.locator('dl.facts').count()).toBe(1);
    expect(await agentPage.locator('dl.facts').textContent()).toContain('pending');
    expect(await agentPage.getByRole('button', { name: /Approve|Deny/ }).count()).toBe(0);
    expect(await agentPage.getByRole('navigation', { name: 'Console' }).textContent()).not.toContain(
      'Approvals',
    );
    await agentContext.close();
  });

  it('replays a stricter candidate over recorded decisions, activates it with If-Match; a read-only key sees no replay', async () => {
    // Recorded over HTTP: two emails (Allow) around a payment without a budget (Block).
    const evaluate = (action: string, params: Record<string, unknown>) =>
      api('POST', '/v1/gates/evaluate', { session_id: 'policy-1', action, params });
    const email1 = await evaluate('email.send', { to: 'a@example.com' });
    const payment = await evaluate('payments.transfer', { amount: 50, to: 'acct-1' });
    const email2 = await evaluate('email.send', { to: 'b@example.com' });
    expect([email1.verdict, payment.verdict, email2.verdict]).toEqual(['Allow', 'Block', 'Allow']);
    const before = await api('GET', '/v1/policy');
    expect(POLICY).toContain('\nrules: []\n');

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await open(context, '#/policy');
    await signIn(page, admin);
    await expect.poll(() => page.locator('#active-revision').textContent()).toBe(before.revision);
    const main = page.locator('main');
    expect(await main.locator('table', { hasText: 'Named rules' }).textContent()).toContain('over_budget');
    expect(await page.locator('#revisions tbody').textContent()).toContain(before.revision.slice(0, 12));

    // The candidate adds a rule that blocks email; two pages of at most two decisions each.
    await page.getByLabel('Candidate policy (YAML)').fill(STRICT);
    await page.getByLabel('Session', { exact: true }).fill('policy-1');
    await page.getByLabel('At most', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Run replay' }).click();
    const result = page.locator('#replay-result');
    await result.locator(`a[href="#/decisions/${email1.decision_id}"]`).waitFor();
    const first = await result.textContent();
    expect(first).toContain('1 of 2 decisions would change verdict');
    expect(first).toContain('Not replayed: values erased0');
    expect(first).toContain('no_email');
    expect(await result.locator(`a[href="#/decisions/${payment.decision_id}"]`).count()).toBe(0);
    await page.getByRole('button', { name: /Continue after seq \d+/ }).click();
    await result.locator(`a[href="#/decisions/${email2.decision_id}"]`).waitFor();
    expect(await result.locator('.replay-report').count()).toBe(2);
    const byVerdict = result.locator('table', { hasText: 'recorded → candidate verdict' }).first();
    expect(await byVerdict.textContent()).toMatch(/AllowBlock1/);
    await shot(page, 'policy');

    // A changed decision's link opens its page.
    await result.locator(`a[href="#/decisions/${email1.decision_id}"]`).click();
    await page.getByRole('heading', { name: 'Rules that fired' }).waitFor();
    expect(await main.textContent()).toContain('email.send');
    await page.goBack();
    await page.locator('#active-revision').waitFor();

    // 422: a policy with a problem is refused with its line:col, and nothing changes.
    await page
      .getByLabel('Candidate policy (YAML)')
      .fill(STRICT.replace('verdict: Block\n    message: "No', 'verdict: Maybe\n    message: "No'));
    await page.getByRole('button', { name: 'Activate candidate' }).click();
    const refused = page.locator('#activation [role="alert"]');
    await refused.waitFor();
    expect(await refused.textContent()).toContain('422 invalid_request');
    expect(await refused.locator('li').allTextContents()).toEqual([
      expect.stringMatching(/^rules\[0\]\.verdict: policy:\d+:\d+: .*"Maybe"/),
    ]);
    expect((await api('GET', '/v1/policy')).revision).toBe(before.revision);
    await shot(page, 'policy-invalid');

    // 412: someone else activated a policy since this page read it.
    const other = await fetch(`${server.url}/v1/policy`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${admin}`,
        'content-type': 'application/json',
        'if-match': `"${before.revision}"`,
      },
      body: JSON.stringify({ policy: POLICY.replace('open_conflicts: Warn', 'open_conflicts: Block') }),
    });
    expect(other.status).toBe(200);
    const otherRevision = ((await other.json()) as { revision: string }).revision;
    expect(other.headers.get('etag')).toBe(`"${otherRevision}"`);
    await page.getByLabel('Candidate policy (YAML)').fill(STRICT);
    await page.getByRole('button', { name: 'Activate candidate' }).click();
    await expect.poll(() => refused.textContent()).toContain(`is ${otherRevision}, not ${before.revision}`);
    await shot(page, 'policy-stale');

    expect(await refused.textContent()).toContain('412 precondition_failed');
    // Read again: the activation goes through, and the agent's next email is blocked.
    await page.getByRole('button', { name: 'Read the active policy again' }).click();
    await expect.poll(() => page.locator('#active-revision').textContent()).toBe(otherRevision);
    await page.getByLabel('Candidate policy (YAML)').fill(STRICT);
    await page.getByRole('button', { name: 'Activate candidate' }).click();
    await page.getByText('Activated revision').waitFor();
    const now = await api('GET', '/v1/policy');
    expect(now.rules.map((r: { name: string }) => r.name)).toContain('no_email');
    expect(await page.locator('#active-revision').textContent()).toBe(now.revision);
    expect((await evaluate('email.send', { to: 'c@example.com' })).verdict).toBe('Block');

    // The first revision, diffed with the active one: the rule is the addition.
    await page.getByRole('button', { name: `Diff ${before.revision.slice(0, 12)} with active` }).click();
    await expect.poll(() => page.locator('.diff .add').allTextContents()).toContain('+   - name: no_email\n');
    // Long unchanged runs fold into one line each.
    expect(await page.locator('.diff .fold').first().textContent()).toMatch(/… \d+ unchanged lines/);
    expect(await page.locator('.diff').textContent()).not.toContain('min_trust: user_input');
    await shot(page, 'policy-diff');
    await context.close();

    // A read-only key reads the policy and its revisions, and has no replay or activate button
    // (at phone width, without sideways scrolling).
    const readOnly = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    const viewerPage = await open(readOnly, '#/policy');
    await signIn(viewerPage, viewer);
    await expect.poll(() => viewerPage.locator('#active-revision').textContent()).toBe(now.revision);
    await viewerPage.getByText('needs a key with the policy:write scope').waitFor();
    expect(await viewerPage.getByRole('button', { name: /Run replay|Activate|Replay/ }).count()).toBe(0);
    expect(await viewerPage.getByRole('button', { name: /Diff .* with active/ }).count()).toBeGreaterThan(0);
    await viewerPage
      .getByRole('button', { name: `Diff ${before.revision.slice(0, 12)} with active` })
      .click();
    await viewerPage.locator('.diff .add').first().waitFor();
    expect(
      await viewerPage.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    await shot(viewerPage, 'policy-read-only');
    await readOnly.close();

    // The history says what the activations and replays were, each linked to the policy page;
    // they belong to no session, and the type filter suggests both types.
    const historyContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const history = await open(historyContext, '#/history?type=policy.activated');
    await signIn(history, admin);
    const activated = history.locator('#history-table tbody tr', { hasText: now.revision.slice(0, 12) });
    await activated.waitFor();
    expect(await activated.textContent()).toMatch(/activated policy\s*\S{12}… by /);
    expect(await activated.locator('a[href="#/policy"]').count()).toBe(1);
    expect(await activated.locator('a[href^="#/sessions/"]').count()).toBe(0);
    expect(await history.locator('#event-types option[value="policy.replayed"]').count()).toBe(1);
    await history.evaluate("location.hash = '#/history?type=policy.replayed'");
    const replayed = history.locator('#history-table tbody tr', { hasText: 'replayed' });
    await expect.poll(() => replayed.count()).toBe(2);
    expect(await replayed.allTextContents()).toContainEqual(
      expect.stringMatching(/replayed policy\s*\S{12}… over 1 decision: 1 changed verdict/),
    );
    await shot(history, 'history-policy');
    // Nor do they make a session of their own in the recent sessions.
    await history.evaluate("location.hash = '#/sessions'");
    await history.getByRole('heading', { name: 'Recent sessions' }).waitFor();
    await expect.poll(() => history.locator('a[href="#/sessions/policy-1"]').count()).toBe(1);
    expect(await history.locator('a[href="#/sessions/"]').count()).toBe(0);
    await historyContext.close();
  });

  it('renders at phone width without sideways scrolling, and sign-out forgets the key', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    const page = await open(context);
    await signIn(page, admin);
    await page.locator('#history-table tbody tr').first().waitFor();
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await shot(page, 'phone-history');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
    await context.close();
    expect(pageErrors).toEqual([]);
  });
});
