/**
 * The official MCP SDK client runs OAuth against a real `gatehouse serve` and a real OpenID
 * Provider, both on loopback: 401 → Protected Resource Metadata → authorization-server discovery
 * → dynamic registration → authorization code with PKCE and `resource` → tool calls → step-up on
 * a missing scope. Also: client credentials, two instances accepting the same token, and a bad
 * identity configuration stopping `serve` with the field it breaks.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startServe, stopServe } from '../reliability/fixtures.js';
import { CLIENT_SECRET, startTestIdp, type TestIdp } from './testIdp.js';

let idp: TestIdp;
let dir: string;
let serve: ServeProcess;
let configFile: string;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function startGatehouse(name: string, config = configFile, publicUrl?: string): Promise<ServeProcess> {
  const port = await freePort();
  return startServe(
    [
      '--database',
      join(dir, `${name}.db`),
      '--port',
      String(port),
      '--identity-config',
      config,
      '--public-url',
      publicUrl ?? `http://127.0.0.1:${port}`,
    ],
    { cwd: dir },
  );
}

const RECORD = {
  name: 'record_state',
  arguments: { session_id: 'trip', key: 'trip.city', value: 'Lyon', type: 'fact', source: 'user_input' },
};

beforeAll(async () => {
  idp = await startTestIdp({ entitlements: ['gatehouse.read'] });
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-oauth-'));
  configFile = join(dir, 'identity.yaml');
  writeFileSync(
    configFile,
    [
      'issuers:',
      `  - issuer: ${idp.issuer}`,
      '    tenant: default',
      '    map:',
      '      - { claim: scope, value: gatehouse.read, scopes: [state:read, history:read] }',
      '      - { claim: scope, value: gatehouse.write, scopes: [state:write, gate:evaluate] }',
      '      - { claim: scope, value: gatehouse.approve, scopes: [approvals:decide], labels: [finance] }',
      '',
    ].join('\n'),
  );
  serve = await startGatehouse('a');
}, 30_000);

afterAll(async () => {
  if (serve) await stopServe(serve);
  await idp?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A public client as an interactive MCP host keeps one: in memory, the browser played by the IdP helper. */
class TestOAuthClient implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:9/callback';
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  registrations = 0;
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'gatehouse identity test',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
    } as OAuthClientMetadata;
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.registrations++;
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

function tokenClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
}

describe('the MCP SDK client against gatehouse serve', () => {
  it('authorization code + PKCE with dynamic registration and resource, then step-up for a tool beyond its scope', async () => {
    const oauth = new TestOAuthClient();
    const mcpUrl = new URL(`${serve.url}/mcp`);
    let transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: oauth });
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    // 401 → metadata → discovery → registration → a redirect to the authorization endpoint.
    await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(oauth.registrations).toBe(1);
    const authorizationUrl = oauth.authorizationUrl!;
    expect(authorizationUrl.origin).toBe(idp.issuer);
    expect(authorizationUrl.searchParams.get('resource')).toBe(mcpUrl.href);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorizationUrl.searchParams.get('scope')).toBe(
      'gatehouse.read gatehouse.write gatehouse.approve',
    );
    await transport.finishAuth(await idp.authorize(authorizationUrl, oauth.redirectUrl));
    const first = tokenClaims(oauth.saved!.access_token);
    expect(first['aud']).toBe(mcpUrl.href);
    // The user is entitled to read only, so that is all the token carries.
    expect(first['scope']).toBe('gatehouse.read');

    transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: oauth });
    await client.connect(transport);
    const history = await client.callTool({ name: 'read_history', arguments: { session_id: 'trip' } });
    expect(history.isError).toBeFalsy();

    // record_state needs gatehouse.write: the server answers 403 insufficient_scope and the SDK
    // goes back to the authorization server for that scope.
    idp.entitle(['gatehouse.read', 'gatehouse.write']);
    oauth.authorizationUrl = undefined;
    await expect(client.callTool(RECORD)).rejects.toBeInstanceOf(UnauthorizedError);
    const stepUp = oauth.authorizationUrl as URL | undefined;
    expect(stepUp?.searchParams.get('scope')).toBe('gatehouse.write');
    await transport.finishAuth(await idp.authorize(stepUp!, oauth.redirectUrl));
    expect(tokenClaims(oauth.saved!.access_token)['scope']).toContain('gatehouse.write');
    const recorded = await client.callTool(RECORD);
    expect(recorded.isError).toBeFalsy();
    expect(oauth.registrations).toBe(1);
    await client.close();
  }, 30_000);

  it('client credentials (a machine client) with the SDK ClientCredentialsProvider', async () => {
    const provider = new ClientCredentialsProvider({
      clientId: 'writer',
      clientSecret: CLIENT_SECRET,
      scope: 'gatehouse.read gatehouse.write',
      expectedIssuer: idp.issuer,
    });
    const client = new Client({ name: 'machine', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), { authProvider: provider }),
    );
    const result = await client.callTool({
      ...RECORD,
      arguments: { ...RECORD.arguments, session_id: 'machine' },
    });
    expect(result.isError).toBeFalsy();
    await client.close();
  }, 30_000);

  it('two instances behind one public URL accept the same token; an instance with another URL refuses it', async () => {
    // `second` stands for a replica behind the same load balancer: same --public-url, own port.
    const second = await startGatehouse('b', configFile, serve.url);
    const other = await startGatehouse('c');
    try {
      const token = await idp.clientCredentials({
        clientId: 'reader',
        resource: `${serve.url}/mcp`,
        scope: 'gatehouse.read',
      });
      const list = (url: string) =>
        fetch(`${url}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
        });
      expect((await list(serve.url)).status).toBe(200);
      expect((await list(second.url)).status).toBe(200);
      expect((await list(other.url)).status).toBe(401);
    } finally {
      await stopServe(second);
      await stopServe(other);
    }
  }, 30_000);

  it('a bad identity configuration stops serve with the file and the field it breaks', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, `issuers:\n  - issuer: ${idp.issuer}\n    algorithms: [HS256]\n    map: []\n`);
    const error = await startGatehouse('bad', bad).then(
      () => undefined,
      (e: Error) => e.message,
    );
    expect(error).toContain('bad.yaml');
    expect(error).toMatch(/issuers\.0\.algorithms\.0/);
    expect(error).toMatch(/issuers\.0\.map/);
  }, 30_000);
});
