/**
 * A line diff of two policy sources, for the policy page's "Diff with active": the lines both
 * start and end with are kept as they are, and the lines between are diffed by their longest
 * common subsequence while that table stays small; beyond it (two large, wholly different
 * revisions) the middle shows as removed, then added, rather than freezing the tab.
 */

/** One line of a diff: kept, removed or added. */
export interface DiffLine {
  op: ' ' | '-' | '+';
  line: string;
}

/** Cells of the longest-common-subsequence table past which the middle is not diffed line by line. */
export const MAX_DIFF_CELLS = 1_000_000;

/** Lines of `a` and `b` as kept / removed / added. */
export function lineDiff(a: string, b: string): DiffLine[] {
  const x = a.split('\n');
  const y = b.split('\n');
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let endX = x.length;
  let endY = y.length;
  while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) {
    endX--;
    endY--;
  }
  const kept = (lines: string[]): DiffLine[] => lines.map((line) => ({ op: ' ', line }));
  return [
    ...kept(x.slice(0, start)),
    ...middleDiff(x.slice(start, endX), y.slice(start, endY)),
    ...kept(x.slice(endX)),
  ];
}

function middleDiff(x: string[], y: string[]): DiffLine[] {
  const out: DiffLine[] = [];
  if ((x.length + 1) * (y.length + 1) > MAX_DIFF_CELLS) {
    for (const line of x) out.push({ op: '-', line });
    for (const line of y) out.push({ op: '+', line });
    return out;
  }
  // Row i of the table, flattened: lcs[i * w + j] is the common subsequence of x[i..] and y[j..].
  const w = y.length + 1;
  const lcs = new Uint32Array((x.length + 1) * w);
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i * w + j] =
        x[i] === y[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
    }
  }
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    if (x[i] === y[j]) {
      out.push({ op: ' ', line: x[i]! });
      i++;
      j++;
    } else if (lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!) out.push({ op: '-', line: x[i++]! });
    else out.push({ op: '+', line: y[j++]! });
  }
  while (i < x.length) out.push({ op: '-', line: x[i++]! });
  while (j < y.length) out.push({ op: '+', line: y[j++]! });
  return out;
}
