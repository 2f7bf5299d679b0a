/**
 * The registration check of a webhook URL: refuse what is knowably unsafe, accept a name that
 * does not resolve now with a warning (delivery resolves, vets and pins it on every connection).
 */
import { GatehouseError, type WebhookWarning } from '../../src/index.js';
import {
  defaultResolver,
  type Resolver,
  stripBrackets,
  vetHost,
  type WebhookUrlPolicy,
} from './destinationPolicy.js';

/** Options for {@link assertWebhookUrlAllowed}. */
export interface AssertWebhookUrlOptions {
  policy: WebhookUrlPolicy;
  /** @default `dns.promises.lookup(host, { all: true })` */
  resolve?: Resolver;
  /**
   * How long registration waits for the resolver before it treats the name as not resolving now
   * (the system resolver has no timeout of its own worth waiting for). @default 5000
   */
  resolveTimeoutMs?: number;
}

/** What {@link assertWebhookUrlAllowed} found: the parsed URL and what the caller should know. */
export interface WebhookUrlCheckResult {
  url: URL;
  /** `url_not_resolved` when the host did not resolve now; empty otherwise. */
  warnings: WebhookWarning[];
}

/**
 * Checks a webhook URL at registration. Refused (what is knowably unsafe): a URL that is not
 * absolute `https:` (plain `http:` only to loopback, and only with
 * `policy.allowInsecureLoopback`), a user name or password, an IP literal in a blocked range
 * (every notation, IPv4-mapped IPv6 included), a name that resolves to any blocked address.
 * Accepted with a `url_not_resolved` warning: an `https:` name that does not resolve now
 * (NXDOMAIN, SERVFAIL, no answer within `resolveTimeoutMs`, no address), since DNS may be
 * transiently down or not yet set up; the dispatcher resolves and vets the name again on every
 * connection ({@link createGuardedConnector}) and retries failed attempts.
 * @throws GatehouseError `invalid_request` with `errors: [{ path: 'url', message }]` naming the
 *   rule that failed.
 * @example
 * const { warnings } = await assertWebhookUrlAllowed('https://hooks.example.com/gatehouse', {
 *   policy: { allowInsecureLoopback: false } });
 */
export async function assertWebhookUrlAllowed(
  url: string,
  options: AssertWebhookUrlOptions,
): Promise<WebhookUrlCheckResult> {
  const { policy, resolve = defaultResolver, resolveTimeoutMs = 5_000 } = options;
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
  if (parsed.port === '0') invalidUrl('Webhook URL port 0 cannot be connected to.');
  const vetted = await vetHost(host, parsed.protocol, policy, withTimeout(resolve, resolveTimeoutMs));
  if ('refusal' in vetted) invalidUrl(`Webhook URL host ${host} ${vetted.refusal.detail}.`);
  if ('unresolved' in vetted) {
    const why = unresolvedReason(vetted.unresolved.cause);
    if (parsed.protocol === 'http:') {
      invalidUrl(
        `Webhook URL host ${host} could not be resolved (${why}) to show it is loopback; plain http:// is allowed only to loopback.`,
        vetted.unresolved.cause,
      );
    }
    const message = `Webhook URL host ${host} could not be resolved now (${why}). The webhook is registered: every delivery resolves the name again, refuses blocked addresses and retries on failure.`;
    return { url: parsed, warnings: [{ code: 'url_not_resolved', message }] };
  }
  return { url: parsed, warnings: [] };
}

/** A resolver that gives up after `ms`, so a silent DNS server cannot hold a registration. */
function withTimeout(resolve: Resolver, ms: number): Resolver {
  return (hostname) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEOUT' })),
        ms,
      );
    });
    return Promise.race([resolve(hostname), timeout]).finally(() => clearTimeout(timer));
  };
}

/** The resolver's error code (`ENOTFOUND`, `EAI_AGAIN`, …), never its full message. */
function unresolvedReason(cause: unknown): string {
  if (cause === undefined) return 'no address';
  const { code, message } = cause as { code?: unknown; message?: unknown };
  if (code === 'ETIMEOUT' && typeof message === 'string') return message;
  return typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? code : 'resolver error';
}

function invalidUrl(message: string, cause?: unknown): never {
  throw new GatehouseError('invalid_request', message, { errors: [{ path: 'url', message }], cause });
}
