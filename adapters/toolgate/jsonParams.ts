/**
 * The arguments a tool runs with, as the JSON object `evaluate` takes as `params` and the history
 * records.
 */

/**
 * A `JSON.stringify` replacer for what a tool's schema may make that JSON has no form for: a
 * bigint as its digits, a Set as an array of its members, a Map as an object of its entries (an
 * array of `[key, value]` pairs when a key is not a string). Stringified as they are, a Set or a
 * Map is `{}`: a policy counting the recipients of a Set saw none.
 */
export function jsonForm(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Set) return [...value];
  if (value instanceof Map) {
    const entries = [...value];
    return entries.every(([key]) => typeof key === 'string') ? Object.fromEntries(entries) : entries;
  }
  return value;
}

/**
 * The JSON form of a tool's parsed input ({@link jsonForm}; a date as its ISO string, `undefined`
 * members left out). A value that is not an object is wrapped as `{ input }` (as the LangChain
 * faces wrap a plain-text tool input); no input at all is `{}`.
 * @throws {TypeError} for a circular structure (the caller fails closed: no JSON, no gate)
 */
export function jsonParams(input: unknown): Record<string, unknown> {
  const text = JSON.stringify(input, jsonForm);
  if (text === undefined) return {};
  const json: unknown = JSON.parse(text);
  return json !== null && typeof json === 'object' && !Array.isArray(json)
    ? (json as Record<string, unknown>)
    : { input: json };
}
