/**
 * The running totals of a replay: counters and a bounded list of examples, so a replay of
 * millions of decisions holds the same few kilobytes as one of ten.
 */
import type { GateReason, Verdict } from '../gate/gateTypes.js';
import type { ReplayExample, ReplayReport } from './lifecycleSchemas.js';

/** One side of a comparison: a verdict and the reasons behind it. */
export interface DecisionOutcome {
  verdict: Verdict;
  reason: string;
  reasons: readonly GateReason[];
  shadow: readonly GateReason[];
}

/** How a replayed decision compares with the recorded one. */
export type ReplayComparison = 'unchanged' | 'changed' | 'rules_changed';

/** Distinct recorded revisions counted; past this the rest are summed under `other`. */
const REVISIONS_LIMIT = 50;
/** Distinct rule names counted (policies name far fewer). */
const RULES_LIMIT = 1000;

/** `rule:verdict` of each reason, shadow ones marked: what "the rules that fired" means here. */
export function firedRules(outcome: Pick<DecisionOutcome, 'reasons' | 'shadow'>): string[] {
  return [
    ...outcome.reasons.map((r) => `${r.rule}:${r.verdict}`),
    ...outcome.shadow.map((r) => `${r.rule}:${r.verdict}:shadow`),
  ];
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const sortedA = [...a].sort();
  const sortedB = [...b].sort();
  return sortedA.every((value, i) => value === sortedB[i]);
}

/** Compares a replayed outcome with the recorded one. */
export function compareOutcomes(before: DecisionOutcome, after: DecisionOutcome): ReplayComparison {
  if (before.verdict !== after.verdict) return 'changed';
  return sameList(firedRules(before), firedRules(after)) ? 'unchanged' : 'rules_changed';
}

/** Accumulates a replay's report. */
export class ReplayTally {
  decisions = 0;
  unchanged = 0;
  changed = 0;
  rulesChanged = 0;
  pinned = 0;
  readonly #matrix = new Map<string, number>();
  readonly #rules = new Map<string, { before: number; now: number }>();
  readonly #revisions = new Map<string, number>();
  readonly #verdictExamples: ReplayExample[] = [];
  readonly #ruleExamples: ReplayExample[] = [];
  readonly #examples: number;

  /** `candidateRules`: listed even when they never fire, so a silent rule shows. */
  constructor(options: { examples: number; candidateRules: readonly string[] }) {
    this.#examples = options.examples;
    for (const rule of options.candidateRules) this.#rules.set(rule, { before: 0, now: 0 });
  }

  /** Counts one decision; `example` is built only when it will be kept. */
  add(input: {
    before: DecisionOutcome;
    after: DecisionOutcome;
    revision: string;
    pinned: boolean;
    example: () => ReplayExample;
  }): ReplayComparison {
    const { before, after } = input;
    const comparison = compareOutcomes(before, after);
    this.decisions += 1;
    if (input.pinned) this.pinned += 1;
    if (comparison === 'unchanged') this.unchanged += 1;
    else if (comparison === 'changed') this.changed += 1;
    else this.rulesChanged += 1;
    const cell = `${before.verdict}>${after.verdict}`;
    this.#matrix.set(cell, (this.#matrix.get(cell) ?? 0) + 1);
    this.#countRules(before, 'before');
    this.#countRules(after, 'now');
    const revisionKey =
      this.#revisions.has(input.revision) || this.#revisions.size < REVISIONS_LIMIT
        ? input.revision
        : 'other';
    this.#revisions.set(revisionKey, (this.#revisions.get(revisionKey) ?? 0) + 1);
    if (comparison === 'changed' && this.#verdictExamples.length < this.#examples) {
      this.#verdictExamples.push(input.example());
    } else if (comparison === 'rules_changed' && this.#ruleExamples.length < this.#examples) {
      this.#ruleExamples.push(input.example());
    }
    return comparison;
  }

  #countRules(outcome: DecisionOutcome, side: 'before' | 'now'): void {
    // A rule counts once per decision, whether it fired enforced or in shadow.
    const names = new Set([...outcome.reasons, ...outcome.shadow].map((r) => r.rule));
    for (const name of names) {
      let counts = this.#rules.get(name);
      if (!counts) {
        if (this.#rules.size >= RULES_LIMIT) continue;
        counts = { before: 0, now: 0 };
        this.#rules.set(name, counts);
      }
      counts[side] += 1;
    }
  }

  /** The report's counting part. */
  summary(): Pick<
    ReplayReport,
    | 'decisions'
    | 'unchanged'
    | 'changed'
    | 'rules_changed'
    | 'pinned'
    | 'by_verdict'
    | 'rules'
    | 'recorded_revisions'
    | 'examples'
  > {
    const verdicts: Verdict[] = ['Allow', 'Warn', 'Block'];
    const byVerdict = verdicts.flatMap((from) =>
      verdicts.flatMap((to) => {
        const count = this.#matrix.get(`${from}>${to}`) ?? 0;
        return count > 0 ? [{ from, to, count }] : [];
      }),
    );
    return {
      decisions: this.decisions,
      unchanged: this.unchanged,
      changed: this.changed,
      rules_changed: this.rulesChanged,
      pinned: this.pinned,
      by_verdict: byVerdict,
      rules: [...this.#rules]
        .map(([rule, counts]) => ({ rule, ...counts }))
        .sort((a, b) => b.before + b.now - (a.before + a.now) || (a.rule < b.rule ? -1 : 1)),
      recorded_revisions: [...this.#revisions]
        .map(([revision, decisions]) => ({ revision, decisions }))
        .sort((a, b) => b.decisions - a.decisions),
      examples: [...this.#verdictExamples, ...this.#ruleExamples].slice(0, this.#examples),
    };
  }
}
