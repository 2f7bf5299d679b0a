/**
 * RFC 9457 problem details: the one table from error code to HTTP status, and the one function
 * that turns anything thrown into a `application/problem+json` response.
 */
import { type ErrorCode, type GatehouseError, toGatehouseError } from '../../src/index.js';

/** HTTP status for every error code. Pinned by a table-driven test and listed in the README. */
export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = {
  invalid_request: 422,
  malformed_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  version_conflict: 409,
  already_recorded: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
};

const TITLES: Readonly<Record<ErrorCode, string>> = {
  invalid_request: 'Invalid request',
  malformed_request: 'Malformed request',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  version_conflict: 'Version conflict',
  already_recorded: 'Already recorded',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limited: 'Too many requests',
  unavailable: 'Service unavailable',
  internal: 'Internal error',
};

/** The problem+json body Gatehouse returns. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  instance?: string;
  errors?: Array<{ path: string; message: string }>;
}

/** Builds the problem body for an error (unknown errors become a generic `internal`). */
export function problemBody(thrown: unknown, instance?: string): ProblemBody {
  const error: GatehouseError = toGatehouseError(thrown);
  const status = STATUS_BY_CODE[error.code];
  return {
    type: `https://gatehouse.dev/problems/${error.code}`,
    title: TITLES[error.code],
    status,
    detail: error.message,
    code: error.code,
    ...(instance === undefined ? {} : { instance }),
    ...(error.errors.length > 0 ? { errors: error.errors } : {}),
  };
}

/** A problem+json Response, with `WWW-Authenticate` on 401 and `Retry-After` on 429. */
export function problemResponse(
  thrown: unknown,
  instance?: string,
  headers: Record<string, string> = {},
): Response {
  const error = toGatehouseError(thrown);
  const body = problemBody(error, instance);
  const extra: Record<string, string> = { ...headers };
  if (error.code === 'unauthorized') extra['www-authenticate'] = 'Bearer realm="gatehouse"';
  if (error.retryAfter !== undefined) extra['retry-after'] = String(Math.max(1, Math.ceil(error.retryAfter)));
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { 'content-type': 'application/problem+json', ...extra },
  });
}
