/**
 * Who did something, as history records it: one delimited object built here and nowhere else,
 * so the data-lifecycle rules can classify it as a whole (an IdP subject may be personal data).
 * IDs only: never a token, a name or an e-mail address.
 */

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
