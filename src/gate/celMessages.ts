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

/**
 * Renders a CEL value for a message: strings as is, ints without `n`, timestamps in ISO 8601.
 * Stops once the text is longer than `maxLength` (the result is then longer than it, and cut
 * anywhere): a list of a thousand references to the params is cheap to build, and was 300 MB to
 * print.
 */
export function formatCelValue(value: unknown, maxLength = Number.POSITIVE_INFINITY): string {
  const out = new BoundedText(maxLength);
  writeCelValue(value, out);
  return out.text();
}

/** Text built from parts, that takes no more once it is longer than its limit. */
class BoundedText {
  readonly #parts: string[] = [];
  #length = 0;
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get full(): boolean {
    return this.#length > this.#limit;
  }

  push(part: string): void {
    if (this.full) return;
    this.#parts.push(part);
    this.#length += part.length;
  }

  text(): string {
    return this.#parts.join('');
  }
}

function writeCelValue(value: unknown, out: BoundedText): void {
  if (out.full) return;
  if (Array.isArray(value)) {
    out.push('[');
    value.forEach((element, index) => {
      if (out.full) return;
      if (index > 0) out.push(', ');
      writeCelValue(element, out);
    });
    out.push(']');
  } else if (value instanceof Map) {
    writeEntries(value.entries(), out, formatScalar);
  } else if (typeof value === 'object' && value !== null && value.constructor === Object) {
    writeEntries(Object.entries(value), out, String);
  } else {
    out.push(formatScalar(value));
  }
}

function writeEntries(
  entries: Iterable<[unknown, unknown]>,
  out: BoundedText,
  formatKey: (key: unknown) => string,
): void {
  out.push('{');
  let first = true;
  for (const [key, entry] of entries) {
    if (out.full) break;
    if (!first) out.push(', ');
    first = false;
    out.push(`${formatKey(key)}: `);
    writeCelValue(entry, out);
  }
  out.push('}');
}

/** A value other than a list or a map (a map's key, say). */
function formatScalar(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') {
    return String(value);
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? '?' : value.toISOString();
  if (value instanceof CelStateItem) return value.value;
  if (value instanceof CelConflict) return value.key;
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
