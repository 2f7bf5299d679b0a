/**
 * A small token issuer on 127.0.0.1 whose endpoints a test can break: a discovery document, a
 * JWKS and an introspection endpoint, each answering well until a test scripts another answer,
 * and counting the requests it gets. For IdP outages, which the OpenID Provider of `testIdp.ts`
 * cannot stage.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

/** What an endpoint answers instead of its good answer. */
export interface ScriptedAnswer {
  status?: number;
  contentType?: string;
  body: string;
}

/** The paths a test can script. */
export type IssuerPath = '/.well-known/openid-configuration' | '/jwks' | '/introspect';

export interface ScriptedIssuer {
  /** The `iss` of its tokens, also the base of its endpoints. */
  readonly issuer: string;
  readonly jwksUri: string;
  readonly introspectionUri: string;
  /** Makes `path` answer `answer` until {@link heal}. */
  fail(path: IssuerPath, answer: ScriptedAnswer): void;
  /** Every endpoint answers well again. */
  heal(): void;
  /** Requests each path got so far. */
  hits(path: IssuerPath): number;
  /** A token signed with its key (ES256, kid `k1` unless the header says otherwise). */
  sign(claims: Record<string, unknown>, header?: { kid?: string }): Promise<string>;
  close(): Promise<void>;
}

/** Starts a {@link ScriptedIssuer} on an ephemeral loopback port. */
export async function startScriptedIssuer(): Promise<ScriptedIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const scripted = new Map<string, ScriptedAnswer>();
  const hits = new Map<string, number>();
  let issuer = '';

  const answer = (
    res: ServerResponse,
    { status = 200, contentType = 'application/json', body }: ScriptedAnswer,
  ) => {
    res.writeHead(status, { 'content-type': contentType });
    res.end(body);
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    req.resume();
    req.on('end', () => {
      const override = scripted.get(path);
      if (override) return answer(res, override);
      switch (path) {
        case '/.well-known/openid-configuration':
          return answer(res, { body: JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }) });
        case '/jwks':
          return answer(res, { body: JSON.stringify({ keys: [publicJwk] }) });
        case '/introspect':
          return answer(res, { body: JSON.stringify({ active: false }) });
        default:
          return answer(res, { status: 404, body: '{}' });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    introspectionUri: `${issuer}/introspect`,
    fail: (path, a) => scripted.set(path, a),
    heal: () => scripted.clear(),
    hits: (path) => hits.get(path) ?? 0,
    sign(claims, header = {}) {
      const seconds = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, sub: 'user-1', exp: seconds + 300, ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: header.kid ?? 'k1', typ: 'at+jwt' })
        .sign(privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
