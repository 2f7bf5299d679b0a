/**
 * Turns what the wire returns into the core's one error type: a problem+json body keeps its
 * `code`, `detail` and `errors`; anything else (a proxy's HTML page, a dropped socket, a
 * timeout) gets the nearest code, so callers switch on `error.code` whichever face they use.
 */
import {
  ERROR_CODES,
  type ErrorCode,
  type FieldError,
  GatehouseError,
  parseRetryAfter,
} from '../../src/index.js';

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/** The nearest code for a status when the body is not a Gatehouse problem (e.g. from a proxy). */
export function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'malformed_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 409:
      return 'version_conflict';
    case 413:
      return 'payload_too_large';
    case 415:
      return 'unsupported_media_type';
    case 422:
      return 'invalid_request';
    case 429:
      return 'rate_limited';
    case 502:
    case 503:
    case 504:
      return 'unavailable';
    default:
      return status >= 500 ? 'internal' : 'invalid_request';
  }
}

function fieldErrors(value: unknown): FieldError[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry: unknown) => {
    if (typeof entry !== 'object' || entry === null) return [];
    const { path, message } = entry as Record<string, unknown>;
    return typeof path === 'string' && typeof message === 'string' ? [{ path, message }] : [];
  });
}

/**
 * The {@link GatehouseError} for a non-2xx response. The server's `detail` becomes the message;
 * a body that is not a Gatehouse problem is never echoed (it may be a proxy page of any size).
 * `Retry-After` (seconds or an HTTP-date) becomes `retryAfter`, in seconds from `now`.
 */
export function errorFromResponse(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  bodyText: string,
  now: Date = new Date(),
): GatehouseError {
  let problem: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(bodyText);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      problem = parsed as Record<string, unknown>;
    }
  } catch {
    problem = undefined;
  }
  const code =
    typeof problem?.['code'] === 'string' && KNOWN_CODES.has(problem['code'])
      ? (problem['code'] as ErrorCode)
      : codeForStatus(status);
  const detail =
    typeof problem?.['detail'] === 'string' && problem['detail'] !== ''
      ? problem['detail']
      : `The Gatehouse server answered HTTP ${status}.`;
  const header = headers['retry-after'];
  const retryAfter = parseRetryAfter(Array.isArray(header) ? header[0] : header, now);
  return new GatehouseError(code, detail, {
    errors: fieldErrors(problem?.['errors']),
    ...(retryAfter === undefined ? {} : { retryAfter }),
  });
}

/** The {@link GatehouseError} for a request that got no answer (refused, reset, timed out). */
export function unavailableError(origin: string, thrown: unknown, timeoutMs: number): GatehouseError {
  const name = thrown instanceof Error ? thrown.name : '';
  const code = (thrown as { code?: unknown } | null)?.code;
  const timedOut =
    name === 'TimeoutError' ||
    name === 'AbortError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT';
  const why = timedOut
    ? `no answer within ${timeoutMs} ms`
    : typeof code === 'string'
      ? code
      : 'the connection failed';
  return new GatehouseError('unavailable', `The Gatehouse server at ${origin} is unavailable: ${why}.`, {
    cause: thrown,
  });
}
