/**
 * What the console's Chromium tests share: where Chromium and the screenshots are, the built-in
 * policy with its over-budget Block held for a `finance` approver, a `gatehouse serve` on that
 * policy with keys made by the CLI, calls to its API, and pages that sign in.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Browser, type BrowserContext, type ConsoleMessage, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { DEFAULT_POLICY_YAML } from '../../src/gate/index.js';
import { cli, type ServeProcess, startServe } from '../reliability/fixtures.js';

export const CHROMIUM = process.env['GATEHOUSE_TEST_CHROMIUM'] ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/** The repository's root, and where screenshots go. */
export const root = join(import.meta.dirname, '../..');
export const artifacts = join(root, 'test-artifacts/console');

/** The built-in policy, with its over-budget Block holding the payment for a `finance` approver. */
export const APPROVAL_POLICY = DEFAULT_POLICY_YAML.replace(
  "exceeds the budget of {state['budget.limit'].value}.\"\n",
  "exceeds the budget of {state['budget.limit'].value}.\"\n        approval: { expires_in: 15m, approvers: [finance] }\n",
);

const run = promisify(execFile);

/**
 * `gatehouse serve` in `dir` on a SQLite file and `policyYaml` (loopback webhooks allowed, no rate
 * limit), and `createKey(...flags)` making a key with `gatehouse keys create` on its database.
 */
export async function startConsoleServe(
  dir: string,
  policyYaml: string,
): Promise<{ server: ServeProcess; createKey: (...args: string[]) => Promise<string> }> {
  mkdirSync(artifacts, { recursive: true });
  const db = join(dir, 'console.db');
  writeFileSync(join(dir, 'policy.yaml'), policyYaml);
  const server = await startServe(
    [
      '--database',
      db,
      '--policy',
      join(dir, 'policy.yaml'),
      '--allow-insecure-loopback-webhooks',
      '--rate-limit',
      '0',
    ],
    { cwd: dir },
  );
  const createKey = async (...args: string[]) => {
    const { stdout } = await run(process.execPath, [cli, 'keys', 'create', '--database', db, ...args]);
    return stdout.split('\n')[0]!.trim();
  };
  return { server, createKey };
}

/** Calls the service's API with `key`; the parsed answer, or a thrown error naming the status. */
export async function callApi(base: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Chromium, headless, without the background traffic of a desktop browser. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/**
 * True for the browser's "Failed to load resource" error of an API answer (`/v1/…`): a 4xx the
 * page shows itself (a 409 after a decision elsewhere, a 412 or 422 on activation), not a fault.
 */
function isApiAnswer(msg: ConsoleMessage): boolean {
  return (
    /Failed to load resource/.test(msg.text()) &&
    new URL(msg.location().url, 'http://x/').pathname.startsWith('/v1/')
  );
}

/**
 * A new page of `context` at `url`, its uncaught errors (and, with `consoleErrors`, every error
 * the browser's console shows but the API answers the page handles: a CSP violation, a failed
 * module load, a missing icon) pushed to `errors`.
 */
export async function openPage(
  context: BrowserContext,
  url: string,
  errors: string[],
  options: { consoleErrors?: boolean } = {},
): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => errors.push(error.message));
  if (options.consoleErrors) {
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !isApiAnswer(msg)) {
        errors.push(`${msg.text()} (${msg.location().url || url})`);
      }
    });
  }
  await page.goto(url);
  return page;
}

/** Signs in on the console's form and waits for the signed-in header. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect.poll(() => page.locator('#whoami').count()).toBe(1);
}
