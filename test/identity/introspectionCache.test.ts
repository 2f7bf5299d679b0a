/**
 * Opaque tokens are introspected at the issuer (RFC 7662) once per token and window, not once per
 * request: against the in-process test IdP on loopback, counting the POSTs to its introspection
 * endpoint. A made-up bearer sent again and again costs the IdP one request too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenAuthenticator, parseIdentityConfig } from '../../src/index.js';
import { CLIENT_SECRET, startTestIdp, type TestIdp } from './testIdp.js';

const OPAQUE = 'http://gatehouse.test/opaque';
let idp: TestIdp;

beforeAll(async () => {
  idp = await startTestIdp({ opaqueResources: [OPAQUE] });
});
afterAll(async () => {
  await idp.close();
});

describe('introspection of opaque tokens', () => {
  it('asks the issuer once per token for 30 s, an inactive token included', async () => {
    let posts = 0;
    const clock = { now: Date.now() };
    const tokens = createTokenAuthenticator({
      config: parseIdentityConfig({
        issuers: [
          {
            issuer: idp.issuer,
            audiences: [OPAQUE],
            tenant: 'acme',
            map: [{ claim: 'scope', value: 'gatehouse.read', scopes: ['history:read'] }],
            introspection: {
              endpoint: `${idp.issuer}/token/introspection`,
              client_id: 'reader',
              client_secret: CLIENT_SECRET,
            },
          },
        ],
      }),
      now: () => new Date(clock.now),
      fetch: (input, init) => {
        if (String(input).endsWith('/token/introspection')) posts += 1;
        return fetch(input, init);
      },
    });
    const token = await idp.clientCredentials({
      clientId: 'reader',
      resource: OPAQUE,
      scope: 'gatehouse.read',
    });

    for (let i = 0; i < 5; i += 1) {
      expect(await tokens.authenticate(token, 'api')).toMatchObject({
        tenantId: 'acme',
        scopes: ['history:read'],
      });
    }
    expect(posts).toBe(1);
    for (let i = 0; i < 5; i += 1) {
      await expect(tokens.authenticate('made-up-bearer', 'api')).rejects.toMatchObject({
        code: 'unauthorized',
      });
    }
    expect(posts).toBe(2);

    // Past the window the issuer is asked again (a token revoked there stops within it).
    clock.now += 31_000;
    await tokens.authenticate(token, 'api');
    await expect(tokens.authenticate('made-up-bearer', 'api')).rejects.toMatchObject({
      code: 'unauthorized',
    });
    expect(posts).toBe(4);
  });
});
