/**
 * The arguments a tool runs with, as the JSON object `evaluate` takes as `params` and the history
 * records.
 */

/**
 * The JSON form of a tool's parsed input: a date as its ISO string, a bigint as its decimal
 * string, `undefined` members left out. A value that is not an object is wrapped as `{ input }`
 * (as the LangChain faces wrap a plain-text tool input); no input at all is `{}`.
 * @throws {TypeError} for a circular structure (the caller fails closed: no JSON, no gate)
 */
export function jsonParams(input: unknown): Record<string, unknown> {
  const text = JSON.stringify(input, (_key, value: unknown) =>
    typeof value === 'bigint' ? value.toString() : value,
  );
  if (text === undefined) return {};
  const json: unknown = JSON.parse(text);
  return json !== null && typeof json === 'object' && !Array.isArray(json)
    ? (json as Record<string, unknown>)
    : { input: json };
}
