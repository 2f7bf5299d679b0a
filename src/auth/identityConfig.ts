/**
 * The identity configuration: which token issuers Gatehouse trusts, which audiences their tokens
 * must carry, which tenant a token reaches and what its claims grant. One zod schema, parsed once
 * where the file is read; a bad file stops `serve` with the path and the rule it breaks.
 */
import { z } from 'zod';
import { GatehouseError } from '../errors.js';
import { KeyLabelSchema, ScopeSchema } from '../schemas.js';

/**
 * Asymmetric JWS algorithms only: a shared-secret algorithm (`HS256`) would let anyone holding
 * the issuer's public key sign tokens, and `none` signs nothing.
 */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

const HttpUrl = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL');

/** One claim rule: when `claim` holds `value`, the token gets these scopes, labels and sources. */
export const ClaimRuleSchema = z
  .object({
    /**
     * A claim name (`https://example.com/roles` as it stands), or a dotted path into nested
     * claims (`realm_access.roles`). `scope` and `scp` are split on spaces.
     */
    claim: z.string().min(1),
    /** The value to find (equal to a string claim, or an entry of a list claim). */
    value: z.string().min(1),
    scopes: z.array(ScopeSchema).default([]),
    /** Approver labels a policy's `approval.approvers` can name (an IdP group → `finance`). */
    labels: z.array(KeyLabelSchema).default([]),
    /** Sources the caller may write; adds to the issuer's `default_sources`. */
    sources: z.array(z.string().min(1).max(64)).default([]),
  })
  .strict();

/** Opaque tokens: RFC 7662 introspection at the issuer, with this resource server's credentials. */
export const IntrospectionSchema = z
  .object({
    endpoint: HttpUrl,
    client_id: z.string().min(1),
    client_secret: z.string().min(1),
  })
  .strict();

/** One trusted issuer. */
export const IssuerConfigSchema = z
  .object({
    /** The `iss` value, exactly as the issuer writes it. */
    issuer: HttpUrl,
    /** Where the signing keys are. @default the `jwks_uri` of the issuer's discovery document */
    jwks_uri: HttpUrl.optional(),
    /** Audiences a `/v1` token may carry (any one). /mcp always needs the MCP URL. @default [] */
    audiences: z.array(z.string().min(1)).default([]),
    /** @default every asymmetric algorithm */
    algorithms: z.array(z.enum(ASYMMETRIC_ALGORITHMS)).min(1).optional(),
    /** Clock skew allowed on `exp` and `nbf`, in seconds, at most 300. @default 30 */
    clock_tolerance_seconds: z.number().int().min(0).max(300).default(30),
    /**
     * How long after a key-set fetch an unknown `kid` waits before the set is fetched again, at
     * least 1: anyone can send a token with a made-up `kid`, and without a pause each would make
     * Gatehouse fetch the issuer's key set.
     * @default 30
     */
    jwks_cooldown_seconds: z.number().int().min(1).max(3600).default(30),
    /** The one tenant this issuer's tokens reach. */
    tenant: z.string().min(1).optional(),
    /** Or: the claim naming the tenant, which must be one of `tenants`. */
    tenant_claim: z.string().min(1).optional(),
    tenants: z.array(z.string().min(1)).optional(),
    /** Sources every mapped token may write. @default everything but `system` */
    default_sources: z.array(z.string().min(1).max(64)).optional(),
    /** Claim rules; a token that matches none (or gets no scope) is refused with 403. */
    map: z.array(ClaimRuleSchema).min(1),
    /** Opaque tokens are introspected here; one issuer of the configuration at most. */
    introspection: IntrospectionSchema.optional(),
  })
  .strict()
  .superRefine((issuer, ctx) => {
    const claimed = issuer.tenant_claim !== undefined;
    if ((issuer.tenant === undefined) === !claimed) {
      ctx.addIssue({
        code: 'custom',
        path: ['tenant'],
        message: 'give either `tenant` (one tenant) or `tenant_claim` with `tenants` (an allowed list)',
      });
    }
    if (claimed && (issuer.tenants === undefined || issuer.tenants.length === 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['tenants'],
        message: '`tenant_claim` needs `tenants`, the list of tenants the claim may name',
      });
    }
  });

/**
 * The console's sign-in at an issuer: authorization code + PKCE as a public client (registered at
 * the issuer with the redirect URI `<public-url>/ui/`), asking for a token for `resource`.
 */
export const ConsoleSignInSchema = z
  .object({
    /** One of `issuers`. */
    issuer: HttpUrl,
    client_id: z.string().min(1),
    /** @default 'openid' */
    scope: z.string().min(1).default('openid'),
    /** The resource (RFC 8707) to ask a token for. @default the issuer's first audience */
    resource: z.string().min(1).optional(),
  })
  .strict();

/** The whole identity configuration (`--identity-config`). */
export const IdentityConfigSchema = z
  .object({
    issuers: z.array(IssuerConfigSchema).min(1),
    console: ConsoleSignInSchema.optional(),
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.console) {
      const issuer = config.issuers.find((i) => i.issuer === config.console?.issuer);
      if (!issuer) {
        ctx.addIssue({ code: 'custom', path: ['console', 'issuer'], message: 'is not one of `issuers`' });
      } else {
        const resource = config.console.resource ?? issuer.audiences[0];
        if (resource === undefined || !issuer.audiences.includes(resource)) {
          ctx.addIssue({
            code: 'custom',
            path: ['console', 'resource'],
            message: "must be one of the issuer's `audiences` (the console calls /v1)",
          });
        }
      }
    }
    const seen = new Set<string>();
    let introspecting: string | undefined;
    config.issuers.forEach((issuer, i) => {
      if (seen.has(issuer.issuer)) {
        ctx.addIssue({ code: 'custom', path: ['issuers', i, 'issuer'], message: 'listed twice' });
      }
      seen.add(issuer.issuer);
      if (issuer.introspection === undefined) return;
      // An opaque token does not say who issued it: with two introspection endpoints, each would be
      // sent the other issuer's tokens, and whoever runs one could replay them here as the other's.
      if (introspecting !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['issuers', i, 'introspection'],
          message: `only one issuer may introspect (${introspecting} does): an opaque token names no issuer, so it would be sent to each`,
        });
      }
      introspecting ??= issuer.issuer;
    });
  });

/** A parsed identity configuration. */
export type IdentityConfig = z.output<typeof IdentityConfigSchema>;
/** One parsed issuer. */
export type IssuerConfig = z.output<typeof IssuerConfigSchema>;
/** The console's sign-in, parsed. */
export type ConsoleSignIn = z.output<typeof ConsoleSignInSchema>;
/** One parsed claim rule. */
export type ClaimRule = z.output<typeof ClaimRuleSchema>;

/**
 * Parses an identity configuration (already read from YAML or JSON).
 * @throws {GatehouseError} `invalid_request` naming every field that breaks a rule, e.g.
 *   `issuers.0.algorithms.0: Invalid option: expected one of "RS256"|…`
 */
export function parseIdentityConfig(input: unknown): IdentityConfig {
  const parsed = IdentityConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => ({
    path: issue.path.join('.') || '(root)',
    message: issue.message,
  }));
  throw new GatehouseError(
    'invalid_request',
    `Invalid identity configuration: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`,
    { errors },
  );
}
