/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for `/mcp`: where an MCP client learns which
 * authorization servers issue tokens for this resource and which scopes to ask for. Served at the
 * path-aware well-known URL and, for clients that look only there, at the root.
 */
import type { TokenAuthenticator } from '../../src/index.js';
import type { ServiceRoute } from './pipeline.js';

/** The resource identifier of `/mcp` and the URL of its metadata, from the public base URL. */
export function protectedResourceUrls(publicUrl: string): { resource: string; metadata: string } {
  const base = publicUrl.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  const path = new URL(base).pathname.replace(/\/+$/, '');
  return {
    resource: `${base}/mcp`,
    metadata: `${origin}/.well-known/oauth-protected-resource${path}/mcp`,
  };
}

/** The metadata document. */
export function protectedResourceMetadata(options: {
  tokens: TokenAuthenticator;
  publicUrl: string;
}): Record<string, unknown> {
  return {
    resource: protectedResourceUrls(options.publicUrl).resource,
    authorization_servers: [...options.tokens.issuers],
    scopes_supported: [...options.tokens.scopesSupported],
    bearer_methods_supported: ['header'],
    resource_name: 'Gatehouse',
  };
}

/** `GET /.well-known/oauth-protected-resource/mcp` and `GET /.well-known/oauth-protected-resource`. */
export function createProtectedResourceRoutes(options: {
  tokens: TokenAuthenticator;
  publicUrl: string;
}): ServiceRoute[] {
  const body = JSON.stringify(protectedResourceMetadata(options));
  const handle = async () => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'cache-control': 'public, max-age=300',
      // Browser-based MCP clients read it across origins; it holds nothing secret.
      'access-control-allow-origin': '*',
    },
    body,
  });
  const path = new URL(options.publicUrl).pathname.replace(/\/+$/, '');
  return [
    { kind: 'service', method: 'GET', path: `/.well-known/oauth-protected-resource${path}/mcp`, handle },
    { kind: 'service', method: 'GET', path: '/.well-known/oauth-protected-resource', handle },
  ];
}
