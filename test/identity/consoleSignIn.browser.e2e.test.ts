/**
 * The console signs in at the identity provider in headless Chromium: authorization code + PKCE
 * as a public client against a real OpenID Provider on loopback, the token kept in the tab like a
 * key, and the history showing that the signed-in person did what they did.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium, openPage } from '../console/consoleHarness.js';
import { type ServeProcess, startServe, stopServe } from '../reliability/fixtures.js';
import { startTestIdp, type TestIdp } from './testIdp.js';

let idp: TestIdp;
let dir: string;
let serve: ServeProcess;
let browser: Browser;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.skipIf(!hasChromium)('console sign-in at the identity provider', () => {
  beforeAll(async () => {
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    idp = await startTestIdp({ publicClients: [{ clientId: 'console', redirectUri: `${publicUrl}/ui/` }] });
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-idp-'));
    const config = join(dir, 'identity.yaml');
    writeFileSync(
      config,
      [
        'issuers:',
        `  - issuer: ${idp.issuer}`,
        `    audiences: [${publicUrl}/v1]`,
        '    tenant: default',
        '    map:',
        '      - { claim: scope, value: gatehouse.read, scopes: [state:read, history:read] }',
        '      - { claim: scope, value: gatehouse.write, scopes: [state:write, gate:evaluate] }',
        'console:',
        `  issuer: ${idp.issuer}`,
        '  client_id: console',
        '  scope: gatehouse.read gatehouse.write',
        '',
      ].join('\n'),
    );
    serve = await startServe(
      [
        '--database',
        join(dir, 'g.db'),
        '--port',
        String(port),
        '--identity-config',
        config,
        '--public-url',
        publicUrl,
      ],
      { cwd: dir },
    );
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (serve) await stopServe(serve);
    await idp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('authorization code + PKCE signs in, the token acts as the person, and the history says who', async () => {
    const context = await browser.newContext();
    const errors: string[] = [];
    const page = await openPage(context, `${serve.url}/ui/`, errors, { consoleErrors: true });
    const button = page.locator('#idp-sign-in');
    await expect.poll(() => button.count()).toBe(1);
    expect(await button.textContent()).toBe(`Sign in with ${new URL(idp.issuer).host}`);
    // The API-key form stays beside it.
    expect(await page.getByLabel('API key').count()).toBe(1);
    await button.click();
    // Through the IdP (headless login and consent) and back to the console, signed in.
    await expect
      .poll(() => page.locator('#whoami').textContent(), { timeout: 15_000 })
      .toContain(idp.subject);
    expect(await page.locator('#whoami').textContent()).toContain('via console');
    // The code is gone from the address bar; the token sits where a key would.
    expect(new URL(page.url()).search).toBe('');
    const stored = await page.evaluate<string | null>("sessionStorage.getItem('gatehouse.apiKey')");
    expect(stored?.split('.')).toHaveLength(3);
    // The console's own client writes nothing, so write as the person with the tab's token.
    const write = await fetch(`${serve.url}/v1/state/items`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stored}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        session_id: 'console-idp',
        key: 'trip.city',
        value: 'Porto',
        type: 'fact',
        source: 'user_input',
      }),
    });
    expect(write.status).toBe(201);
    await page.goto(`${serve.url}/ui/#/history`);
    const principal = page.locator('.principal').first();
    await expect
      .poll(() => principal.textContent(), { timeout: 10_000 })
      .toContain(`by ${idp.subject} via console`);
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);
});
