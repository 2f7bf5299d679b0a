/**
 * docs/identity.md: tokens with made-up `kid`s cannot make Gatehouse fetch the key set for each.
 * That holds while the issuer fails too: after a failed fetch of the key set (or of the discovery
 * document that names it) Gatehouse answers `unavailable` without fetching again until
 * `jwks_cooldown_seconds` have passed, whether the tokens carry made-up `kid`s or are forgeries
 * naming a trusted issuer before any key set was fetched. Counted at a scripted issuer on
 * loopback; the clock is the test's (only `Date` is faked: jose's own cooldown reads it too).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTokenAuthenticator, parseIdentityConfig, type TokenAuthenticator } from '../../src/index.js';
import { type ScriptedIssuer, startScriptedIssuer } from './scriptedIssuer.js';

const AUDIENCE = 'http://gatehouse.test/v1';
const COOLDOWN_S = 30;
const DOWN = { status: 503, body: '{"error":"temporarily_unavailable"}' };

let idp: ScriptedIssuer;

function authenticator(discovery = false): TokenAuthenticator {
  return createTokenAuthenticator({
    config: parseIdentityConfig({
      issuers: [
        {
          issuer: idp.issuer,
          ...(discovery ? {} : { jwks_uri: idp.jwksUri }),
          jwks_cooldown_seconds: COOLDOWN_S,
          audiences: [AUDIENCE],
          tenant: 'acme',
          map: [{ claim: 'scope', value: 'r', scopes: ['state:read'] }],
        },
      ],
    }),
  });
}

/** `count` tokens with made-up `kid`s, each answered (and counted) before the next is sent. */
async function madeUpKids(tokens: TokenAuthenticator, count: number): Promise<string[]> {
  const codes: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const forged = await idp.sign({ aud: AUDIENCE, scope: 'r' }, { kid: `made-up-${i}` });
    codes.push(
      await tokens.authenticate(forged, 'api').then(
        () => 'accepted',
        (error: { code: string }) => error.code,
      ),
    );
  }
  return codes;
}

const passCooldown = () => vi.setSystemTime(Date.now() + (COOLDOWN_S + 1) * 1000);

beforeAll(async () => {
  idp = await startScriptedIssuer();
});
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
});
afterEach(() => {
  vi.useRealTimers();
  idp.heal();
});
afterAll(async () => {
  await idp.close();
});

describe('the key set cooldown while the issuer fails', () => {
  it('before any good fetch, 20 forged tokens cost one fetch; past the cooldown it is tried again', async () => {
    const tokens = authenticator();
    const before = idp.hits('/jwks');
    idp.fail('/jwks', DOWN);
    expect(await madeUpKids(tokens, 20)).toEqual(Array(20).fill('unavailable'));
    expect(idp.hits('/jwks') - before).toBe(1);

    idp.heal();
    passCooldown();
    const good = await idp.sign({ aud: AUDIENCE, scope: 'r' });
    expect(await tokens.authenticate(good, 'api')).toMatchObject({ tenantId: 'acme' });
    expect(idp.hits('/jwks') - before).toBe(2);
  });

  it('after a good fetch, made-up kids refetch a failing key set once per cooldown, and known keys still verify', async () => {
    const tokens = authenticator();
    const good = await idp.sign({ aud: AUDIENCE, scope: 'r' });
    await tokens.authenticate(good, 'api');
    const before = idp.hits('/jwks');

    passCooldown();
    idp.fail('/jwks', DOWN);
    expect(await madeUpKids(tokens, 20)).toEqual(Array(20).fill('unavailable'));
    expect(idp.hits('/jwks') - before).toBe(1);
    // The key set fetched before still verifies its tokens during the outage.
    expect(await tokens.authenticate(good, 'api')).toMatchObject({ tenantId: 'acme' });

    // A key set that is no key set is the issuer failing too.
    passCooldown();
    idp.fail('/jwks', { body: '{"keys":"nope"}' });
    expect(await madeUpKids(tokens, 5)).toEqual(Array(5).fill('unavailable'));
    expect(idp.hits('/jwks') - before).toBe(2);

    idp.heal();
    passCooldown();
    expect(await madeUpKids(tokens, 1)).toEqual(['unauthorized']);
    expect(idp.hits('/jwks') - before).toBe(3);
  });

  it('a failing discovery document is fetched once per cooldown too', async () => {
    const tokens = authenticator(true);
    const before = idp.hits('/.well-known/openid-configuration');
    idp.fail('/.well-known/openid-configuration', { status: 500, body: '{}' });
    expect(await madeUpKids(tokens, 20)).toEqual(Array(20).fill('unavailable'));
    expect(idp.hits('/.well-known/openid-configuration') - before).toBe(1);

    idp.heal();
    passCooldown();
    const good = await idp.sign({ aud: AUDIENCE, scope: 'r' });
    expect(await tokens.authenticate(good, 'api')).toMatchObject({ tenantId: 'acme' });
    expect(idp.hits('/.well-known/openid-configuration') - before).toBe(2);
  });
});
