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
    message: describeIssue(issue, input),
  }));
  const first = errors[0];
  const summary = first ? `${first.path}: ${first.message}` : 'invalid input';
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  throw new GatehouseError('invalid_request', `Invalid ${what}: ${summary}${more}.`, { errors });
}

/**
 * One zod issue as a short message: `is required`, `expected string, received number` (zod leaves
 * the offending value out of its issues, so it is looked up in `input`), `unknown field(s): …`.
 */
export function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s): ${issue.keys.join(', ')}`;
  if (issue.code === 'invalid_type') {
    // zod leaves the offending value out of its issues: look it up, to tell absent from mistyped.
    const sent = valueAt(input, issue.path);
    if (sent === undefined) return 'is required';
    // A record is an object to whoever wrote the JSON.
    return `expected ${issue.expected === 'record' ? 'object' : issue.expected}, received ${typeOf(sent.value)}`;
  }
  return issue.message;
}

/** The value at `path` in `input`, when every step of the path is there. */
function valueAt(input: unknown, path: readonly PropertyKey[]): { value: unknown } | undefined {
  let value = input;
  for (const step of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, step)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[step];
  }
  return value === undefined ? undefined : { value };
}

/** A JSON value's type as a message names it. */
function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && !Number.isFinite(value)) return 'a number out of range';
  return typeof value;
}

/**
 * The `invalid_request` error for a value outside the policy's list for `field` (a type, a
 * source): the message names every allowed value.
 */
export function notOneOf(field: string, value: string, allowed: readonly string[]): GatehouseError {
  return unknownValues([{ field, value, allowed }]);
}

/** A value outside the list its field allows. */
export interface UnknownValue {
  field: string;
  value: string;
  allowed: readonly string[];
}

/** One `invalid_request` error naming every field of `unknown` (as {@link notOneOf} names one). */
export function unknownValues(unknown: readonly UnknownValue[]): GatehouseError {
  const detail = unknown.map((u) => `Unknown ${u.field} '${u.value}'; allowed: ${u.allowed.join(', ')}.`);
  return new GatehouseError('invalid_request', detail.join(' '), {
    errors: unknown.map((u) => ({ path: u.field, message: `must be one of ${u.allowed.join(', ')}` })),
  });
}
