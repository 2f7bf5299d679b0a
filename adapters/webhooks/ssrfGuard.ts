/**
 * SSRF protection for webhook deliveries. A webhook URL is checked when it is registered and again
 * on every connection: the connector resolves the name once, refuses if any address is in a
 * blocked range, and connects to the vetted IP itself, so DNS rebinding between the check and
 * the connection is impossible.
 */
import { lookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { BlockList, isIP, isIPv4 } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { GatehouseError } from '../../src/index.js';

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

/** The `code` of the error a guarded connection is refused with. */
export const SSRF_BLOCKED_CODE = 'GATEHOUSE_SSRF_BLOCKED';

/**
 * The error a guarded connector refuses a connection with: the destination is (or resolves to)
 * a blocked address, or plain HTTP was used where it is not allowed.
 */
export class SsrfBlockedError extends Error {
  /** Always {@link SSRF_BLOCKED_CODE}, so it can be told apart from network errors. */
  readonly code = SSRF_BLOCKED_CODE;
  /** The host as given in the URL. */
  readonly host: string;
  /** The blocked address, when one was the reason. */
  readonly address: string | undefined;

  constructor(message: string, host: string, address?: string) {
    super(message);
    this.name = 'SsrfBlockedError';
    this.host = host;
    this.address = address;
  }
}

// ---------------------------------------------------------------------------------------------
// Address classification

type Family = 'ipv4' | 'ipv6';

function ranges(family: Family, ...cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net = '', prefix] = cidr.split('/');
    if (prefix === undefined) list.addAddress(net, family);
    else list.addSubnet(net, Number(prefix), family);
  }
  return list;
}

// Checked in order, so the most specific reason is reported (metadata before link-local).
const IPV4_RULES: ReadonlyArray<readonly [string, BlockList]> = [
  // AWS/GCP/Azure/OpenStack metadata, ECS task metadata, Azure WireServer, Alibaba, Oracle.
  [
    'cloud metadata',
    ranges('ipv4', '169.254.169.254', '169.254.170.2', '168.63.129.16', '100.100.100.200', '192.0.0.192'),
  ],
  ['loopback', ranges('ipv4', '127.0.0.0/8')],
  ['unspecified ("this network")', ranges('ipv4', '0.0.0.0/8')],
  ['private', ranges('ipv4', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16')],
  ['link-local', ranges('ipv4', '169.254.0.0/16')],
  ['shared address space (CGNAT)', ranges('ipv4', '100.64.0.0/10')],
  ['IETF protocol assignment', ranges('ipv4', '192.0.0.0/24')],
  ['documentation', ranges('ipv4', '192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24')],
  ['benchmarking', ranges('ipv4', '198.18.0.0/15')],
  ['6to4 relay anycast', ranges('ipv4', '192.88.99.0/24')],
  ['multicast', ranges('ipv4', '224.0.0.0/4')],
  ['broadcast', ranges('ipv4', '255.255.255.255')],
  ['reserved', ranges('ipv4', '240.0.0.0/4')],
];

const IPV6_RULES: ReadonlyArray<readonly [string, BlockList]> = [
  ['cloud metadata', ranges('ipv6', 'fd00:ec2::254')],
  ['loopback', ranges('ipv6', '::1')],
  ['unspecified', ranges('ipv6', '::')],
  ['IPv4-compatible (deprecated)', ranges('ipv6', '::/96')],
  ['IPv4-translated', ranges('ipv6', '::ffff:0:0:0/96')],
  ['local-use NAT64', ranges('ipv6', '64:ff9b:1::/48')],
  ['discard-only', ranges('ipv6', '100::/64')],
  ['documentation', ranges('ipv6', '2001:db8::/32', '3fff::/20')],
  // Teredo, benchmarking, ORCHID and other IETF assignments: never a webhook endpoint.
  ['IETF protocol assignment', ranges('ipv6', '2001::/23')],
  // 6to4 is deprecated (RFC 7526) and a host with a 6to4 interface routes 2002:<own v4>:: locally.
  ['6to4', ranges('ipv6', '2002::/16')],
  ['private (unique local)', ranges('ipv6', 'fc00::/7')],
  ['link-local', ranges('ipv6', 'fe80::/10')],
  ['site-local (deprecated)', ranges('ipv6', 'fec0::/10')],
  ['multicast', ranges('ipv6', 'ff00::/8')],
];
const IPV6_GLOBAL_UNICAST = ranges('ipv6', '2000::/3');

/** Only characters that can occur in an IP literal in any notation (no names, paths, zones). */
const IP_LITERAL_CHARS = /^[0-9a-fA-FxX.:]+$/;

/**
 * Normalises an IP literal in any notation the WHATWG URL parser (and `inet_aton`) accepts:
 * `127.1`, `0177.0.0.1`, `0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`. IPv6 comes back in its
 * canonical compressed form without brackets. `undefined` for anything that is not an IP literal.
 */
function normaliseIp(input: string): { ip: string; family: Family } | undefined {
  const bare = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  if (!IP_LITERAL_CHARS.test(bare)) return undefined;
  let host: string;
  try {
    host = new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return undefined;
  }
  if (host.startsWith('[')) return { ip: host.slice(1, -1), family: 'ipv6' };
  return isIPv4(host) ? { ip: host, family: 'ipv4' } : undefined;
}

/** The eight 16-bit groups of a canonical (WHATWG-serialised, no dotted quad) IPv6 address. */
function ipv6Groups(canonical: string): number[] {
  const [head = '', tail] = canonical.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<string>(zeros).fill('0'), ...right].map((g) => Number.parseInt(g, 16));
}

function embeddedIpv4(groups: number[]): string {
  const hi = groups[6] ?? 0;
  const lo = groups[7] ?? 0;
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

function ipv4Reason(ip: string): string | undefined {
  for (const [reason, list] of IPV4_RULES) if (list.check(ip, 'ipv4')) return reason;
  return undefined;
}

/**
 * Why `ip` must not be connected to, or `undefined` when it is a public unicast address.
 * Anything that is not an IP literal (a name, a zone-scoped address such as `fe80::1%eth0`, a
 * malformed literal) is refused.
 */
function blockedReason(ip: string): string | undefined {
  const normal = normaliseIp(ip);
  if (normal === undefined) return 'not a plain IP address';
  if (normal.family === 'ipv4') return ipv4Reason(normal.ip);
  const groups = ipv6Groups(normal.ip);
  const [g0, g1, g2, g3, g4, g5] = groups;
  const zeroPrefix = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  // ::ffff:a.b.c.d is the IPv4 address itself on a dual-stack socket.
  if (zeroPrefix && g5 === 0xffff) return ipv4Reason(embeddedIpv4(groups));
  // 64:ff9b::/96 (NAT64) reaches the embedded IPv4 address through the translator.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    const inner = ipv4Reason(embeddedIpv4(groups));
    return inner === undefined ? undefined : `NAT64 of a ${inner} address`;
  }
  for (const [reason, list] of IPV6_RULES) if (list.check(normal.ip, 'ipv6')) return reason;
  return IPV6_GLOBAL_UNICAST.check(normal.ip, 'ipv6') ? undefined : 'outside global unicast (2000::/3)';
}

/**
 * True when a webhook must never be sent to `ip`: loopback, private, link-local, CGNAT,
 * unspecified, multicast, broadcast, reserved, documentation, benchmarking, cloud metadata
 * (169.254.169.254, fd00:ec2::254, …), IPv4-mapped IPv6 of any of these, NAT64 (64:ff9b::/96) of
 * any of these, 6to4, Teredo and everything outside 2000::/3. Every IPv4 notation is understood
 * (`127.1`, `0177.0.0.1`, `0x7f.1`, `2130706433`); anything that is not an IP literal, including
 * zone-scoped IPv6, counts as blocked.
 * @example
 * isBlockedAddress('10.0.0.1')           // true
 * isBlockedAddress('::ffff:169.254.169.254') // true
 * isBlockedAddress('8.8.8.8')            // false
 */
export function isBlockedAddress(ip: string): boolean {
  return blockedReason(ip) !== undefined;
}

// ---------------------------------------------------------------------------------------------
// Shared vetting

const defaultResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Why a host is refused, phrased to follow the host name. */
interface Refusal {
  detail: string;
  address?: string;
}

/** The vetted addresses of `host`, or why it is refused. Resolves at most once. */
async function vetHost(
  host: string,
  protocol: string,
  policy: WebhookUrlPolicy,
  resolve: Resolver,
): Promise<{ addresses: string[] } | { refusal: Refusal }> {
  const insecure = protocol === 'http:';
  if (insecure && !policy.allowInsecureLoopback) {
    return { refusal: { detail: 'plain http:// is not allowed, use https://' } };
  }
  const literal = normaliseIp(host);
  const addresses =
    literal !== undefined ? [literal.ip] : (await resolve(host)).map((entry) => entry.address);
  if (addresses.length === 0) return { refusal: { detail: 'resolves to no address' } };
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

// ---------------------------------------------------------------------------------------------
// Registration check

/** Options for {@link assertWebhookUrlAllowed}. */
export interface AssertWebhookUrlOptions {
  policy: WebhookUrlPolicy;
  /** @default `dns.promises.lookup(host, { all: true })` */
  resolve?: Resolver;
}

/**
 * Checks a webhook URL at registration: it must be an absolute `https:` URL (plain `http:` only
 * to loopback, and only with `policy.allowInsecureLoopback`), carry no user name or password, and
 * every address its host resolves to must be allowed (loopback only with
 * `allowInsecureLoopback`). The dispatcher checks again on every connection
 * ({@link createGuardedConnector}), since DNS answers change.
 * @returns the parsed URL
 * @throws GatehouseError `invalid_request` with `errors: [{ path: 'url', message }]` naming the
 *   rule that failed.
 * @example
 * await assertWebhookUrlAllowed('https://hooks.example.com/gatehouse', {
 *   policy: { allowInsecureLoopback: false } });
 */
export async function assertWebhookUrlAllowed(url: string, options: AssertWebhookUrlOptions): Promise<URL> {
  const { policy, resolve = defaultResolver } = options;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    invalidUrl('Webhook URL is not a valid absolute URL.');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    invalidUrl(`Webhook URL must use https://, not ${parsed.protocol}//.`);
  }
  if (parsed.protocol === 'http:' && !policy.allowInsecureLoopback) {
    invalidUrl('Webhook URL must use https:// (plain http:// is allowed only to loopback in development).');
  }
  if (parsed.username !== '' || parsed.password !== '') {
    invalidUrl('Webhook URL must not contain a user name or password; authenticate with the signature.');
  }
  const host = stripBrackets(parsed.hostname);
  if (host === '') invalidUrl('Webhook URL has no host.');
  let vetted: Awaited<ReturnType<typeof vetHost>>;
  try {
    vetted = await vetHost(host, parsed.protocol, policy, resolve);
  } catch (cause) {
    invalidUrl(`Webhook URL host ${host} could not be resolved.`, cause);
  }
  if ('refusal' in vetted) invalidUrl(`Webhook URL host ${host} ${vetted.refusal.detail}.`);
  return parsed;
}

function invalidUrl(message: string, cause?: unknown): never {
  throw new GatehouseError('invalid_request', message, { errors: [{ path: 'url', message }], cause });
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

// ---------------------------------------------------------------------------------------------
// Connection-time guard

/** Options for {@link createGuardedConnector}. */
export interface GuardedConnectorOptions {
  policy: WebhookUrlPolicy;
  /** @default `dns.promises.lookup(host, { all: true })` */
  resolve?: Resolver;
  /**
   * Socket connect timeout in ms, per address tried. Name resolution comes first and is bounded
   * by the resolver's own timeouts. @default 10000
   */
  connectTimeoutMs?: number;
  /**
   * Opens the socket to an address that has passed the guard. Tests inject one so that nothing
   * is ever dialled. @default undici's `buildConnector({ timeout: connectTimeoutMs })`
   */
  connect?: buildConnector.connector;
}

/**
 * An undici connector that refuses blocked destinations. For an IP literal it checks the address;
 * for a name it resolves all addresses once, refuses if any is blocked, and connects to the first
 * vetted address (falling back once to the first address of the other IP family), with TLS
 * `servername` set to the original name (so SNI and the certificate check are unchanged and no
 * second lookup can be rebound). Plain `http:` is refused except to
 * loopback under `allowInsecureLoopback`. Refusals reach the request as {@link SsrfBlockedError}
 * (`code: 'GATEHOUSE_SSRF_BLOCKED'`); resolver errors are passed through unchanged.
 * @example
 * const agent = new Agent({ connect: createGuardedConnector({ policy: { allowInsecureLoopback: false } }) });
 */
export function createGuardedConnector(options: GuardedConnectorOptions): buildConnector.connector {
  const { policy, resolve = defaultResolver } = options;
  const open =
    options.connect ??
    buildConnector({
      timeout: options.connectTimeoutMs ?? 10_000,
      // The host is always a vetted IP by now, so Node never looks it up; this makes sure.
      lookup: refuseLookup,
    });
  return (connectOptions, callback) => {
    const host = stripBrackets(connectOptions.hostname);
    vetHost(host, connectOptions.protocol, policy, resolve).then(
      (vetted) => {
        if ('refusal' in vetted) {
          const { detail, address } = vetted.refusal;
          callback(new SsrfBlockedError(`Refused to connect to ${host}: ${detail}.`, host, address), null);
          return;
        }
        const servername =
          connectOptions.protocol === 'https:' && isIP(host) === 0
            ? (connectOptions.servername ?? host)
            : connectOptions.servername;
        const candidates = dialOrder(vetted.addresses);
        const dial = (index: number): void => {
          const pinned: buildConnector.Options = { ...connectOptions, hostname: candidates[index] ?? '' };
          if (servername) pinned.servername = servername;
          else delete pinned.servername;
          open(pinned, (...result) => {
            if (result[0] !== null && index + 1 < candidates.length) dial(index + 1);
            else callback(...result);
          });
        };
        dial(0);
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null),
    );
  };
}

/**
 * The first address, then the first of the other family: a host without IPv6 connectivity still
 * reaches a dual-stack receiver, and a connection never tries more than two addresses.
 */
function dialOrder(addresses: readonly string[]): string[] {
  const [first, ...rest] = addresses;
  if (first === undefined) return [];
  const other = rest.find((a) => isIPv4(a) !== isIPv4(first));
  return other === undefined ? [first] : [first, other];
}

const refuseLookup: LookupFunction = (hostname, _options, callback) => {
  callback(
    new SsrfBlockedError(`Refused to resolve ${hostname}: only vetted addresses are dialled.`, hostname),
    '',
  );
};

/** Options for {@link createWebhookAgent}. */
export interface WebhookAgentOptions extends GuardedConnectorOptions {
  /** Time allowed for the receiver's response headers, in ms. @default 15000 */
  headersTimeoutMs?: number;
  /** Time allowed between body chunks of the response, in ms. @default 15000 */
  bodyTimeoutMs?: number;
}

/**
 * The one long-lived undici `Agent` that delivers webhooks: every connection goes through
 * {@link createGuardedConnector}, keep-alive on, HTTP/1.1 only, hard header and body timeouts,
 * and no redirect handling (`request()` follows none; a 3xx is a failed attempt). Pass it as
 * `dispatcher` to `request`; `close()` it on shutdown.
 * @example
 * const agent = createWebhookAgent({ policy: { allowInsecureLoopback: false } });
 * const res = await request(url, { method: 'POST', body, headers, dispatcher: agent });
 * await res.body.dump();
 */
export function createWebhookAgent(options: WebhookAgentOptions): Agent {
  return new Agent({
    connect: createGuardedConnector(options),
    headersTimeout: options.headersTimeoutMs ?? 15_000,
    bodyTimeout: options.bodyTimeoutMs ?? 15_000,
    keepAliveTimeout: 4_000,
    allowH2: false,
  });
}
