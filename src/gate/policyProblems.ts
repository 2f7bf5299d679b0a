/**
 * Turning everything wrong with a policy file into one `invalid_request` error that names, for
 * each problem, the file, `line:col` and the field path.
 */
import { type Document, isMap, isPair, isScalar, type LineCounter, type Node, type Pair, Scalar } from 'yaml';
import type { z } from 'zod';
import { GatehouseError } from '../errors.js';
import { ALLOWED_FIELDS } from './policySchema.js';

/** A path into the policy document: field names and list indexes. */
export type PolicyPath = readonly (string | number)[];

/** One problem, at a 0-based offset in the YAML text. */
export interface PolicyProblem {
  readonly path: PolicyPath;
  readonly message: string;
  readonly offset: number;
}

/**
 * Formats a path the way a reader would write it in JavaScript:
 * `actions["payments.*"].rules[0].when`.
 */
export function formatPolicyPath(path: PolicyPath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

/** Locates YAML nodes by path, for problem positions. */
export class PolicyLocator {
  readonly #document: Document;
  readonly #text: string;

  constructor(document: Document, text: string) {
    this.#document = document;
    this.#text = text;
  }

  /** The offset of the node at `path`, or of its nearest existing ancestor. */
  offsetOf(path: PolicyPath): number {
    for (let length = path.length; length > 0; length--) {
      const node = this.#nodeAt(path.slice(0, length));
      if (node?.range) return node.range[0];
    }
    return this.#rootOffset();
  }

  /** The offset of the key `field` in the map at `path` (for unknown fields). */
  keyOffsetOf(path: PolicyPath, field: string): number {
    const map = path.length === 0 ? this.#document.contents : this.#nodeAt(path);
    if (isMap(map)) {
      const pair = map.items.find((item: Pair) => isScalar(item.key) && String(item.key.value) === field);
      if (pair && isScalar(pair.key) && pair.key.range) return pair.key.range[0];
    }
    return this.offsetOf(path);
  }

  /**
   * The offset of the character at `inner` within the string scalar at `path`, when the scalar
   * is written so that its text maps one-to-one onto its value (plain, or quoted without
   * escapes); otherwise the scalar's start.
   */
  offsetInScalar(path: PolicyPath, inner: number): number {
    const node = this.#nodeAt(path);
    if (!isScalar(node) || !node.range || typeof node.value !== 'string') return this.offsetOf(path);
    const start = node.range[0];
    const raw = this.#text.slice(start, node.range[1]);
    const value = node.value;
    if (node.type === Scalar.PLAIN && raw === value) return start + inner;
    const quoted = node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE;
    if (quoted && raw.slice(1, -1) === value) return start + 1 + inner;
    return start;
  }

  /** The raw (pre-validation) value at `path`, or `undefined`. */
  valueAt(path: PolicyPath): unknown {
    const node = this.#nodeAt(path);
    if (node === undefined) return undefined;
    return isScalar(node) ? node.value : node.toJSON();
  }

  /** Whether the map at `path` (the document root for `[]`) is a map without the key `field`. */
  lacksField(path: PolicyPath, field: string): boolean {
    const map = path.length === 0 ? this.#document.contents : this.#nodeAt(path);
    return isMap(map) && !map.items.some((item) => isScalar(item.key) && String(item.key.value) === field);
  }

  #nodeAt(path: PolicyPath): Node | undefined {
    const node: unknown = this.#document.getIn(path as (string | number)[], true);
    if (node === null || typeof node !== 'object' || isPair(node)) return undefined;
    return node as Node;
  }

  #rootOffset(): number {
    return this.#document.contents?.range?.[0] ?? 0;
  }
}

/** Converts zod issues into problems with positions and clear messages. */
export function problemsFromIssues(
  issues: readonly z.core.$ZodIssue[],
  locator: PolicyLocator,
): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  for (const issue of issues) {
    const path = issue.path.filter((segment): segment is string | number => typeof segment !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      const allowed = allowedFieldsAt(path);
      for (const key of issue.keys) {
        problems.push({
          path: [...path, key],
          message: `Unknown field "${key}"${allowed ? `; allowed: ${allowed.join(', ')}` : ''}`,
          offset: locator.keyOffsetOf(path, key),
        });
      }
      continue;
    }
    const parent = path.slice(0, -1);
    const field = path[path.length - 1];
    if (typeof field === 'string' && issue.code === 'invalid_key') {
      // The key is what is wrong, so point at it (not its value) and say why.
      const reason = issue.issues[0]?.message;
      problems.push({
        path,
        message: reason === undefined ? issue.message : `Invalid name "${field}": ${reason}`,
        offset: locator.keyOffsetOf(parent, field),
      });
      continue;
    }
    if (typeof field === 'string' && issue.code === 'invalid_type' && locator.lacksField(parent, field)) {
      problems.push({
        path,
        message: `Required field "${field}" is missing`,
        offset: locator.offsetOf(parent),
      });
      continue;
    }
    let message = issue.message;
    if (issue.code === 'invalid_value') {
      const received = locator.valueAt(path);
      if (received !== undefined) message += `, got ${JSON.stringify(received)}`;
    }
    problems.push({ path, message, offset: locator.offsetOf(path) });
  }
  return problems;
}

/**
 * Builds the error thrown for an invalid policy: one `errors` entry per problem (sorted by
 * position), each message prefixed with `source:line:col`, and all of them in the message.
 */
export function invalidPolicyError(
  problems: readonly PolicyProblem[],
  lineCounter: LineCounter,
  source: string | undefined,
): GatehouseError {
  const sorted = [...problems].sort((a, b) => a.offset - b.offset);
  const lines: string[] = [];
  const errors = sorted.map((problem) => {
    const { line, col } = lineCounter.linePos(problem.offset);
    const where = source === undefined ? `${line}:${col}` : `${source}:${line}:${col}`;
    const path = formatPolicyPath(problem.path);
    lines.push(`  ${where}: ${path === '' ? '' : `${path}: `}${problem.message}`);
    return { path, message: `${where}: ${problem.message}` };
  });
  const count = errors.length === 1 ? '1 problem' : `${errors.length} problems`;
  // A source that already says "policy" ("policy" for a PUT body, "default policy") is not
  // repeated after the word: "Invalid policy (…)", "Invalid default policy (…)".
  const title =
    source === undefined
      ? 'Invalid policy'
      : /(^|\s)policy$/.test(source)
        ? `Invalid ${source}`
        : `Invalid policy ${source}`;
  return new GatehouseError('invalid_request', `${title} (${count}):\n${lines.join('\n')}`, { errors });
}

function allowedFieldsAt(path: PolicyPath): readonly string[] | undefined {
  if (path.length === 0) return ALLOWED_FIELDS.policy;
  const last = path[path.length - 1];
  const container = path[path.length - 2];
  if (path.length === 2 && path[0] === 'actions') return ALLOWED_FIELDS.action;
  if (typeof last === 'number' && container === 'rules') return ALLOWED_FIELDS.rule;
  if (typeof last === 'number' && container === 'requires') return ALLOWED_FIELDS.requirement;
  if (last === 'approval' && typeof container === 'number') return ALLOWED_FIELDS.approval;
  return undefined;
}
