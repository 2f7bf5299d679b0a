/**
 * The console after an erasure, in a real headless Chromium against a real `gatehouse serve`: the
 * decision, history, approval and session pages of an erased session render (no page error), show
 * the erased fields as erased, and show none of the erased text.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, stopServe } from '../reliability/fixtures.js';
import {
  APPROVAL_POLICY,
  callApi,
  hasChromium,
  launchChromium,
  openPage,
  signIn,
  startConsoleServe,
} from './consoleHarness.js';

describe.skipIf(!hasChromium)('the console after an erasure, in Chromium', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-erasure-'));
  let server: ServeProcess;
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ({ server } = await startConsoleServe(dir, APPROVAL_POLICY));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    if (server) await stopServe(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('every page of the erased session renders its erased fields as erased', async () => {
    const api = (method: string, path: string, body?: unknown) =>
      callApi(server.url, server.key!, method, path, body);
    const marker = `Meyer${Date.now()}`;
    await api('POST', '/v1/state/items', {
      session_id: 'erase-me',
      key: 'budget.limit',
      value: '5000',
      type: 'fact',
      source: 'user_input',
      metadata: { said_by: marker },
    });
    const held = await api('POST', '/v1/gates/evaluate', {
      session_id: 'erase-me',
      action: 'payments.transfer',
      params: { amount: 9000, to: marker },
    });
    expect(held.approval.status).toBe('pending');
    const erased = await api('POST', '/v1/erasures', { session_id: 'erase-me' });
    const by = `(erased by #${erased.erasure.seq})`;

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await openPage(context, `${server.url}/ui/#/history`, pageErrors);
    await signIn(page, server.key!);
    const main = page.locator('main');
    for (const [hash, ready] of [
      [`#/decisions/${held.decision_id}`, 'State it read'],
      [`#/approvals/${held.approval.id}`, 'Params (secrets masked)'],
    ] as const) {
      await page.goto(`${server.url}/ui/${hash}`);
      await page.getByRole('heading', { name: ready }).waitFor();
      await expect.poll(() => main.textContent()).toContain(by);
      expect(await main.textContent()).not.toContain(marker);
    }
    await page.goto(`${server.url}/ui/#/history?session=erase-me`);
    await expect.poll(() => main.textContent()).toContain('erasure');
    expect(await main.textContent()).not.toContain(marker);
    await page.goto(`${server.url}/ui/#/approvals?status=denied`);
    await expect.poll(() => main.textContent()).toContain(by);
    expect(pageErrors).toEqual([]);
    await context.close();
  });
});
