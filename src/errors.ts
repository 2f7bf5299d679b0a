/**
 * The one error type of Gatehouse. Every failure a caller can cause or observe is a
 * `GatehouseError` with a stable string `code`; each face maps the code to its own surface
 * (HTTP status in `adapters/http`, `isError` results in MCP, thrown errors in-process).
 */

/** Every error code Gatehouse produces. The README's error table lists each one. */
export const ERROR_CODES = [
  'invalid_request',
  'malformed_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'version_conflict',
  'already_recorded',
  'response_erased',
  'precondition_failed',
  'precondition_required',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'unavailable',
  'internal',
] as const;

/** A stable, documented error code. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** One field-level problem: `path` is a dotted path into the input (`params.amount`). */
export interface FieldError {
  path: string;
  message: string;
}

/** Options for {@link GatehouseError}. */
export interface GatehouseErrorOptions {
  /** Field-level problems, for validation failures. */
  errors?: FieldError[];
  /** The underlying error; never shown to callers. */
  cause?: unknown;
  /** Seconds after which a retry may succeed (rate limits). */
  retryAfter?: number;
  /**
   * For `forbidden`: the one scope the caller lacks, so a token holder can ask its issuer for it
   * (`WWW-Authenticate: Bearer error="insufficient_scope"`).
   */
  requiredScope?: string;
  /**
   * For `forbidden` with `requiredScope`, when the caller holds an IdP token: its issuer, so the
   * challenge names a scope value of that issuer's mapping, not another's.
   */
  tokenIssuer?: string | undefined;
  /** For `unauthorized` from a bearer token: `invalid_token` (RFC 6750), set when a token was sent. */
  tokenError?: 'invalid_token';
}

/**
 * The error every Gatehouse operation throws.
 * @example
 * throw new GatehouseError('not_found', 'No conflict cfl_123 in this tenant.');
 */
export class GatehouseError extends Error {
  readonly code: ErrorCode;
  readonly errors: FieldError[];
  readonly retryAfter: number | undefined;
  readonly requiredScope: string | undefined;
  readonly tokenIssuer: string | undefined;
  readonly tokenError: 'invalid_token' | undefined;

  constructor(code: ErrorCode, message: string, options: GatehouseErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatehouseError';
    this.code = code;
    this.errors = options.errors ?? [];
    this.retryAfter = options.retryAfter;
    this.requiredScope = options.requiredScope;
    this.tokenIssuer = options.tokenIssuer;
    this.tokenError = options.tokenError;
  }
}

/** True when `value` is a {@link GatehouseError}. */
export function isGatehouseError(value: unknown): value is GatehouseError {
  return value instanceof GatehouseError;
}

/**
 * Turns anything thrown into a {@link GatehouseError}. Unknown errors become `internal` with a
 * generic message: their text may hold secrets or internals and is kept only as `cause`.
 */
export function toGatehouseError(thrown: unknown): GatehouseError {
  if (thrown instanceof GatehouseError) return thrown;
  return new GatehouseError('internal', 'An internal error occurred.', { cause: thrown });
}
