/**
 * Compiling a policy file: YAML → validated document → CEL programs, matchers and thresholds,
 * all once, so that evaluation does no parsing.
 */
import { createHash } from 'node:crypto';
import { LineCounter, parseDocument } from 'yaml';
import { canonicalJson } from '../canonicalJson.js';
import { compileActionPattern } from './actionMatcher.js';
import { compileCel } from './compileCel.js';
import { type CompiledEntry, type CompiledRule, createEvaluator } from './evaluatePolicy.js';
import type { CompiledPolicy } from './gateTypes.js';
import { compileMessage } from './messageTemplate.js';
import {
  invalidPolicyError,
  PolicyLocator,
  type PolicyPath,
  type PolicyProblem,
  problemsFromIssues,
} from './policyProblems.js';
import {
  type PolicyDocument,
  type PolicyRequirement,
  type PolicyRule,
  policySchema,
} from './policySchema.js';
import type { CompiledRequirement } from './requirementChecks.js';
import { aliasExpansionProblem, yamlDocumentErrors, yamlDocumentWarnings } from './yamlDocumentProblems.js';

/** Options for {@link compilePolicy}. */
export interface CompilePolicyOptions {
  /** A name for the text (usually its file name), prefixed to every error position. */
  source?: string;
}

/**
 * Compiles a policy from its YAML text (format: see `policySchema.ts`). Every CEL expression is
 * parsed and type-checked here, once.
 *
 * @throws GatehouseError `invalid_request` listing every problem found (YAML syntax, more than one
 *   document, nesting, unknown tags, schema, CEL syntax and types, literals that always fail,
 *   placeholders, globs), each as `[source:]line:col` plus its field
 *   path in `errors[].path` (`actions["payments.*"].rules[0].when`).
 * @example
 * const policy = compilePolicy('version: 1\ndefault_verdict: Block\n', { source: 'policy.yaml' });
 * policy.evaluate({ action: 'x.y', params: {}, context: {}, state: {}, conflicts: [], now: new Date() });
 * // { verdict: 'Block', reason: 'No policy entry matches action "x.y"; ...', ... }
 */
export function compilePolicy(yamlText: string, options: CompilePolicyOptions = {}): CompiledPolicy {
  const lineCounter = new LineCounter();
  const document = parseDocument(yamlText, { lineCounter, prettyErrors: false, uniqueKeys: true });
  // The tree of a document with syntax errors, or nested too deep to walk, is unreliable: report
  // those alone.
  const yamlErrors = yamlDocumentErrors(document);
  if (yamlErrors.length > 0) throw invalidPolicyError(yamlErrors, lineCounter, options.source);

  const locator = new PolicyLocator(document, yamlText);
  let raw: unknown;
  try {
    raw = document.toJS();
  } catch (error) {
    // yaml refuses alias "billion laughs" expansions here.
    const message = `YAML error: ${error instanceof Error ? error.message : String(error)}`;
    throw invalidPolicyError([{ path: [], message, offset: 0 }], lineCounter, options.source);
  }
  const expansion = aliasExpansionProblem(raw, yamlText.length);
  if (expansion) throw invalidPolicyError([expansion], lineCounter, options.source);
  const parsed = policySchema.safeParse(raw);
  const problems: PolicyProblem[] = yamlDocumentWarnings(document, yamlText);
  if (!parsed.success) {
    problems.push(...problemsFromIssues(parsed.error.issues, locator));
    // Still compile every CEL expression found, so one run reports all the problems.
    compileRawRules(raw, locator, problems);
    throw invalidPolicyError(problems, lineCounter, options.source);
  }

  const policy = parsed.data;
  const globalRules = compileRules(policy.rules, ['rules'], locator, problems);
  const entries: CompiledEntry[] = [];
  for (const [pattern, entry] of Object.entries(policy.actions)) {
    const path = ['actions', pattern];
    let matches: CompiledEntry['matches'];
    try {
      matches = compileActionPattern(pattern);
    } catch (error) {
      problems.push({
        path,
        message: `Invalid action pattern: ${error instanceof Error ? error.message : String(error)}`,
        offset: locator.keyOffsetOf(['actions'], pattern),
      });
      continue;
    }
    entries.push({
      pattern,
      matches,
      requirements: entry.requires.map((requirement) => compileRequirement(requirement, policy)),
      rules: compileRules(entry.rules, [...path, 'rules'], locator, problems),
    });
  }
  if (problems.length > 0) throw invalidPolicyError(problems, lineCounter, options.source);

  const evaluate = createEvaluator({
    globalRules,
    entries,
    defaultVerdict: policy.default_verdict,
    openConflicts: policy.open_conflicts,
    lowTrustBelow: policy.low_trust_below,
  });
  const ruleInfo = (scope: string) => (rule: PolicyRule) =>
    Object.freeze({ name: rule.name, verdict: rule.verdict, mode: rule.mode, scope });
  return Object.freeze({
    revision: policyRevision(policy),
    source: yamlText,
    rules: Object.freeze([
      ...policy.rules.map(ruleInfo('global')),
      ...Object.entries(policy.actions).flatMap(([pattern, entry]) => entry.rules.map(ruleInfo(pattern))),
    ]),
    types: Object.freeze([...policy.types]),
    sources: Object.freeze({ ...policy.sources }),
    lowTrustBelow: policy.low_trust_below,
    defaultVerdict: policy.default_verdict,
    ...(policy.retention === undefined ? {} : { retention: Object.freeze({ ...policy.retention }) }),
    evaluate,
  });
}

/**
 * The policy's revision: SHA-256 over the RFC 8785 canonical JSON of the validated document
 * (defaults applied), so comments, quoting, key order and layout do not change it.
 */
function policyRevision(policy: PolicyDocument): string {
  return createHash('sha256').update(canonicalJson(policy)).digest('hex');
}

function compileRequirement(requirement: PolicyRequirement, policy: PolicyDocument): CompiledRequirement {
  const { key, min_trust: minTrust, types } = requirement;
  return {
    key,
    // The schema guarantees a named source exists.
    minTrust: typeof minTrust === 'string' ? (policy.sources[minTrust] ?? 0) : minTrust,
    minTrustLabel: minTrust === undefined ? '' : String(minTrust),
    types: types === undefined ? undefined : Object.freeze([...types]),
  };
}

function compileRules(
  rules: readonly PolicyRule[],
  path: PolicyPath,
  locator: PolicyLocator,
  problems: PolicyProblem[],
): CompiledRule[] {
  const compiled: CompiledRule[] = [];
  rules.forEach((rule, index) => {
    const rulePath = [...path, index];
    const condition = compileCondition(rule.when, [...rulePath, 'when'], locator, problems);
    const message = compileRuleMessage(
      rule.message ?? `Rule ${rule.name} matched.`,
      [...rulePath, 'message'],
      locator,
      problems,
    );
    if (condition === undefined || message === undefined) return;
    compiled.push({
      name: rule.name,
      verdict: rule.verdict,
      mode: rule.mode,
      onError: rule.on_error,
      condition,
      message,
      stringLiterals: [...new Set([...condition.stringLiterals, ...message.stringLiterals])],
      ...(rule.approval === undefined ? {} : { approval: rule.approval }),
    });
  });
  return compiled;
}

function compileCondition(
  source: string,
  path: PolicyPath,
  locator: PolicyLocator,
  problems: PolicyProblem[],
) {
  const text = source.trim();
  const result = compileCel(text, { bool: true });
  if (result.ok) return result.program;
  const rawValue = locator.valueAt(path);
  const lead = typeof rawValue === 'string' ? rawValue.length - rawValue.trimStart().length : 0;
  problems.push({
    path,
    message: result.message,
    offset: locator.offsetInScalar(path, lead + result.offset),
  });
  return undefined;
}

function compileRuleMessage(
  template: string,
  path: PolicyPath,
  locator: PolicyLocator,
  problems: PolicyProblem[],
) {
  const result = compileMessage(template);
  if (result.ok) return result.message;
  problems.push({ path, message: result.message, offset: locator.offsetInScalar(path, result.offset) });
  return undefined;
}

/** Compiles the CEL of rules in a document that failed validation, only to report errors. */
function compileRawRules(raw: unknown, locator: PolicyLocator, problems: PolicyProblem[]): void {
  const visitList = (list: unknown, path: PolicyPath): void => {
    if (!Array.isArray(list)) return;
    list.forEach((rule: unknown, index) => {
      if (!isRecord(rule)) return;
      const rulePath = [...path, index];
      if (typeof rule['when'] === 'string' && rule['when'].trim() !== '') {
        compileCondition(rule['when'], [...rulePath, 'when'], locator, problems);
      }
      if (typeof rule['message'] === 'string') {
        compileRuleMessage(rule['message'], [...rulePath, 'message'], locator, problems);
      }
    });
  };
  if (!isRecord(raw)) return;
  visitList(raw['rules'], ['rules']);
  if (isRecord(raw['actions'])) {
    for (const [pattern, entry] of Object.entries(raw['actions'])) {
      if (isRecord(entry)) visitList(entry['rules'], ['actions', pattern, 'rules']);
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
