/**
 * Parses untrusted input once, at the edge, into the one error type with per-field messages.
 */
import type { z } from 'zod';
import { GatehouseError } from './errors.js';

/**
 * Parses `input` with `schema`; on failure throws `invalid_request` listing every problem.
 * @throws {GatehouseError} `invalid_request`
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, what = 'request'): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '(root)',
    message: describeIssue(issue),
  }));
  const first = errors[0];
  const summary = first ? `${first.path}: ${first.message}` : 'invalid input';
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  throw new GatehouseError('invalid_request', `Invalid ${what}: ${summary}${more}.`, { errors });
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s): ${issue.keys.join(', ')}`;
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'is required';
  return issue.message;
}

/**
 * The `invalid_request` error for a value outside the policy's list for `field` (a type, a
 * source): the message names every allowed value.
 */
export function notOneOf(field: string, value: string, allowed: readonly string[]): GatehouseError {
  const list = allowed.join(', ');
  return new GatehouseError('invalid_request', `Unknown ${field} '${value}'; allowed: ${list}.`, {
    errors: [{ path: field, message: `must be one of ${list}` }],
  });
}
