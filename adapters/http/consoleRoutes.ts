/**
 * The web console at `/ui/`: one HTML shell, one stylesheet and the browser's ES modules (compiled
 * by `npm run build` from `console/` into `dist/console/`), all from this service — no CDN, no
 * inline script, a strict Content-Security-Policy. The console is a client of the public `/v1`
 * API like any other: the pages hold no key (it lives in the tab's sessionStorage) and no data.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatehouseError } from '../../src/index.js';
import { CONSOLE_STYLES } from './consoleStyles.js';
import type { ServiceRoute } from './pipeline.js';
import { problemReply, type Reply } from './problem.js';

/** Options for {@link createConsoleRoutes}. */
export interface ConsoleOptions {
  /**
   * Where the compiled browser modules are.
   * @default dist/console of this package
   */
  assetsDir?: string;
  /**
   * Sign-in at an identity provider besides API keys: the console runs authorization code + PKCE
   * as a public client and keeps the access token as it keeps a key. Served to the page at
   * `/ui/sign-in.json`; the issuer's origin is added to the CSP's `connect-src` (discovery and the
   * token request go there).
   * @default none: API keys only
   */
  signIn?: { issuer: string; client_id: string; scope: string; resource: string };
}

/**
 * Sent with every console answer. `default-src 'self'` and no `'unsafe-inline'`: the shell loads
 * its one module and one stylesheet by URL, and the modules build the page with DOM calls (text
 * is set as text, never as HTML), so an injected string cannot run.
 */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
  // Small files, revalidated on each load, so an upgrade is never half old, half new.
  'cache-control': 'no-cache',
};

// Relative URLs only, so the console also works behind a path prefix (`/gatehouse/ui/`).
const SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Gatehouse console</title>
<link rel="icon" href="assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="assets/console.css">
<script type="module" src="assets/main.js"></script>
</head>
<body>
<div id="app"><p class="boot">Loading the Gatehouse console…</p></div>
<noscript><p class="boot">The Gatehouse console needs JavaScript.</p></noscript>
</body>
</html>
`;

/**
 * The console's icon: a gate in the accent colour. Named by the shell, so a browser never asks
 * for `/favicon.ico` (a 404 it would log on every load); SVG, so no binary asset.
 */
const CONSOLE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#0b57d0"/>
<path d="M6 27V13L16 5l10 8v14h-5.5v-8a4.5 4.5 0 0 0-9 0v8z" fill="#fff"/>
</svg>
`;

/** dist/console, whether this module runs from dist/ (built) or from the sources (tests). */
function defaultAssetsDir(): string {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  return /[\\/]dist[\\/]?$/.test(root) ? join(root, 'console') : join(root, 'dist', 'console');
}

/** The security headers, with `connect-src` widened to the sign-in issuer's origin when there is one. */
function securityHeaders(signIn: ConsoleOptions['signIn']): Readonly<Record<string, string>> {
  if (!signIn) return CONSOLE_SECURITY_HEADERS;
  const origin = new URL(signIn.issuer).origin;
  return {
    ...CONSOLE_SECURITY_HEADERS,
    'content-security-policy': CONSOLE_SECURITY_HEADERS['content-security-policy']!.replace(
      "connect-src 'self'",
      `connect-src 'self' ${origin}`,
    ),
  };
}

/** Reads the compiled modules once: only these names are ever served (no path from the request). */
function loadModules(dir: string): Map<string, string> | undefined {
  try {
    const names = readdirSync(dir).filter((name) => /^[A-Za-z0-9_-]+\.js$/.test(name));
    if (!names.includes('main.js')) return undefined;
    return new Map(names.map((name) => [name, readFileSync(join(dir, name), 'utf8')]));
  } catch {
    return undefined;
  }
}

/**
 * The console's routes: `/ui` (redirects to `/ui/`), `/ui/` (the shell), `/ui/assets/{file}` (the
 * modules, the stylesheet and the icon).
 */
export function createConsoleRoutes(options: ConsoleOptions = {}): ServiceRoute[] {
  const dir = options.assetsDir ?? defaultAssetsDir();
  const security = securityHeaders(options.signIn);
  const reply = (status: number, contentType: string, body: string): Reply => ({
    status,
    headers: { ...security, 'content-type': contentType },
    body,
  });
  const signInJson = JSON.stringify(options.signIn ?? null);
  let modules: Map<string, string> | undefined;
  const notBuilt = (path: string) =>
    problemReply(
      new GatehouseError('unavailable', 'The console is not built: run `npm run build`.'),
      { instance: path },
      security,
    );
  return [
    {
      kind: 'service',
      method: 'GET',
      path: '/ui',
      handle: async () => ({
        status: 308,
        headers: { ...security, location: 'ui/' },
        body: null,
      }),
    },
    {
      kind: 'service',
      method: 'GET',
      path: '/ui/',
      handle: async () => {
        modules ??= loadModules(dir);
        if (!modules) return notBuilt('/ui/');
        return reply(200, 'text/html; charset=utf-8', SHELL);
      },
    },
    {
      kind: 'service',
      method: 'GET',
      path: '/ui/sign-in.json',
      // `null` when the console signs in with API keys only.
      handle: async () => reply(200, 'application/json', signInJson),
    },
    {
      kind: 'service',
      method: 'GET',
      path: '/ui/assets/{file}',
      handle: async ({ file = '' }) => {
        if (file === 'console.css') return reply(200, 'text/css; charset=utf-8', CONSOLE_STYLES);
        if (file === 'favicon.svg') return reply(200, 'image/svg+xml', CONSOLE_ICON);
        modules ??= loadModules(dir);
        if (!modules) return notBuilt(`/ui/assets/${file}`);
        const source = modules.get(file);
        if (source === undefined) {
          return problemReply(
            new GatehouseError('not_found', `No console file '${file}'.`),
            { instance: `/ui/assets/${file}` },
            security,
          );
        }
        return reply(200, 'text/javascript; charset=utf-8', source);
      },
    },
  ];
}
