/**
 * The policy page's line diff: minimal where the sources share most lines, and bounded where two
 * large revisions differ throughout (the full table for two 23,000-line policies froze the tab).
 */
import { describe, expect, it } from 'vitest';
import { type DiffLine, lineDiff, MAX_DIFF_CELLS } from '../../console/lineDiff.js';

/** The two sources a diff stands for: kept and removed lines, kept and added lines. */
const sides = (diff: DiffLine[]) => ({
  a: diff.filter((l) => l.op !== '+').map((l) => l.line),
  b: diff.filter((l) => l.op !== '-').map((l) => l.line),
});

describe('lineDiff', () => {
  it('marks only the changed lines, around a shared start and end', () => {
    const a = 'version: 1\nrules:\n  - name: a\n    verdict: Warn\nactions: {}';
    const b = 'version: 1\nrules:\n  - name: a\n    verdict: Block\n  - name: b\nactions: {}';
    expect(lineDiff(a, b).filter((l) => l.op !== ' ')).toEqual([
      { op: '-', line: '    verdict: Warn' },
      { op: '+', line: '    verdict: Block' },
      { op: '+', line: '  - name: b' },
    ]);
    expect(lineDiff(a, a).every((l) => l.op === ' ')).toBe(true);
  });

  it('diffs a reordered middle by its common lines', () => {
    const diff = lineDiff('x\na\nb\nc\ny', 'x\nb\nc\na\ny');
    expect(diff.filter((l) => l.op !== ' ')).toEqual([
      { op: '-', line: 'a' },
      { op: '+', line: 'a' },
    ]);
  });

  it('two large sources that differ on every line: removed, then added, still both sides exactly', () => {
    const lines = Math.ceil(Math.sqrt(MAX_DIFF_CELLS)) * 24; // 24,000 lines each: a full table of 576M cells
    const a = Array.from({ length: lines }, (_, i) => `a${i}`).join('\n');
    const b = Array.from({ length: lines }, (_, i) => `b${i}`).join('\n');
    const diff = lineDiff(`head\n${a}\ntail`, `head\n${b}\ntail`);
    expect(diff).toHaveLength(2 * lines + 2);
    expect(diff[0]).toEqual({ op: ' ', line: 'head' });
    expect(diff.at(-1)).toEqual({ op: ' ', line: 'tail' });
    expect(sides(diff)).toEqual({ a: `head\n${a}\ntail`.split('\n'), b: `head\n${b}\ntail`.split('\n') });
  });
});
