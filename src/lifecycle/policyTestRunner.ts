/**
 * Running policy test cases through the real core: each file gets a fresh store (the caller
 * opens it: an in-memory SQLite database for `gatehouse policy test`), each case its own session
 * whose state is written with `recordState` (so versions and conflicts follow the real rules) and
 * one `evaluate` at the case's `now`. Then the decision is compared with what the case expects.
 */
import type { CompiledPolicy, GateReason } from '../gate/gateTypes.js';
import { createGatehouse } from '../gatehouse.js';
import type { Decision } from '../schemas.js';
import type { Store } from '../store.js';
import {
  DEFAULT_TEST_NOW,
  type PolicyTestCase,
  type PolicyTestFile,
  type ReasonMatcher,
} from './policyTestFile.js';

/** One difference between what a case expects and what the gate answered. */
export interface PolicyTestFailure {
  /** `verdict`, `reasons`, `shadow` or `setup`. */
  field: string;
  expected: string;
  actual: string;
  /** For reason lists: expected ones not found, and answered ones no expectation matched. */
  missing?: string[];
  unexpected?: string[];
}

/** The result of one case. */
export interface PolicyTestCaseResult {
  file: string;
  name: string;
  passed: boolean;
  failures: PolicyTestFailure[];
  /** The decision, when the case got that far. */
  decision: Pick<Decision, 'verdict' | 'reason' | 'reasons' | 'shadow'> | null;
  duration_ms: number;
}

/** A whole run. */
export interface PolicyTestRun {
  revision: string;
  files: Array<{ path: string; cases: PolicyTestCaseResult[] }>;
  /** Every named rule of the policy and the cases it fired in (enforced or shadow). */
  coverage: Array<{ rule: string; scope: string; mode: 'enforce' | 'shadow'; fired: number }>;
  totals: { cases: number; passed: number; failed: number };
}

/** What {@link runPolicyTests} needs. */
export interface RunPolicyTestsOptions {
  policy: CompiledPolicy;
  files: readonly PolicyTestFile[];
  /** A fresh, empty store per file (closed by the runner). */
  openStore: () => Store | Promise<Store>;
}

/** Runs every case of every file; never throws for a failing case. */
export async function runPolicyTests(options: RunPolicyTestsOptions): Promise<PolicyTestRun> {
  const { policy } = options;
  const fired = new Map<string, number>();
  const files: PolicyTestRun['files'] = [];
  for (const file of options.files) {
    const store = await options.openStore();
    const results: PolicyTestCaseResult[] = [];
    try {
      const clock = { now: new Date(DEFAULT_TEST_NOW) };
      const gatehouse = createGatehouse({ store, policy, clock: () => clock.now });
      for (const [index, testCase] of file.cases.entries()) {
        const result = await runCase(gatehouse, testCase, { sessionId: `case-${index + 1}`, clock });
        results.push({ file: file.path, name: testCase.name, ...result });
        if (result.decision) {
          const names = new Set([...result.decision.reasons, ...result.decision.shadow].map((r) => r.rule));
          for (const name of names) fired.set(name, (fired.get(name) ?? 0) + 1);
        }
      }
    } finally {
      await store.close();
    }
    files.push({ path: file.path, cases: results });
  }
  const all = files.flatMap((f) => f.cases);
  const passed = all.filter((c) => c.passed).length;
  return {
    revision: policy.revision,
    files,
    coverage: policy.rules.map((rule) => ({
      rule: rule.name,
      scope: rule.scope,
      mode: rule.mode,
      fired: fired.get(rule.name) ?? 0,
    })),
    totals: { cases: all.length, passed, failed: all.length - passed },
  };
}

async function runCase(
  gatehouse: ReturnType<typeof createGatehouse>,
  testCase: PolicyTestCase,
  options: { sessionId: string; clock: { now: Date } },
): Promise<Omit<PolicyTestCaseResult, 'file' | 'name'>> {
  const { sessionId, clock } = options;
  const now = new Date(testCase.now ?? DEFAULT_TEST_NOW);
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 1000) / 1000;
  try {
    for (const entry of testCase.state) {
      clock.now = entry.at === undefined ? now : new Date(entry.at);
      const item = { session_id: sessionId, key: entry.key, type: entry.type, source: entry.source };
      const current = await gatehouse
        .getItem(sessionId, entry.key)
        .then((i) => i.version)
        .catch(() => 0);
      // Earlier versions first, so the item ends at the version the case names.
      for (let v = current + 1; v < (entry.version ?? 0); v += 1) {
        await gatehouse.recordState({ ...item, value: `${entry.value} (version ${v})` });
      }
      await gatehouse.recordState({ ...item, value: entry.value });
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      passed: false,
      failures: [{ field: 'setup', expected: 'the state items to be written', actual: message }],
      decision: null,
      duration_ms: elapsed(),
    };
  }
  let decision: Decision;
  clock.now = now;
  try {
    decision = await gatehouse.evaluate({
      session_id: sessionId,
      action: testCase.action,
      params: testCase.params,
      context: testCase.context,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      passed: false,
      failures: [{ field: 'setup', expected: 'an evaluation', actual: message }],
      decision: null,
      duration_ms: elapsed(),
    };
  }
  const failures: PolicyTestFailure[] = [];
  const { expect } = testCase;
  if (decision.verdict !== expect.verdict) {
    failures.push({ field: 'verdict', expected: expect.verdict, actual: decision.verdict });
  }
  if (expect.reasons) compareReasons('reasons', expect.reasons, decision.reasons, failures);
  if (expect.shadow) compareReasons('shadow', expect.shadow, decision.shadow, failures);
  return {
    passed: failures.length === 0,
    failures,
    decision: {
      verdict: decision.verdict,
      reason: decision.reason,
      reasons: decision.reasons,
      shadow: decision.shadow,
    },
    duration_ms: elapsed(),
  };
}

function describeMatcher(matcher: ReasonMatcher): string {
  if (typeof matcher === 'string') return matcher;
  const parts = [matcher.rule];
  if (matcher.verdict) parts.push(`(${matcher.verdict})`);
  if (matcher.message !== undefined) parts.push(`message containing ${JSON.stringify(matcher.message)}`);
  if (matcher.keys) parts.push(`keys [${matcher.keys.join(', ')}]`);
  return parts.join(' ');
}

function describeReason(reason: GateReason): string {
  return `${reason.rule} (${reason.verdict}) ${JSON.stringify(reason.message)}`;
}

function matches(matcher: ReasonMatcher, reason: GateReason): boolean {
  if (typeof matcher === 'string') return reason.rule === matcher;
  if (reason.rule !== matcher.rule) return false;
  if (matcher.verdict && reason.verdict !== matcher.verdict) return false;
  if (matcher.message !== undefined && !reason.message.includes(matcher.message)) return false;
  if (matcher.keys && [...matcher.keys].sort().join('\n') !== [...reason.keys].sort().join('\n'))
    return false;
  return true;
}

/** Exactly the expected reasons, in any order: each expectation takes one reason. */
function compareReasons(
  field: 'reasons' | 'shadow',
  expected: readonly ReasonMatcher[],
  actual: readonly GateReason[],
  failures: PolicyTestFailure[],
): void {
  const left = [...actual];
  const missing: string[] = [];
  for (const matcher of expected) {
    const at = left.findIndex((reason) => matches(matcher, reason));
    if (at === -1) missing.push(describeMatcher(matcher));
    else left.splice(at, 1);
  }
  if (missing.length === 0 && left.length === 0) return;
  failures.push({
    field,
    expected: `[${expected.map((m) => (typeof m === 'string' ? m : m.rule)).join(', ')}]`,
    actual: `[${actual.map((r) => r.rule).join(', ')}]`,
    missing,
    unexpected: left.map(describeReason),
  });
}
