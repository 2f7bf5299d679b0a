import type { Verdict } from './gateTypes.js';

/** The strictness of a verdict: Allow 0 < Warn 1 < Block 2. */
export function verdictRank(verdict: Verdict): number {
  switch (verdict) {
    case 'Allow':
      return 0;
    case 'Warn':
      return 1;
    case 'Block':
      return 2;
  }
}

/**
 * Combines verdicts: the strictest wins (`Block` > `Warn` > `Allow`); no verdict at all is `Allow`.
 * @example
 * combineVerdicts(['Warn', 'Allow']); // 'Warn'
 * combineVerdicts([]); // 'Allow'
 */
export function combineVerdicts(verdicts: readonly Verdict[]): Verdict {
  let strictest: Verdict = 'Allow';
  for (const verdict of verdicts) {
    if (verdict === 'Block') return 'Block';
    if (verdictRank(verdict) > verdictRank(strictest)) strictest = verdict;
  }
  return strictest;
}
