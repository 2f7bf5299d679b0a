/**
 * The options of {@link createGatehouseClient}, checked once when the client is created: a
 * mistake in them is the caller's (`invalid_request`), never an `unavailable` server that a
 * retry loop would wait on forever.
 */
import type { Dispatcher } from 'undici';
import { GatehouseError } from '../../src/index.js';

/** Options for {@link createGatehouseClient}. */
export interface GatehouseClientOptions {
  /**
   * Where the server listens, e.g. `https://gatehouse.internal` (a path prefix is kept; a query or
   * fragment is refused).
   */
  baseUrl: string;
  /** An API key (`gh_…`), sent as `Authorization: Bearer`: printable ASCII, no whitespace. */
  apiKey: string;
  /**
   * The undici dispatcher (an `Agent`, a `Pool`, a `MockAgent` in tests).
   * @default undici's global dispatcher
   */
  dispatcher?: Dispatcher;
  /**
   * Deadline for a whole request, connection to last byte; past it the call fails `unavailable`.
   * A whole number of milliseconds from 1 to {@link MAX_TIMEOUT_MS}.
   * @default 10000
   */
  timeoutMs?: number;
}

/** The longest deadline a Node timer keeps; a longer one would fire after 1 ms. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** The checked options: what every request is built from. */
export interface ClientSettings {
  /** `baseUrl` without trailing slashes; paths are appended to it. */
  base: string;
  /** The server's origin, for error messages (never the key). */
  origin: string;
  authorization: string;
  timeoutMs: number;
}

function invalidOption(option: string, message: string): GatehouseError {
  return new GatehouseError('invalid_request', `${option} ${message}.`, {
    errors: [{ path: option, message }],
  });
}

/**
 * Checks {@link GatehouseClientOptions} (which may come from untyped configuration).
 * @throws {GatehouseError} `invalid_request` naming the option that is wrong
 */
export function resolveClientOptions(options: GatehouseClientOptions): ClientSettings {
  const { baseUrl, apiKey, timeoutMs = 10_000 } = options;
  // URL.parse accepts 'localhost:8787' as a URL with scheme 'localhost:'; only http(s) will do.
  const parsed = typeof baseUrl === 'string' ? URL.parse(baseUrl) : null;
  if (parsed === null || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw invalidOption('baseUrl', `must be an absolute http(s) URL, not '${String(baseUrl)}'`);
  }
  // Paths are appended to baseUrl, so a query or fragment would swallow every one of them.
  if (/[?#]/.test(baseUrl)) {
    throw invalidOption('baseUrl', `must not have a query or fragment ('?…', '#…'), not '${baseUrl}'`);
  }
  // The key is never echoed: it is a secret. Keys are `gh_` + base64url; any visible ASCII passes
  // here so a proxy's own tokens still work, but a stray newline or space from a file or an
  // environment variable does not become a header the transport refuses.
  if (typeof apiKey !== 'string' || !/^[\x21-\x7e]+$/.test(apiKey)) {
    throw invalidOption(
      'apiKey',
      'must be a non-empty string of printable ASCII characters without whitespace (a key looks like gh_…)',
    );
  }
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) {
    throw invalidOption('timeoutMs', `must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  }
  return {
    base: baseUrl.replace(/\/+$/, ''),
    origin: parsed.origin,
    authorization: `Bearer ${apiKey}`,
    timeoutMs,
  };
}
