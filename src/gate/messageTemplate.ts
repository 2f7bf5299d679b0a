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
 * Renders a compiled message; a placeholder that throws renders as `?`, one whose value is a
 * secret by its name or shape (`{params.password}`, a live API key) as the masked marker, however
 * short: a message is read by people, and kept in history.
 */
export function renderMessage(message: CompiledMessage, activation: CelActivation): string {
  let text = '';
  for (const part of message.parts) {
    if (typeof part === 'string') {
      text += part;
      continue;
    }
    try {
      const value = formatCelValue(part.run(activation));
      text += isSecret(part.source, value) ? maskValue(value, 'secret') : value;
    } catch {
      text += '?';
    }
  }
  return text;
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
