/**
 * How CEL values, types and errors read in a human message (rule messages and `policy_error`
 * reasons).
 */
import { CelConflict, CelStateItem } from './celActivation.js';

/** The CEL type name of an evaluation result, for "returned X, not bool" messages. */
export function celTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'double';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (value instanceof Date) return 'timestamp';
  if (Array.isArray(value)) return 'list';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'object') return 'map';
  return typeof value;
}

/** Renders a CEL value for a message: strings as is, ints without `n`, timestamps in ISO 8601. */
export function formatCelValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') {
    return String(value);
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? '?' : value.toISOString();
  if (value instanceof CelStateItem) return value.value;
  if (value instanceof CelConflict) return value.key;
  if (Array.isArray(value)) return `[${value.map(formatCelValue).join(', ')}]`;
  if (value instanceof Map) {
    return `{${[...value].map(([k, v]) => `${formatCelValue(k)}: ${formatCelValue(v)}`).join(', ')}}`;
  }
  if (typeof value === 'object' && value.constructor === Object) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}: ${formatCelValue(v)}`)
      .join(', ')}}`;
  }
  // Durations and other library values know how to print themselves ("3600s").
  return String(value);
}

/** A one-line description of a CEL (or any) error, without the source excerpt. */
export function celErrorSummary(error: unknown): string {
  if (error instanceof Error) {
    const summary = (error as { summary?: unknown }).summary;
    const text = typeof summary === 'string' ? summary : (error.message.split('\n', 1)[0] ?? '');
    return text.length > 200 ? `${text.slice(0, 197)}...` : text;
  }
  return String(error);
}
