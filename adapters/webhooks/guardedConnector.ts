/**
 * SSRF protection at connection time: an undici connector that vets every new connection with
 * the destination policy, resolves a name once and dials the vetted IP itself, so DNS rebinding
 * between the check and the connection is impossible; and the one webhook `Agent` built on it.
 */
import type { LookupFunction } from 'node:net';
import { isIP, isIPv4 } from 'node:net';
import { Agent, buildConnector } from 'undici';
import {
  defaultResolver,
  type Resolver,
  stripBrackets,
  vetHost,
  type WebhookUrlPolicy,
} from './destinationPolicy.js';

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
        if ('unresolved' in vetted) {
          const { cause } = vetted.unresolved;
          if (cause === undefined) {
            callback(
              new SsrfBlockedError(`Refused to connect to ${host}: resolves to no address.`, host),
              null,
            );
          } else {
            callback(cause instanceof Error ? cause : new Error(String(cause)), null);
          }
          return;
        }
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
