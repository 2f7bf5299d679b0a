/**
 * The console's shell: sign-in, the header (pages this key may see, the pending-approvals count,
 * who is signed in, sign out) and a hash router over the page modules. Adding a page is one
 * module and one entry in {@link PAGES}.
 */

import { ApiError, call, forgetKey, get, storedKey, storeKey, whenUnauthorized } from './api.js';
import { approvalPage, approvalsPage, pendingCount } from './approvalsPage.js';
import { decisionPage } from './decisionPage.js';
import { errorBox, h, replace } from './dom.js';
import { erasurePage } from './erasurePage.js';
import { historyPage } from './historyPage.js';
import { finishSignIn, loadSignInConfig, type SignInConfig, startSignIn } from './idpSignIn.js';
import type { Me, Page, PageContext } from './pageTypes.js';
import { policyPage } from './policyPage.js';
import { principalLabel, principalRecordOf } from './principalLabel.js';
import { retentionPage } from './retentionPage.js';
import { sessionPage, sessionsPage } from './sessionsPage.js';
import { webhookPage, webhooksPage } from './webhooksPage.js';

/** Every page, in navigation order. */
const PAGES: Page[] = [
  historyPage,
  sessionsPage,
  sessionPage,
  decisionPage,
  approvalsPage,
  approvalPage,
  webhooksPage,
  webhookPage,
  policyPage,
  erasurePage,
  retentionPage,
];

const app = document.getElementById('app')!;
let current: AbortController | undefined;
let headerTimer: number | undefined;

/** A path segment decoded, or undefined when it is not valid percent-encoding (`%E0%A4%A`). */
function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function matchRoute(path: string): { page: Page; params: Record<string, string> } | undefined {
  const parts = path.split('/').filter(Boolean);
  for (const page of PAGES) {
    const pattern = page.path.split('/');
    if (pattern.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const ok = pattern.every((p, i) => {
      if (p.startsWith(':')) {
        const value = decodeSegment(parts[i]!);
        if (value === undefined) return false;
        params[p.slice(1)] = value;
        return true;
      }
      return p === parts[i];
    });
    if (ok) return { page, params };
  }
  return undefined;
}

function signIn(message?: string): void {
  current?.abort();
  clearInterval(headerTimer);
  document.title = 'Sign in · Gatehouse';
  const input = h('input', {
    id: 'api-key',
    name: 'api-key',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    placeholder: 'gh_…',
    'aria-describedby': 'key-help',
  });
  const error = h(
    'div',
    { 'aria-live': 'assertive' },
    message ? h('p', { class: 'error', role: 'alert' }, message) : null,
  );
  const form = h(
    'form',
    {
      'aria-labelledby': 'signin-title',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const key = input.value.trim();
        try {
          await call<Me>('GET', '/v1/me', { key });
          storeKey(key);
          await boot();
        } catch (e) {
          replace(
            error,
            h(
              'p',
              { class: 'error', role: 'alert' },
              e instanceof ApiError && e.status === 401
                ? 'That key is unknown or revoked.'
                : (e as Error).message,
            ),
          );
          input.focus();
        }
      },
    },
    h('label', { for: 'api-key' }, 'API key', input),
    h(
      'p',
      { id: 'key-help', class: 'muted' },
      'The key stays in this browser tab only (sessionStorage) and is sent as a bearer header. Closing the tab or signing out forgets it.',
    ),
    error,
    h('button', { type: 'submit' }, 'Sign in'),
  );
  const provider = identityProvider;
  const idpButton = provider
    ? h(
        'button',
        {
          type: 'button',
          id: 'idp-sign-in',
          onclick: () =>
            void startSignIn(provider).catch((e: unknown) =>
              replace(error, h('p', { class: 'error', role: 'alert' }, (e as Error).message)),
            ),
        },
        `Sign in with ${new URL(provider.issuer).host}`,
      )
    : null;
  replace(
    app,
    h(
      'main',
      { id: 'main', class: 'signin' },
      h(
        'div',
        { class: 'panel' },
        h('h1', { id: 'signin-title' }, 'Gatehouse console'),
        idpButton,
        idpButton ? h('p', { class: 'muted' }, 'or with an API key:') : null,
        form,
      ),
    ),
  );
  input.focus();
}

/** The stored key was refused (unknown or revoked): forget it and ask for one again, once. */
function keyRefused(): void {
  if (!storedKey()) return;
  forgetKey();
  signIn('The key is no longer valid; sign in again.');
}

/** `/v1/me` failed for another reason than the key (503, 429, offline): keep the key, offer a retry. */
function bootFailed(error: unknown): void {
  document.title = 'Not reachable · Gatehouse';
  const retry = h('button', { type: 'button', onclick: () => void boot() }, 'Try again');
  const signOut = h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      onclick: () => {
        forgetKey();
        signIn('Signed out.');
      },
    },
    'Sign out',
  );
  replace(
    app,
    h(
      'main',
      { id: 'main', class: 'signin' },
      h(
        'div',
        { class: 'panel' },
        h('h1', {}, 'Gatehouse console'),
        h('p', {}, 'The service did not answer as expected; you are still signed in.'),
        errorBox(error),
        h('div', { class: 'actions' }, retry, signOut),
      ),
    ),
  );
  retry.focus();
}

async function probe(pages: Page[]): Promise<Set<Page>> {
  const hidden = new Set<Page>();
  const results = new Map<string, Promise<boolean>>();
  for (const page of pages) {
    if (!page.probe) continue;
    const path = page.probe;
    if (!results.has(path)) {
      const [pathname, search = ''] = path.split('?');
      results.set(
        path,
        get(pathname!, Object.fromEntries(new URLSearchParams(search))).then(
          () => true,
          (e: unknown) => !(e instanceof ApiError && (e.status === 404 || e.status === 405)),
        ),
      );
    }
    if (!(await results.get(path))) hidden.add(page);
  }
  return hidden;
}

async function boot(): Promise<void> {
  if (!storedKey()) return signIn();
  let me: Me;
  try {
    me = await get<Me>('/v1/me');
  } catch (e) {
    // Only a 401 means the key is gone (whenUnauthorized has shown the sign-in); anything else
    // (a restart, a rate limit, no network) must not sign the user out.
    if (e instanceof ApiError && e.status === 401) return keyRefused();
    return bootFailed(e);
  }
  const can = (scope: string) => me.scopes.includes('admin') || me.scopes.includes(scope);
  const hidden = await probe(PAGES);
  if (!storedKey()) return;
  const visible = (page: Page) => !hidden.has(page) && (!page.scopes || page.scopes.some(can));
  const navPages = PAGES.filter((p) => p.nav && visible(p));

  const approvalsCount = h('span', { class: 'count', hidden: true });
  const nav = h(
    'nav',
    { class: 'main', 'aria-label': 'Console' },
    h(
      'ul',
      {},
      ...navPages.map((p) =>
        h(
          'li',
          {},
          h(
            'a',
            { href: `#/${p.nav!.href}`, 'data-page': p.path },
            p.nav!.label,
            p === approvalsPage ? approvalsCount : null,
          ),
        ),
      ),
    ),
  );
  const signOut = h('button', { type: 'button', class: 'secondary', id: 'sign-out' }, 'Sign out');
  signOut.addEventListener('click', () => {
    forgetKey();
    location.hash = '';
    signIn('Signed out.');
  });
  const heading = h('h1', { tabindex: '-1' });
  const pageRoot = h('div', { class: 'page' });
  const main = h('main', { id: 'main', tabindex: '-1' }, heading, pageRoot);
  replace(
    app,
    h(
      'a',
      {
        class: 'skip',
        href: '#main',
        onclick: (event: Event) => {
          event.preventDefault();
          main.focus();
        },
      },
      'Skip to content',
    ),
    h(
      'header',
      { class: 'top' },
      h('p', { class: 'brand' }, 'Gatehouse'),
      nav,
      h(
        'div',
        { class: 'whoami' },
        h('span', { id: 'whoami' }, `${whoAmI(me)} · ${me.tenant_id}`),
        h('span', { class: 'scopes mono' }, me.scopes.join(' ')),
        signOut,
      ),
    ),
    main,
  );

  const refreshHeader = () => {
    if (!navPages.includes(approvalsPage)) return;
    void pendingCount().then(
      (n) => {
        approvalsCount.hidden = n === '';
        approvalsCount.textContent = n;
        approvalsCount.setAttribute('aria-label', `${n} pending`);
      },
      // The count is a hint: a failed refresh keeps the last one, the page itself shows errors.
      () => undefined,
    );
  };
  refreshHeader();
  clearInterval(headerTimer);
  headerTimer = window.setInterval(refreshHeader, 30_000);

  let first = true;
  const route = async () => {
    if (!storedKey()) return;
    const hash = location.hash.replace(/^#\/?/, '');
    if (hash === 'main') return;
    const [path = '', search = ''] = hash.split('?');
    if (!first) refreshHeader();
    const found =
      matchRoute(path) ?? (path === '' ? { page: navPages[0] ?? historyPage, params: {} } : undefined);
    current?.abort();
    const controller = new AbortController();
    current = controller;
    for (const a of nav.querySelectorAll('a')) {
      const active =
        found !== undefined &&
        (a.dataset['page'] === found.page.path || found.page.path.startsWith(`${a.dataset['page']}/`));
      if (active) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    if (!found || !visible(found.page)) {
      heading.textContent = 'Not available';
      document.title = 'Not available · Gatehouse';
      replace(pageRoot, h('p', {}, found ? 'This key may not see this page.' : 'No such page.'));
      return;
    }
    heading.textContent = found.page.title;
    document.title = `${found.page.title} · Gatehouse`;
    replace(pageRoot, h('p', { class: 'muted' }, 'Loading…'));
    const ctx: PageContext = {
      me,
      can,
      params: found.params,
      query: new URLSearchParams(search),
      navigate: (to) => {
        if (location.hash === `#/${to}`) void route();
        else location.hash = `#/${to}`;
      },
      signal: controller.signal,
      refreshHeader,
    };
    try {
      await found.page.render(pageRoot, ctx);
    } catch (error) {
      if (controller.signal.aborted) return;
      if (error instanceof ApiError && error.status === 401) return keyRefused();
      replace(pageRoot, errorBox(error));
    }
    // Move focus to the new page's heading so keyboard and screen-reader users start there.
    if (!first) heading.focus();
    first = false;
  };
  window.onhashchange = () => void route();
  await route();
}

/** The key's name, a token holder's subject and client, else the key ID. */
function whoAmI(me: Me): string {
  const principal = principalRecordOf(me.principal);
  if (me.name) return me.name;
  return principal?.kind === 'oidc' ? principalLabel(principal) : me.key_id;
}

/** Sign-in at the identity provider, when the service offers it. */
let identityProvider: SignInConfig | null = null;

/** Loads the sign-in options, finishes an identity-provider sign-in under way, then boots. */
async function start(): Promise<void> {
  identityProvider = await loadSignInConfig();
  if (identityProvider) {
    try {
      const token = await finishSignIn(identityProvider);
      if (token) storeKey(token);
    } catch (error) {
      return signIn((error as Error).message);
    }
  }
  await boot();
}

whenUnauthorized(keyRefused);
void start();
