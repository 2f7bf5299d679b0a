/**
 * What is wrong with a policy's YAML as YAML, before its content is validated: syntax errors,
 * more than one document, nesting too deep, aliases that expand it too far, and what the yaml
 * library only warns about (an unknown tag, which it reads as if absent).
 */
import { type Document, isCollection, isPair, type YAMLError } from 'yaml';
import type { PolicyProblem } from './policyProblems.js';

/**
 * How deep a policy's YAML may nest. A policy needs 7 levels (`actions` → entry → `rules` → rule
 * → `approval` → `approvers`); the limit keeps every later recursive walk of the document far from
 * the stack's end, so the same text loads the same way wherever it is loaded.
 */
const MAX_YAML_DEPTH = 64;

const TOO_DEEP = `The YAML nests too deeply (at most ${MAX_YAML_DEPTH} levels)`;

/**
 * The problems that make the document's tree unreliable or unsafe to walk: syntax errors and
 * nesting deeper than {@link MAX_YAML_DEPTH}. When there are any, they are reported alone.
 */
export function yamlDocumentErrors(document: Document): PolicyProblem[] {
  if (document.errors.length > 0) {
    const problems: PolicyProblem[] = [];
    for (const error of document.errors) {
      const problem = describeError(error);
      // A stack overflow is caught at every level it unwinds through: say it once.
      if (problem.message === TOO_DEEP && problems.some((p) => p.message === TOO_DEEP)) continue;
      problems.push(problem);
    }
    return problems;
  }
  const tooDeep = findTooDeepNode(document);
  return tooDeep === undefined ? [] : [{ path: [], message: TOO_DEEP, offset: tooDeep }];
}

/**
 * What the yaml library only warns about, as problems: an unknown tag (`!foo Allow`, read as a
 * plain `Allow`), a tag on the wrong kind of collection, an ambiguous anchor or alias, an
 * unsupported directive. A policy means what it
 * says or does not load. Indentation inside flow collections, the one cosmetic warning, is left alone.
 */
export function yamlDocumentWarnings(document: Document, text: string): PolicyProblem[] {
  return document.warnings
    .filter((warning) => warning.code !== 'BAD_INDENT')
    .map((warning) => ({
      path: [],
      message:
        warning.code === 'TAG_RESOLVE_FAILED'
          ? `Unknown YAML tag ${text.slice(warning.pos[0], warning.pos[1])}`
          : `YAML: ${warning.message}`,
      offset: warning.pos[0],
    }));
}

function describeError(error: YAMLError): PolicyProblem {
  const offset = error.pos[0];
  switch (error.code) {
    case 'MULTIPLE_DOCS':
      return {
        path: [],
        message: 'A policy is one YAML document; this text holds another one from here',
        offset,
      };
    default:
      // The library catches a stack overflow where it happens while building the tree and reports
      // it as RESOURCE_EXHAUSTION, or as a scalar's tag failure: V8's message is the sure sign.
      if (
        error.code === 'RESOURCE_EXHAUSTION' ||
        error.message.includes('Maximum call stack size exceeded')
      ) {
        return { path: [], message: TOO_DEEP, offset };
      }
      return { path: [], message: `YAML syntax error: ${error.message}`, offset };
  }
}

/**
 * The offset of the first collection (in text order) nested deeper than the limit. Iterative, as
 * it runs on any depth the parser managed.
 */
function findTooDeepNode(document: Document): number | undefined {
  const pending: [unknown, number][] = [[document.contents, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [node, depth] = next;
    if (isPair(node)) {
      pending.push([node.value, depth], [node.key, depth]);
    } else if (isCollection(node)) {
      if (depth > MAX_YAML_DEPTH) return node.range?.[0] ?? 0;
      for (const item of [...node.items].reverse()) pending.push([item, depth + 1]);
    }
  }
  return undefined;
}

/**
 * How many times its text a policy may weigh once its aliases are expanded. An alias repeats a
 * part without its text, and every repetition is validated, compiled and hashed again: the yaml
 * library stops exponential nests, yet lets an anchor be used 100 times, so 45 KiB of rules
 * sharing one long message took seconds to compile. Without aliases a policy never weighs more
 * than its text.
 */
const MAX_ALIAS_EXPANSION = 2;

/**
 * A problem when the document's content (`raw`, from `toJS()`), aliases expanded, weighs more
 * than {@link MAX_ALIAS_EXPANSION} times its text of `textLength` characters. The weight counts
 * each string's characters (keys too) and one for any other value: never more than the text that
 * writes them out, give or take a few. Stops counting past the limit, so that measuring costs no more than it allows.
 */
export function aliasExpansionProblem(raw: unknown, textLength: number): PolicyProblem | undefined {
  const limit = MAX_ALIAS_EXPANSION * textLength + 1024;
  let weight = 0;
  const pending: unknown[] = [raw];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') {
      weight += Math.max(next.length, 1);
    } else {
      weight += 1;
      if (Array.isArray(next)) {
        for (const element of next) pending.push(element);
      } else if (typeof next === 'object' && next !== null) {
        for (const [key, value] of Object.entries(next)) {
          weight += key.length;
          pending.push(value);
        }
      }
    }
    if (weight > limit) {
      return {
        path: [],
        message: `YAML aliases expand the policy to more than twice its text (${limit.toLocaleString('en-US')} characters); write the repeated parts out`,
        offset: 0,
      };
    }
  }
  return undefined;
}
