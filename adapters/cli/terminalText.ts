/**
 * Text the CLI prints for people, made safe for their terminal. Values in it come from callers,
 * agents, policies and the database (an action name, a rule's message rendering an agent's
 * params, a comment, a state key): a raw ESC or CSI byte in one can move the cursor and redraw
 * what the reader sees, a raw newline can forge a line, and a bidi override can reorder the
 * characters around it. Every value passes through {@link terminalSafe} before it is printed;
 * the CLI's own layout (newlines between lines, tabs between columns) is written around it.
 * `--json` output is JSON, whose encoder escapes what it must, and is left alone.
 */

/**
 * What {@link terminalSafe} escapes: C0 controls and DEL, C1 controls (a terminal reads U+009B as
 * CSI), the Arabic letter mark, LRM and RLM, the line and paragraph separators, and the bidi
 * embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeOne(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * A value as it may be printed to a terminal: each control character, bidi control and line
 * separator written as a visible escape (`\n`, `\r`, `\t`, `\x1b`, `\u009b`, `\u202e`); any other
 * text unchanged. Idempotent: what it returns holds nothing it would escape.
 * @example terminalSafe('acct-9\u001b[5A') // 'acct-9\\x1b[5A'
 */
export function terminalSafe(value: unknown): string {
  return String(value).replace(UNSAFE, escapeOne);
}

/**
 * A template tag for a line the CLI prints: its literal parts are the CLI's own text and layout,
 * kept as written; each interpolated value goes through {@link terminalSafe}.
 * @example process.stdout.write(terminalText`revoked ${id}\n`)
 */
export function terminalText(strings: TemplateStringsArray, ...values: unknown[]): string {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i += 1) out += terminalSafe(values[i]) + (strings[i + 1] ?? '');
  return out;
}

/**
 * Text of several lines whose line breaks are the CLI's own (an error message listing problems):
 * each line made safe, the breaks kept.
 */
export function terminalLines(text: string): string {
  return text.split('\n').map(terminalSafe).join('\n');
}

/**
 * JSON for a terminal: `JSON.stringify`'s text with each character {@link terminalSafe} would
 * escape and JSON leaves raw (DEL, C1 controls, bidi controls, line separators) written as a
 * `\uXXXX` escape, so the text is still valid JSON that parses to the same value.
 * @example process.stderr.write(`${terminalJson(checkpoint)}\n`)
 */
export function terminalJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    UNSAFE,
    // Outside strings JSON.stringify writes only the newlines of `indent`: the layout, kept.
    (char) => (char === '\n' ? char : `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
}
