/**
 * DNS-rebinding protection for `/mcp`: the `Host` and `Origin` of each request are checked
 * against allow-lists before the MCP transport sees it (the MCP transport spec: servers MUST
 * validate `Origin`).
 *
 * Written here rather than taken from the SDK: SDK 1.x ships this check only as Express middleware
 * (`server/middleware/hostHeaderValidation.js`) and as transport options that are deprecated and
 * compare `Host` exactly, port included. This follows the SDK middleware's rules (hostname
 * compared port-agnostically, the same JSON-RPC 403 answer) on a web-standard `Request`, so it
 * works whatever HTTP framework mounts the handler.
 */

import { isIP } from 'node:net';

const WILDCARD_ADDRESSES = new Set(['', '0.0.0.0', '::', '[::]']);

/** Hostnames that always name this machine, as the SDK's `localhostHostValidation` lists them. */
export const LOOPBACK_HOSTNAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** Whether `address` binds every interface (`0.0.0.0`, `::`): no one name is known to be ours. */
export function isWildcardAddress(address: string): boolean {
  return WILDCARD_ADDRESSES.has(address.trim().toLowerCase());
}

/**
 * The `Host` allow-list that fits a bind address: the loopback names, plus the address itself
 * when it is one specific non-loopback address or name (a client that connects to an IP literal
 * was not sent there by a rebinding DNS name). For a wildcard address (`0.0.0.0`, `::`) only the
 * loopback names: the operator lists the names clients use, since any other default would let a
 * rebinding name through.
 * @example
 * defaultAllowedHosts('127.0.0.1'); // ['localhost', '127.0.0.1', '[::1]']
 * defaultAllowedHosts('10.0.0.5');  // ['localhost', '127.0.0.1', '[::1]', '10.0.0.5']
 */
export function defaultAllowedHosts(bindAddress: string): readonly string[] {
  const address = bindAddress
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (
    isWildcardAddress(address) ||
    address === 'localhost' ||
    address === '::1' ||
    address.startsWith('127.')
  ) {
    return LOOPBACK_HOSTNAMES;
  }
  return [...LOOPBACK_HOSTNAMES, isIP(address) === 6 ? `[${address}]` : address];
}

/** Options for {@link createHostOriginCheck}. */
export interface HostOriginCheckOptions {
  /**
   * Values the `Host` header may take: `name` (any port) or `name:port` (that port only); IPv6
   * in brackets (`[::1]`). `*` turns the Host check off (only behind a proxy that checks it).
   * @default {@link LOOPBACK_HOSTNAMES}
   */
  allowedHosts?: readonly string[];
  /**
   * Values the `Origin` header may take, as `scheme://host[:port]`; `*` allows any. A request
   * without `Origin` (not sent by a browser) is always allowed.
   * @default any http(s) origin whose host passes `allowedHosts`
   */
  allowedOrigins?: readonly string[];
}

/** Returns a 403 `Response` for a request whose Host or Origin is not allowed, else `undefined`. */
export type HostOriginCheck = (request: Request) => Response | undefined;

interface HostEntry {
  hostname: string;
  /** `undefined`: any port. */
  port: string | undefined;
}

/** `name` or `[v6]`, then an optional port: nothing a URL parser could read a path or user out of. */
const HOST_SYNTAX = /^(?:\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::\d{1,5})?$/i;

/** Longest header text echoed back in a refusal. */
const MAX_ECHO = 100;

/**
 * Creates the Host/Origin check. The hostname is compared without its port unless an entry names
 * one: a rebinding attack changes the name the browser uses, never only the port.
 * @throws {TypeError} when an allow-list entry is not a valid host or origin
 * @example
 * const check = createHostOriginCheck({ allowedHosts: ['mcp.example.com'] });
 * const refused = check(request); // a 403 Response, or undefined
 */
export function createHostOriginCheck(options: HostOriginCheckOptions = {}): HostOriginCheck {
  const hostList = options.allowedHosts ?? LOOPBACK_HOSTNAMES;
  const anyHost = hostList.includes('*');
  const hosts = anyHost ? [] : hostList.map(parseHostEntry);
  const originList = options.allowedOrigins;
  const anyOrigin = originList?.includes('*') ?? false;
  const origins = new Set(anyOrigin || !originList ? [] : originList.map(parseOriginEntry));

  const hostAllowed = (host: URL): boolean =>
    anyHost ||
    hosts.some(
      (h) => h.hostname === host.hostname && (h.port === undefined || h.port === effectivePort(host)),
    );

  return (request) => {
    // HTTP/1.1 requires Host; a web Request built from a Node request carries it in the URL too.
    const hostHeader = request.headers.get('host') ?? safeUrl(request.url)?.host ?? '';
    if (!anyHost) {
      if (hostHeader === '') return refuse('Missing Host header');
      const host = HOST_SYNTAX.test(hostHeader) ? safeUrl(`http://${hostHeader}`) : undefined;
      if (!host) return refuse(`Invalid Host header: ${hostHeader}`);
      if (!hostAllowed(host)) return refuse(`Invalid Host: ${host.hostname}`);
    }
    const originHeader = request.headers.get('origin');
    if (originHeader === null || anyOrigin) return undefined;
    const origin = safeUrl(originHeader);
    if (!origin || (origin.protocol !== 'http:' && origin.protocol !== 'https:')) {
      return refuse(`Invalid Origin header: ${originHeader}`);
    }
    const allowed = originList ? origins.has(origin.origin) : hostAllowed(origin);
    return allowed ? undefined : refuse(`Invalid Origin: ${origin.origin}`);
  };
}

/** The port a URL connects to, written out even when it is the scheme's default. */
function effectivePort(url: URL): string {
  if (url.port !== '') return url.port;
  return url.protocol === 'https:' ? '443' : '80';
}

function parseHostEntry(entry: string): HostEntry {
  const text = entry.trim();
  const url = HOST_SYNTAX.test(text) ? safeUrl(`http://${text}`) : undefined;
  if (!url) throw new TypeError(`Not a host name or host:port (IPv6 in brackets): '${entry}'.`);
  // `new URL` drops a port equal to the scheme's default; keep what the entry said.
  const port = /:(\d+)$/.exec(text)?.[1];
  return { hostname: url.hostname, port: port === undefined ? undefined : String(Number(port)) };
}

function parseOriginEntry(entry: string): string {
  const url = safeUrl(entry.trim());
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.host === '') {
    throw new TypeError(`Not an origin (scheme://host[:port]): '${entry}'.`);
  }
  return url.origin;
}

function safeUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** The SDK middleware's answer: 403 with a JSON-RPC error, so MCP clients show the message. */
function refuse(message: string): Response {
  const shown = message.length > MAX_ECHO ? `${message.slice(0, MAX_ECHO)}…` : message;
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: shown }, id: null }), {
    status: 403,
    headers: { 'content-type': 'application/json' },
  });
}
