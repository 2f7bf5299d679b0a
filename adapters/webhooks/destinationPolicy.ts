/**
 * The one rule for where a webhook may be sent, shared by the registration check
 * (webhookUrlCheck.ts) and the connection-time guard (guardedConnector.ts): https only (plain
 * http to loopback under the development setting), and no blocked address.
 */
import { lookup } from 'node:dns/promises';
import { blockedReason, parseIpLiteral } from './blockedAddresses.js';

/** Where webhooks may be sent. */
export interface WebhookUrlPolicy {
  /**
   * Development only: allow loopback addresses (and plain `http:` to them). Every other blocked
   * range stays blocked. Off in production.
   */
  allowInsecureLoopback: boolean;
}

/** Resolves a host name to all its addresses, like `dns.promises.lookup(host, { all: true })`. */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

/** The system resolver, every address in the order it gives them. */
export const defaultResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Why a host is refused, phrased to follow the host name. */
export interface Refusal {
  detail: string;
  address?: string;
}

/**
 * What is known about a destination: the addresses that may be dialled, why it is refused, or
 * that its name does not resolve now (`cause` is the resolver's error; none for an empty answer).
 */
export type Vetting = { addresses: string[] } | { refusal: Refusal } | { unresolved: { cause?: unknown } };

/** Strips the brackets of an IPv6 host as URLs write it. */
export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Vets `host` (no brackets) for `protocol` under `policy`, resolving a name at most once. */
export async function vetHost(
  host: string,
  protocol: string,
  policy: WebhookUrlPolicy,
  resolve: Resolver,
): Promise<Vetting> {
  const insecure = protocol === 'http:';
  if (insecure && !policy.allowInsecureLoopback) {
    return { refusal: { detail: 'plain http:// is not allowed, use https://' } };
  }
  const literal = parseIpLiteral(host);
  let addresses: string[];
  if (literal !== undefined) {
    addresses = [literal.toString()];
  } else {
    try {
      addresses = (await resolve(host)).map((entry) => entry.address);
    } catch (cause) {
      return { unresolved: { cause } };
    }
    if (addresses.length === 0) return { unresolved: {} };
  }
  for (const address of addresses) {
    const reason = blockedReason(address);
    if (reason === 'loopback' && policy.allowInsecureLoopback) continue;
    if (reason !== undefined) {
      const detail =
        literal !== undefined
          ? `is a blocked address (${reason})`
          : `resolves to blocked address ${address} (${reason})`;
      return { refusal: { detail, address } };
    }
    if (insecure) {
      const is = literal !== undefined ? 'is' : `resolves to ${address}, which is`;
      return {
        refusal: { detail: `${is} not loopback; plain http:// is allowed only to loopback`, address },
      };
    }
  }
  return { addresses };
}
