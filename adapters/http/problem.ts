/**
 * RFC 9457 problem details: the one table from error code to HTTP status, the one function that
 * turns anything thrown into an `application/problem+json` answer, and the `/problems/<code>`
 * pages that the answers' `type` URIs name (the service's own, so every link resolves).
 */
import { z } from 'zod';
import { ERROR_CODES, type ErrorCode, type GatehouseError, toGatehouseError } from '../../src/index.js';

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
  response_erased: 409,
  precondition_failed: 412,
  precondition_required: 428,
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
  response_erased: 'Kept response erased',
  precondition_failed: 'Precondition failed',
  precondition_required: 'Precondition required',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limited: 'Too many requests',
  unavailable: 'Service unavailable',
  internal: 'Internal error',
};

/** What each code means, for its `/problems/<code>` page and the OpenAPI document. */
export const PROBLEM_DESCRIPTIONS: Readonly<Record<ErrorCode, string>> = {
  invalid_request: 'The input breaks a rule; `errors` names each field and what is wrong with it.',
  malformed_request: 'The request body is not valid JSON, or not UTF-8.',
  unauthorized:
    'The Authorization header is missing or malformed, or the API key is unknown or revoked. Send `Authorization: Bearer <key>`.',
  forbidden: 'The API key lacks the scope this operation needs, or claims a source beyond its trust.',
  not_found: 'No such object in this tenant, or no such route.',
  method_not_allowed: 'The route exists but not with this method; the `Allow` header lists the right ones.',
  version_conflict:
    '`expected_version` did not match the current version, or the conflict is already resolved.',
  already_recorded: 'The decision already has an outcome; an outcome is recorded once.',
  response_erased:
    'The response kept for this `Idempotency-Key` held data of a session that was erased after it was kept, so it is not replayed (and is deleted). Read the session again before deciding to resend the request, with a new key.',
  precondition_failed:
    '`If-Match` names a policy revision that is no longer the active one: read `GET /v1/policy` again and retry.',
  precondition_required:
    'This change needs `If-Match` with the revision it replaces (the `ETag` of `GET /v1/policy`).',
  payload_too_large: 'The request body is over the size limit (64 KiB by default).',
  unsupported_media_type: 'The request body is not JSON: send `Content-Type: application/json`.',
  rate_limited: 'Over the per-key rate limit; retry after the seconds in `Retry-After`.',
  unavailable: 'The database (or, for the client, the service) is unreachable; retry later.',
  internal: 'An unexpected failure. It is logged on the server; the response never carries its details.',
};

/**
 * The `type` URI of a code: the service's own `/problems/<code>` page. Relative by default, so it
 * resolves against the URL the response came from (RFC 9457 §3.1.1) without trusting a Host
 * header; `baseUrl` (e.g. `https://gatehouse.example.org`) makes it absolute.
 */
export function problemType(code: ErrorCode, baseUrl = ''): string {
  return `${baseUrl.replace(/\/+$/, '')}/problems/${code}`;
}

/** The problem+json body, as a zod schema (for the OpenAPI document). */
export const ProblemSchema = z.object({
  type: z.string().describe('A URI reference to the page describing the code: `/problems/<code>`.'),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  code: z.enum(ERROR_CODES).describe('Stable; switch on this.'),
  instance: z.string().optional().describe('The request path.'),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});

/** The problem+json body Gatehouse returns. */
export type ProblemBody = z.infer<typeof ProblemSchema>;

/** Options of {@link problemBody}. */
export interface ProblemOptions {
  /** The request path, as `instance`. */
  instance?: string;
  /** Makes `type` absolute. @default '' (relative: `/problems/<code>`) */
  typeBaseUrl?: string;
}

/** Builds the problem body for an error (unknown errors become a generic `internal`). */
export function problemBody(thrown: unknown, options: ProblemOptions | string = {}): ProblemBody {
  const { instance, typeBaseUrl } =
    typeof options === 'string' ? { instance: options, typeBaseUrl: '' } : options;
  const error: GatehouseError = toGatehouseError(thrown);
  const status = STATUS_BY_CODE[error.code];
  return {
    type: problemType(error.code, typeBaseUrl),
    title: TITLES[error.code],
    status,
    detail: error.message,
    code: error.code,
    ...(instance === undefined ? {} : { instance }),
    ...(error.errors.length > 0 ? { errors: error.errors } : {}),
  };
}

/** A plain HTTP answer: what both faces (web `Response`, node:http) write out. */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string | null;
}

/**
 * The status of an answer to a client that went away while its operation ran (as nginx counts a
 * closed request): never sent, recorded in metrics, never kept for an `Idempotency-Key` retry.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * A problem+json answer, with `WWW-Authenticate` on 401, `Retry-After` on 429, and
 * `Connection: close` on 413: the rest of an oversized body is not read, so the connection
 * cannot carry another request.
 */
export function problemReply(
  thrown: unknown,
  options: ProblemOptions = {},
  headers: Record<string, string> = {},
): Reply {
  const error = toGatehouseError(thrown);
  const body = problemBody(error, options);
  const extra: Record<string, string> = { 'content-type': 'application/problem+json', ...headers };
  if (error.code === 'unauthorized') extra['www-authenticate'] ??= 'Bearer realm="gatehouse"';
  if (error.retryAfter !== undefined) extra['retry-after'] = String(Math.max(1, Math.ceil(error.retryAfter)));
  if (error.code === 'payload_too_large') extra['connection'] = 'close';
  return { status: body.status, headers: extra, body: JSON.stringify(body) };
}

/** {@link problemReply} as a web `Response`. */
export function problemResponse(
  thrown: unknown,
  instance?: string,
  headers: Record<string, string> = {},
): Response {
  const reply = problemReply(thrown, instance === undefined ? {} : { instance }, headers);
  return new Response(reply.body, { status: reply.status, headers: reply.headers });
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`).replace(/`([^`]+)`/g, '<code>$1</code>');

/** The small HTML page a problem `type` URI resolves to; undefined for an unknown code. */
export function problemPage(code: string): string | undefined {
  if (!(ERROR_CODES as readonly string[]).includes(code)) return undefined;
  const known = code as ErrorCode;
  const title = `${TITLES[known]} (${known}, HTTP ${STATUS_BY_CODE[known]})`;
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${escapeHtml(title)}</title></head><body>`,
    `<h1>${escapeHtml(title)}</h1>`,
    `<p>${escapeHtml(PROBLEM_DESCRIPTIONS[known])}</p>`,
    `<p>Gatehouse answers this problem with status ${STATUS_BY_CODE[known]} and <code>"code": "${known}"</code>` +
      ' in an <code>application/problem+json</code> body (RFC 9457).</p>',
    '</body></html>',
    '',
  ].join('\n');
}
