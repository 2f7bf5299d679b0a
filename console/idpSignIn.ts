/**
 * Signing in at the identity provider: OAuth 2.0 authorization code with PKCE (RFC 7636) as a
 * public client, asking for a token for the `/v1` resource (RFC 8707). The access token is kept
 * in the tab's sessionStorage exactly as an API key is, and goes out as the same bearer header.
 * Written here rather than with a client library: the console ships as plain browser modules
 * without a bundler, and the flow is a redirect, one discovery request and one token request.
 */

/** `/ui/sign-in.json`, as the service configures it (`null` when only API keys sign in). */
export interface SignInConfig {
  issuer: string;
  client_id: string;
  scope: string;
  resource: string;
}

interface Pending {
  verifier: string;
  state: string;
  issuer: string;
  token_endpoint: string;
}

const PENDING = 'gatehouse.idpPending';

/** The service's sign-in configuration, or null (none, or unreachable: API keys still work). */
export async function loadSignInConfig(): Promise<SignInConfig | null> {
  try {
    const res = await fetch('sign-in.json', { cache: 'no-store' });
    return res.ok ? ((await res.json()) as SignInConfig | null) : null;
  } catch {
    return null;
  }
}

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const randomString = (bytes: number) => base64url(crypto.getRandomValues(new Uint8Array(bytes)));

/** The console's own address, without query or fragment: what the IdP sends the browser back to. */
const redirectUri = () => `${location.origin}${location.pathname}`;

async function discover(issuer: string): Promise<{ authorization_endpoint: string; token_endpoint: string }> {
  const res = await fetch(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`);
  if (!res.ok) throw new Error(`The identity provider's discovery document answered ${res.status}.`);
  const doc = (await res.json()) as Record<string, unknown>;
  // The document must be the issuer's own (RFC 8414 §3.3), or its endpoints are not to be trusted.
  if (doc['issuer'] !== issuer)
    throw new Error("The identity provider's discovery document names another issuer.");
  const { authorization_endpoint: auth, token_endpoint: token } = doc;
  if (typeof auth !== 'string' || typeof token !== 'string') {
    throw new Error("The identity provider's discovery document has no authorization or token endpoint.");
  }
  return { authorization_endpoint: auth, token_endpoint: token };
}

/** Sends the browser to the identity provider; it comes back to the console with a code. */
export async function startSignIn(config: SignInConfig): Promise<void> {
  const endpoints = await discover(config.issuer);
  const verifier = randomString(32);
  const state = randomString(16);
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  const pending: Pending = {
    verifier,
    state,
    issuer: config.issuer,
    token_endpoint: endpoints.token_endpoint,
  };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(endpoints.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: config.client_id,
    redirect_uri: redirectUri(),
    scope: config.scope,
    resource: config.resource,
    state,
    code_challenge: base64url(new Uint8Array(digest)),
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.href);
}

/**
 * Finishes a sign-in when the page is the identity provider's answer: exchanges the code for an
 * access token. Undefined when no sign-in was under way.
 * @throws {Error} with a message to show, for a refused or mismatched answer
 */
export async function finishSignIn(config: SignInConfig): Promise<string | undefined> {
  const params = new URLSearchParams(location.search);
  if (!params.has('state')) return undefined;
  const saved = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  // The code is single-use and must not stay in the address bar or the history.
  history.replaceState(null, '', `${location.pathname}${location.hash}`);
  if (!saved) return undefined;
  const pending = JSON.parse(saved) as Pending;
  if (params.get('state') !== pending.state) {
    throw new Error('The sign-in answer does not belong to this tab; sign in again.');
  }
  const iss = params.get('iss');
  if (iss !== null && iss !== pending.issuer) throw new Error('The sign-in answer came from another issuer.');
  const error = params.get('error');
  if (error !== null) {
    throw new Error(
      `The identity provider refused the sign-in: ${params.get('error_description') ?? error}.`,
    );
  }
  const code = params.get('code');
  if (!code) throw new Error('The identity provider sent no authorization code.');
  const res = await fetch(pending.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri(),
      client_id: config.client_id,
      code_verifier: pending.verifier,
      resource: config.resource,
    }).toString(),
  });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok || typeof body['access_token'] !== 'string') {
    throw new Error(
      `The token request failed: ${String(body['error_description'] ?? body['error'] ?? res.status)}.`,
    );
  }
  return body['access_token'];
}
