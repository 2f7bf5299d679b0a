/**
 * How the console names who did something: an event's `data.principal` (an API key, or a token's
 * issuer, subject and client, with the actor of a delegated token).
 */

/** An event's `data.principal`, as the server records it. */
export type PrincipalRecord =
  | { kind: 'key'; key_id: string }
  | { kind: 'oidc'; iss: string; sub: string; client_id?: string; act?: string };

/** The record when `value` is one, else undefined (older events have none). */
export function principalRecordOf(value: unknown): PrincipalRecord | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const r = value as Record<string, unknown>;
  if (r['kind'] === 'key' && typeof r['key_id'] === 'string') return r as PrincipalRecord;
  if (r['kind'] === 'oidc' && typeof r['iss'] === 'string' && typeof r['sub'] === 'string') {
    return r as PrincipalRecord;
  }
  return undefined;
}

function host(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/**
 * One line: `key_01J…`, or `alice via app-client (idp.example.org)`, or for a delegated token
 * `agent-7 for alice via app-client (idp.example.org)`.
 */
export function principalLabel(record: PrincipalRecord): string {
  if (record.kind === 'key') return record.key_id;
  const who = record.act === undefined ? record.sub : `${record.act} for ${record.sub}`;
  const client = record.client_id === undefined ? '' : ` via ${record.client_id}`;
  return `${who}${client} (${host(record.iss)})`;
}
