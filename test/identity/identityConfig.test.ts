/**
 * The identity configuration's rules: each mistake is named by its path, so `serve` stops with
 * a message that says what to fix.
 */
import { describe, expect, it } from 'vitest';
import { GatehouseError, parseIdentityConfig } from '../../src/index.js';

const issuer = 'https://idp.example.org';
const map = [{ claim: 'scope', value: 'gh.read', scopes: ['state:read'] }];

function problems(input: unknown): string[] {
  try {
    parseIdentityConfig(input);
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    return (error as GatehouseError).errors.map((e) => `${e.path}: ${e.message}`);
  }
  return [];
}

describe('parseIdentityConfig', () => {
  it('accepts an issuer bound to one tenant, with defaults filled in', () => {
    const config = parseIdentityConfig({ issuers: [{ issuer, tenant: 'acme', map }] });
    expect(config.issuers[0]).toMatchObject({
      clock_tolerance_seconds: 30,
      jwks_cooldown_seconds: 30,
      audiences: [],
    });
  });

  it('refuses a key-set cooldown of 0: every made-up kid would fetch the key set', () => {
    expect(problems({ issuers: [{ issuer, tenant: 'acme', map, jwks_cooldown_seconds: 0 }] })).toEqual([
      expect.stringMatching(/^issuers\.0\.jwks_cooldown_seconds: /),
    ]);
  });

  it('needs exactly one of tenant or tenant_claim, and tenant_claim needs the allowed list', () => {
    expect(problems({ issuers: [{ issuer, map }] })).toEqual([
      expect.stringMatching(/^issuers\.0\.tenant: give either/),
    ]);
    expect(
      problems({ issuers: [{ issuer, tenant: 'a', tenant_claim: 'org', tenants: ['a'], map }] }),
    ).toHaveLength(1);
    expect(problems({ issuers: [{ issuer, tenant_claim: 'org', map }] })).toEqual([
      expect.stringMatching(/^issuers\.0\.tenants: `tenant_claim` needs `tenants`/),
    ]);
  });

  it('refuses symmetric algorithms and none, unknown scopes, unknown fields, long clock skew and duplicate issuers', () => {
    expect(problems({ issuers: [{ issuer, tenant: 'a', map, algorithms: ['HS256'] }] })[0]).toMatch(
      /^issuers\.0\.algorithms\.0/,
    );
    expect(problems({ issuers: [{ issuer, tenant: 'a', map, algorithms: ['none'] }] })[0]).toMatch(
      /^issuers\.0\.algorithms\.0/,
    );
    expect(
      problems({
        issuers: [{ issuer, tenant: 'a', map: [{ claim: 'scope', value: 'x', scopes: ['root'] }] }],
      })[0],
    ).toMatch(/^issuers\.0\.map\.0\.scopes\.0/);
    expect(problems({ issuers: [{ issuer, tenant: 'a', map, audience: 'x' }] })[0]).toMatch(/^issuers\.0/);
    expect(problems({ issuers: [{ issuer, tenant: 'a', map, clock_tolerance_seconds: 3600 }] })[0]).toMatch(
      /^issuers\.0\.clock_tolerance_seconds/,
    );
    expect(
      problems({
        issuers: [
          { issuer, tenant: 'a', map },
          { issuer, tenant: 'b', map },
        ],
      }),
    ).toEqual(['issuers.1.issuer: listed twice']);
  });

  it('lets one issuer at most introspect: an opaque token names no issuer, so it would go to each', () => {
    const introspection = (host: string) => ({
      endpoint: `https://${host}/introspect`,
      client_id: 'gatehouse',
      client_secret: 's',
    });
    const issuers = [
      { issuer, tenant: 'a', map, introspection: introspection('idp.example.org') },
      {
        issuer: 'https://idp.partner.example',
        tenant: 'b',
        map,
        introspection: introspection('idp.partner.example'),
      },
    ];
    expect(problems({ issuers })).toEqual([
      expect.stringMatching(/^issuers\.1\.introspection: only one issuer may introspect/),
    ]);
    expect(problems({ issuers: [issuers[0], { ...issuers[1], introspection: undefined }] })).toEqual([]);
  });
});
