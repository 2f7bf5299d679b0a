/**
 * Which IP addresses a webhook must never reach: the blocked ranges, each with the reason a
 * refusal names, and the parsing of IP literals in every notation (via `ipaddr.js`).
 */
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Rule<A extends Address> = readonly [reason: string, ranges: ReadonlyArray<[A, number]>];

function v4(reason: string, ...cidrs: string[]): Rule<ipaddr.IPv4> {
  return [reason, cidrs.map((c) => ipaddr.IPv4.parseCIDR(c.includes('/') ? c : `${c}/32`))];
}

function v6(reason: string, ...cidrs: string[]): Rule<ipaddr.IPv6> {
  return [reason, cidrs.map((c) => ipaddr.IPv6.parseCIDR(c.includes('/') ? c : `${c}/128`))];
}

// Checked in order, so the most specific reason is reported (metadata before link-local).
const IPV4_RULES: ReadonlyArray<Rule<ipaddr.IPv4>> = [
  // AWS/GCP/Azure/OpenStack metadata, ECS task metadata, Azure WireServer, Alibaba, Oracle.
  v4('cloud metadata', '169.254.169.254', '169.254.170.2', '168.63.129.16', '100.100.100.200', '192.0.0.192'),
  v4('loopback', '127.0.0.0/8'),
  v4('unspecified ("this network")', '0.0.0.0/8'),
  v4('private', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'),
  v4('link-local', '169.254.0.0/16'),
  v4('shared address space (CGNAT)', '100.64.0.0/10'),
  v4('IETF protocol assignment', '192.0.0.0/24'),
  v4('documentation', '192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24'),
  v4('benchmarking', '198.18.0.0/15'),
  v4('6to4 relay anycast', '192.88.99.0/24'),
  v4('multicast', '224.0.0.0/4'),
  v4('broadcast', '255.255.255.255'),
  v4('reserved', '240.0.0.0/4'),
];

const IPV6_RULES: ReadonlyArray<Rule<ipaddr.IPv6>> = [
  v6('cloud metadata', 'fd00:ec2::254'),
  v6('loopback', '::1'),
  v6('unspecified', '::'),
  v6('IPv4-compatible (deprecated)', '::/96'),
  v6('IPv4-translated', '::ffff:0:0:0/96'),
  v6('local-use NAT64', '64:ff9b:1::/48'),
  v6('discard-only', '100::/64'),
  v6('documentation', '2001:db8::/32', '3fff::/20'),
  // Teredo, benchmarking, ORCHID and other IETF assignments: never a webhook endpoint.
  v6('IETF protocol assignment', '2001::/23'),
  // 6to4 is deprecated (RFC 7526) and a host with a 6to4 interface routes 2002:<own v4>:: locally.
  v6('6to4', '2002::/16'),
  v6('private (unique local)', 'fc00::/7'),
  v6('link-local', 'fe80::/10'),
  v6('site-local (deprecated)', 'fec0::/10'),
  v6('multicast', 'ff00::/8'),
];
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

function firstMatch<A extends Address>(address: A, rules: ReadonlyArray<Rule<A>>): string | undefined {
  return rules.find(([, ranges]) => ranges.some((range) => address.match(range)))?.[0];
}

/**
 * Parses an IP literal in any notation the WHATWG URL parser (and `inet_aton`) accepts: `127.1`,
 * `0177.0.0.1`, `0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`. `undefined` for anything else: a
 * name, a CIDR, a zone-scoped address (`fe80::1%eth0`), a malformed literal.
 */
export function parseIpLiteral(input: string): Address | undefined {
  const bare = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  if (!ipaddr.isValid(bare)) return undefined;
  const parsed = ipaddr.parse(bare);
  if (parsed instanceof ipaddr.IPv4) return parsed;
  if (parsed.zoneId !== undefined) return undefined;
  if (!bare.includes('.')) return parsed;
  // ipaddr.js 2.5 reads `::a.b.c.d` (IPv4-compatible) as `::ffff:a.b.c.d` (IPv4-mapped). The URL
  // parser, which gives undici its host, keeps them apart and writes no dotted quad back.
  try {
    return ipaddr.IPv6.parse(new URL(`http://[${bare}]/`).hostname.slice(1, -1));
  } catch {
    return undefined;
  }
}

/**
 * Why `ip` must not be connected to, or `undefined` when it is a public unicast address.
 * Anything that is not an IP literal (see {@link parseIpLiteral}) is refused.
 */
export function blockedReason(ip: string): string | undefined {
  const address = parseIpLiteral(ip);
  if (address === undefined) return 'not a plain IP address';
  if (address instanceof ipaddr.IPv4) return firstMatch(address, IPV4_RULES);
  // ::ffff:a.b.c.d is the IPv4 address itself on a dual-stack socket.
  if (address.isIPv4MappedAddress()) return firstMatch(address.toIPv4Address(), IPV4_RULES);
  // 64:ff9b::/96 (NAT64) reaches the embedded IPv4 address through the translator.
  if (address.match(NAT64)) {
    const embedded = ipaddr.fromByteArray(address.toByteArray().slice(12)) as ipaddr.IPv4;
    const inner = firstMatch(embedded, IPV4_RULES);
    return inner === undefined ? undefined : `NAT64 of a ${inner} address`;
  }
  return (
    firstMatch(address, IPV6_RULES) ??
    (address.match(GLOBAL_UNICAST) ? undefined : 'outside global unicast (2000::/3)')
  );
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
