/**
 * A real OpenID Provider (oidc-provider, OpenID Certified) on loopback for the identity tests:
 * resource indicators issuing JWT access tokens, client credentials, dynamic registration,
 * introspection, and interaction routes that log in and consent without a browser.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { type ClientMetadata } from 'oidc-provider';

/** The token scope values the tests map to Gatehouse scopes. */
export const IDP_SCOPES = ['gatehouse.read', 'gatehouse.write', 'gatehouse.approve'] as const;

export interface TestIdp {
  issuer: string;
  /** The private signing key (ES256), for forging tokens the IdP would not issue. */
  privateJwk: JWK & { kid: string };
  publicJwk: JWK & { kid: string };
  provider: Provider;
  /** The subject the headless login signs in. */
  subject: string;
  /** Which resource scopes the signed-in user may be granted from now on (their entitlements). */
  entitle(scopes: readonly string[]): void;
  /**
   * Plays the browser: follows an authorization URL through the headless login and consent to
   * the client's redirect URI, and returns the authorization code.
   */
  authorize(url: URL, redirectUri: string): Promise<string>;
  /** Client credentials: an access token for `resource` with `scope`. */
  clientCredentials(options: { clientId: string; resource: string; scope: string }): Promise<string>;
  close(): Promise<void>;
}

export interface TestIdpOptions {
  /** Claims of the headless login's account. @default { groups: [] } */
  accountClaims?: Record<string, unknown>;
  /** Extra claims put into every JWT access token. */
  tokenClaims?: Record<string, unknown>;
  /** Resources the IdP issues tokens for; any other is refused. @default any */
  resources?: readonly string[];
  /** The resource scopes the signed-in user may be granted. @default all of {@link IDP_SCOPES} */
  entitlements?: readonly string[];
  /** Resources that get opaque access tokens (for introspection) instead of JWTs. */
  opaqueResources?: readonly string[];
  /** Public browser clients (authorization code + PKCE, no secret) and where each redirects. */
  publicClients?: ReadonlyArray<{ clientId: string; redirectUri: string }>;
  /** Confidential client-credentials clients and the scopes each may get. */
  machineClients?: ReadonlyArray<{ clientId: string; scope: string }>;
}

/** `reader` may read, `writer` may read and write, `approver` all three. */
export const DEFAULT_MACHINE_CLIENTS = [
  { clientId: 'reader', scope: 'gatehouse.read' },
  { clientId: 'writer', scope: 'gatehouse.read gatehouse.write' },
  { clientId: 'approver', scope: 'gatehouse.read gatehouse.write gatehouse.approve' },
] as const;

const CLIENT_SECRET = 'test-client-secret-of-enough-length-000000';

export async function startTestIdp(options: TestIdpOptions = {}): Promise<TestIdp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = 'idp-key-1';
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' };
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const subject = 'user-7f3a';
  let entitled: readonly string[] = options.entitlements ?? IDP_SCOPES;
  const provider = new Provider(issuer, {
    clients: (options.machineClients ?? DEFAULT_MACHINE_CLIENTS)
      .map(
        ({ clientId, scope }): ClientMetadata => ({
          client_id: clientId,
          client_secret: CLIENT_SECRET,
          grant_types: ['client_credentials'],
          response_types: [],
          redirect_uris: [],
          token_endpoint_auth_method: 'client_secret_basic',
          id_token_signed_response_alg: 'ES256',
          scope,
        }),
      )
      .concat(
        (options.publicClients ?? []).map(
          ({ clientId, redirectUri }): ClientMetadata => ({
            client_id: clientId,
            grant_types: ['authorization_code'],
            response_types: ['code'],
            redirect_uris: [redirectUri],
            token_endpoint_auth_method: 'none',
            id_token_signed_response_alg: 'ES256',
            scope: `openid ${IDP_SCOPES.join(' ')}`,
          }),
        ),
      ),
    jwks: { keys: [privateJwk] },
    scopes: ['openid', 'offline_access', ...IDP_SCOPES],
    claims: { openid: ['sub'], groups: ['groups'] },
    findAccount: async (_ctx, sub) => ({
      accountId: sub,
      claims: async () => ({ sub, ...options.accountClaims }),
    }),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf?.[0] ?? undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resourceIndicator) => {
          if (options.resources && !options.resources.includes(resourceIndicator)) {
            throw new Error('unknown resource');
          }
          return {
            scope: entitled.join(' '),
            audience: resourceIndicator,
            accessTokenFormat: options.opaqueResources?.includes(resourceIndicator) ? 'opaque' : 'jwt',
            accessTokenTTL: 300,
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
    extraTokenClaims: async () => options.tokenClaims ?? {},
    pkce: { required: () => true },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    clientBasedCORS: () => true,
    ttl: { AccessToken: 300, AuthorizationCode: 60, Grant: 600, Interaction: 600, Session: 600 },
    cookies: { keys: ['test-cookie-key-000000000000000000'] },
  });
  // Headless interactions: log the fixed subject in and grant whatever was asked.
  provider.use(async (ctx, next) => {
    const match = /^\/interaction\/([^/]+)$/.exec(ctx.path);
    if (!match || ctx.method !== 'GET') return next();
    ctx.respond = false;
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params } = details;
    if (prompt.name === 'login') {
      await provider.interactionFinished(
        ctx.req,
        ctx.res,
        { login: { accountId: subject } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const grant = details.grantId
      ? ((await provider.Grant.find(details.grantId)) ??
        new provider.Grant({ accountId: subject, clientId: String(params['client_id']) }))
      : new provider.Grant({ accountId: subject, clientId: String(params['client_id']) });
    const missing = prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(
      ctx.req,
      ctx.res,
      { consent: { grantId } },
      { mergeWithLastSubmission: true },
    );
  });

  server.on('request', provider.callback());

  return {
    issuer,
    privateJwk,
    publicJwk,
    provider,
    subject,
    async clientCredentials({ clientId, resource, scope }) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${clientId}:${CLIENT_SECRET}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }).toString(),
      });
      const body = (await res.json()) as {
        access_token?: string;
        error?: string;
        error_description?: string;
      };
      if (!body.access_token)
        throw new Error(`token request failed: ${body.error} ${body.error_description}`);
      return body.access_token;
    },
    entitle(scopes) {
      entitled = scopes;
    },
    async authorize(url, redirectUri) {
      const jar = new Map<string, string>();
      let next = url.href;
      for (let hop = 0; hop < 12; hop++) {
        const res = await fetch(next, {
          redirect: 'manual',
          headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
        });
        for (const cookie of res.headers.getSetCookie()) {
          const pair = cookie.split(';', 1)[0]!;
          const eq = pair.indexOf('=');
          jar.set(pair.slice(0, eq), pair.slice(eq + 1));
        }
        const location = res.headers.get('location');
        if (!location) throw new Error(`authorization stopped at ${res.status}: ${await res.text()}`);
        await res.body?.cancel();
        const target = new URL(location, next);
        if (target.href.startsWith(redirectUri)) {
          const code = target.searchParams.get('code');
          if (!code) throw new Error(`authorization refused: ${target.search}`);
          return code;
        }
        next = target.href;
      }
      throw new Error('authorization did not finish');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export { CLIENT_SECRET };
