/**
 * Rule messages with `{…}` placeholders holding CEL expressions, compiled once at load and
 * rendered at evaluation. A placeholder that fails renders as `?`: a message never changes a
 * decision.
 */
import { maskValue } from '../state/classify.js';
import { isSecret } from '../state/maskSecrets.js';
import type { CelActivation } from './celActivation.js';
import { formatCelValue } from './celMessages.js';
import { type CelProgram, compileCel } from './compileCel.js';

/** A compiled message: literal text and CEL programs, in order. */
export interface CompiledMessage {
  readonly parts: readonly (string | CelProgram)[];
  /** String literals of every placeholder (candidates for state keys read). */
  readonly stringLiterals: readonly string[];
}

/** A compiled message, or what is wrong with the template and where (0-based offset). */
export type MessageCompileResult =
  | { ok: true; message: CompiledMessage }
  | { ok: false; message: string; offset: number };

type Segment = { text: string } | { expression: string; offset: number };

/**
 * Compiles a message template. `{expr}` is a CEL expression (braces and quotes inside it are
 * fine: `{ {'a': 1}['a'] }`); `{{` and `}}` are literal braces.
 */
export function compileMessage(template: string): MessageCompileResult {
  const split = splitTemplate(template);
  if (!split.ok) return split;
  const parts: (string | CelProgram)[] = [];
  const literals = new Set<string>();
  for (const segment of split.segments) {
    if ('text' in segment) {
      parts.push(segment.text);
      continue;
    }
    const compiled = compileCel(segment.expression, { bool: false });
    if (!compiled.ok) {
      return {
        ok: false,
        message: `In placeholder {${segment.expression}}: ${compiled.message}`,
        offset: segment.offset + compiled.offset,
      };
    }
    parts.push(compiled.program);
    for (const literal of compiled.program.stringLiterals) literals.add(literal);
  }
  return { ok: true, message: { parts, stringLiterals: [...literals] } };
}

/**
 * The most characters of rule messages one evaluation renders, over all the messages it renders.
 * A message is rendered on every decision that fires its rule and kept in the history (twice:
 * `reason` and `reasons[]`); without it, a policy of `{params}` placeholders printed megabytes per
 * decision, outside the evaluation budget (reading a variable costs one unit whatever its size).
 * Past it a message ends with `…`; ordinary messages, a whole `{params}` included, are far below.
 */
export const MESSAGE_TEXT_LIMIT = 32 * 1024;

/** What is left of an evaluation's {@link MESSAGE_TEXT_LIMIT}: one per evaluation, spent by each message. */
export interface MessageAllowance {
  left: number;
}

/** The ellipsis ending a message cut at {@link MESSAGE_TEXT_LIMIT}. */
const CUT = '…';

/**
 * Renders a compiled message; a placeholder that throws renders as `?`, one whose value is a
 * secret by its name or shape (`{params.password}`, a live API key) as the masked marker, however
 * short: a message is read by people, and kept in history. Spends `allowance` (fresh when
 * omitted): once it is spent the message ends with `…` and no further placeholder is evaluated.
 * A placeholder's value is printed whole or not at all, so that no part of a value (a secret that
 * is masked later, where it appears whole) is ever printed.
 */
export function renderMessage(
  message: CompiledMessage,
  activation: CelActivation,
  allowance: MessageAllowance = { left: MESSAGE_TEXT_LIMIT },
): string {
  let text = '';
  for (const part of message.parts) {
    let piece: string;
    if (typeof part === 'string') {
      piece = part;
    } else {
      if (text.length >= allowance.left) return cut(text, allowance);
      try {
        const value = formatCelValue(part.run(activation), allowance.left - text.length);
        piece = isSecret(part.source, value) ? maskValue(value, 'secret') : value;
      } catch {
        piece = '?';
      }
      if (text.length + piece.length > allowance.left) return cut(text, allowance);
    }
    text += piece;
    if (text.length > allowance.left) return cut(text, allowance);
  }
  allowance.left -= text.length;
  return text;
}

/** `text` cut to what is left of the allowance (never inside a surrogate pair), which is then spent. */
function cut(text: string, allowance: MessageAllowance): string {
  let end = Math.min(text.length, Math.max(allowance.left, 0));
  const last = text.charCodeAt(end - 1);
  if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
  allowance.left = 0;
  return `${text.slice(0, end)}${CUT}`;
}

function splitTemplate(
  template: string,
): { ok: true; segments: Segment[] } | { ok: false; message: string; offset: number } {
  const segments: Segment[] = [];
  let text = '';
  let index = 0;
  while (index < template.length) {
    const char = template[index];
    const next = template[index + 1];
    if ((char === '{' && next === '{') || (char === '}' && next === '}')) {
      text += char;
      index += 2;
    } else if (char === '}') {
      return {
        ok: false,
        message: 'Unmatched "}" in message; write "}}" for a literal brace',
        offset: index,
      };
    } else if (char === '{') {
      const end = findPlaceholderEnd(template, index + 1);
      if (end === -1) {
        return {
          ok: false,
          message: 'Unclosed "{" in message; write "{{" for a literal brace',
          offset: index,
        };
      }
      const expression = template.slice(index + 1, end);
      if (expression.trim() === '') {
        return { ok: false, message: 'Empty placeholder "{}" in message', offset: index };
      }
      if (text !== '') segments.push({ text });
      text = '';
      segments.push({ expression, offset: index + 1 });
      index = end + 1;
    } else {
      text += char;
      index += 1;
    }
  }
  if (text !== '') segments.push({ text });
  return { ok: true, segments };
}

/** The index of the `}` closing a placeholder opened just before `start`, or -1. */
function findPlaceholderEnd(template: string, start: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let index = start; index < template.length; index++) {
    const char = template[index];
    if (quote !== undefined) {
      if (char === '\\') index += 1;
      else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'") {
      quote = char;
    } else if (char === '{') {
      depth += 1;
    } else if (char === '}') {
      if (depth === 0) return index;
      depth -= 1;
    }
  }
  return -1;
}
