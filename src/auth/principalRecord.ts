import { z } from 'zod';

/**
 * Who did something, as history records it: one delimited object built here and nowhere else,
 * so the data-lifecycle rules can classify it as a whole (an IdP subject may be personal data).
 * IDs only: never a token, a name or an e-mail address.
 */

/** The schema of {@link PrincipalRecord} (for the OpenAPI document and readers). */
export const PrincipalRecordSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('key'), key_id: z.string() }),
  z.object({
    kind: z.literal('oidc'),
    iss: z.string(),
    sub: z.string(),
    client_id: z.string().optional(),
    act: z.string().optional(),
  }),
]);

/**
 * Span attributes naming a caller: IDs only. For a token, the pseudonymous `id` (the key-ID
 * stand-in) rather than the issuer's subject, which may be personal data.
 */
export function principalAttributes(principal: {
  keyId: string;
  record?: PrincipalRecord | undefined;
}): Record<string, string> {
  const record = principal.record;
  return {
    'gatehouse.principal.kind': record?.kind ?? 'key',
    'gatehouse.principal.id': principal.keyId,
    ...(record?.kind === 'oidc' && record.client_id !== undefined
      ? { 'gatehouse.principal.client_id': record.client_id }
      : {}),
  };
}

/** A principal as recorded on events (`data.principal`). */
export type PrincipalRecord =
  | { kind: 'key'; key_id: string }
  | {
      kind: 'oidc';
      /** The token's issuer. */
      iss: string;
      /** The subject, as the issuer names it. */
      sub: string;
      /** The OAuth client that obtained the token (`client_id`, else `azp`). */
      client_id?: string;
      /** For a delegated token, the subject of the actor (`act.sub`, RFC 8693). */
      act?: string;
    };

/**
 * The principal of a call, as its events record it: the face's record, else the key's; none for
 * an in-process call. The one place a record is derived from a call context.
 */
export function principalOf(
  ctx: { principal?: PrincipalRecord | undefined; keyId?: string | undefined } | undefined,
): PrincipalRecord | undefined {
  if (ctx?.principal) return ctx.principal;
  return ctx?.keyId === undefined ? undefined : principalOfKey(ctx.keyId);
}

/**
 * The record of an API key holder.
 * @example principalOfKey('key_01J…') // { kind: 'key', key_id: 'key_01J…' }
 */
export function principalOfKey(keyId: string): PrincipalRecord {
  return { kind: 'key', key_id: keyId };
}

/** The record of a token holder; empty optional fields are left out. */
export function principalOfToken(fields: {
  iss: string;
  sub: string;
  clientId?: string | undefined;
  act?: string | undefined;
}): PrincipalRecord {
  return {
    kind: 'oidc',
    iss: fields.iss,
    sub: fields.sub,
    ...(fields.clientId === undefined ? {} : { client_id: fields.clientId }),
    ...(fields.act === undefined ? {} : { act: fields.act }),
  };
}
