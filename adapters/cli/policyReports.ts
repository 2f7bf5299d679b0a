/**
 * What `gatehouse policy test` and `gatehouse policy replay` print: plain text for people, JUnit
 * XML for CI. The JSON forms are the core's own result objects.
 */
import type { PolicyTestRun, ReplayReport } from '../../src/index.js';

const n = (value: number) => value.toLocaleString('en-US');
const short = (revision: string) => revision.slice(0, 12);

/** What the text report of a test run names. */
export interface TestRunReportOptions {
  /** The policy as the user named it (`built-in` for the built-in one). */
  policyName: string;
  /** How to give the policy tests, shown when there were none: `pass test files after …`. */
  whereTestsGo: string;
}

/** The text report of a policy test run. */
export function formatTestRun(run: PolicyTestRun, options: TestRunReportOptions): string {
  const lines = [`Policy ${options.policyName} (revision ${short(run.revision)})`, ''];
  if (run.files.length === 0) lines.push(`No test files: ${options.whereTestsGo}`, '');
  for (const file of run.files) {
    lines.push(file.path);
    if (file.cases.length === 0) lines.push('  (no cases)');
    for (const c of file.cases) {
      lines.push(`  ${c.passed ? '✓' : '✗'} ${c.name}`);
      for (const f of c.failures) {
        if (f.field === 'setup') {
          lines.push(`      could not run: ${f.actual}`);
          continue;
        }
        lines.push(`      ${f.field.padEnd(8)} expected ${f.expected}, got ${f.actual}`);
        for (const m of f.missing ?? []) lines.push(`        missing:    ${m}`);
        for (const u of f.unexpected ?? []) lines.push(`        unexpected: ${u}`);
      }
      if (!c.passed && c.decision) lines.push(`      answer   ${c.decision.verdict}: ${c.decision.reason}`);
    }
    lines.push('');
  }
  const rules = run.coverage;
  const silent = rules.filter((r) => r.fired === 0);
  lines.push(`Rule coverage: ${rules.length - silent.length} of ${rules.length} rules fired`);
  for (const r of silent) {
    lines.push(`  never fired: ${r.rule} (${r.mode === 'shadow' ? 'shadow, ' : ''}${r.scope})`);
  }
  const { cases, passed, failed } = run.totals;
  lines.push('', `${cases} case${cases === 1 ? '' : 's'}: ${passed} passed, ${failed} failed`);
  return `${lines.join('\n')}\n`;
}

// A JUnit report is a dozen elements: written here rather than adding an XML library for it.
const xml = (text: string) =>
  text.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

/** The JUnit XML report of a policy test run (one testsuite per file). */
export function formatTestRunJunit(run: PolicyTestRun): string {
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="gatehouse policy test" tests="${run.totals.cases}" failures="${run.totals.failed}">`,
  ];
  for (const file of run.files) {
    const failures = file.cases.filter((c) => !c.passed).length;
    out.push(`  <testsuite name="${xml(file.path)}" tests="${file.cases.length}" failures="${failures}">`);
    for (const c of file.cases) {
      const time = (c.duration_ms / 1000).toFixed(3);
      const open = `    <testcase name="${xml(c.name)}" classname="${xml(file.path)}" time="${time}"`;
      if (c.passed) {
        out.push(`${open}/>`);
        continue;
      }
      const detail = c.failures
        .map((f) =>
          [
            `${f.field}: expected ${f.expected}, got ${f.actual}`,
            ...(f.missing ?? []).map((m) => `  missing: ${m}`),
            ...(f.unexpected ?? []).map((u) => `  unexpected: ${u}`),
          ].join('\n'),
        )
        .join('\n');
      const message = c.failures.map((f) => `${f.field}: expected ${f.expected}, got ${f.actual}`).join('; ');
      out.push(
        `${open}>`,
        `      <failure message="${xml(message)}">${xml(detail)}</failure>`,
        '    </testcase>',
      );
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

/** The text report of a replay. */
export function formatReplay(report: ReplayReport): string {
  const lines: string[] = [];
  const f = report.filters;
  const scope = [
    f.since && `since ${f.since}`,
    f.until && `until ${f.until}`,
    f.session_id && `session ${f.session_id}`,
    f.action && `action ${f.action}`,
  ].filter(Boolean);
  lines.push(
    `Replayed ${n(report.decisions)} recorded decision${report.decisions === 1 ? '' : 's'} against candidate ${short(report.candidate.revision)}` +
      (scope.length > 0 ? ` (${scope.join(', ')})` : ''),
    `  history seq ${n(report.from_seq + 1)} to ${n(report.to_seq)}; each on the state at its position and its own time`,
    '',
  );
  if (report.decisions === 0) {
    lines.push('No recorded decision matched.');
    return `${lines.join('\n')}\n`;
  }
  const verdicts = ['Allow', 'Warn', 'Block'] as const;
  const cell = (from: string, to: string) =>
    report.by_verdict.find((v) => v.from === from && v.to === to)?.count ?? 0;
  const width = Math.max(7, ...report.by_verdict.map((v) => n(v.count).length + 2));
  lines.push('Verdicts, recorded (rows) -> candidate (columns):');
  lines.push(`  ${''.padEnd(8)}${verdicts.map((v) => v.padStart(width)).join('')}`);
  for (const from of verdicts) {
    lines.push(`  ${from.padEnd(8)}${verdicts.map((to) => n(cell(from, to)).padStart(width)).join('')}`);
  }
  lines.push(
    '',
    `  unchanged ${n(report.unchanged)}   verdict changed ${n(report.changed)}   same verdict, other rules ${n(report.rules_changed)}` +
      (report.pinned > 0 ? `   pinned ${n(report.pinned)}` : ''),
    '',
  );
  const ruleWidth = Math.max(4, ...report.rules.map((r) => r.rule.length));
  lines.push(
    `Rules (decisions they fired in):`,
    `  ${'rule'.padEnd(ruleWidth)}  ${'before'.padStart(9)}  ${'now'.padStart(9)}`,
  );
  for (const r of report.rules) {
    const note =
      r.before === 0 && r.now > 0
        ? '  new'
        : r.before > 0 && r.now === 0
          ? '  gone'
          : r.now === 0
            ? '  never'
            : '';
    lines.push(`  ${r.rule.padEnd(ruleWidth)}  ${n(r.before).padStart(9)}  ${n(r.now).padStart(9)}${note}`);
  }
  if (report.examples.length > 0) {
    lines.push('', 'Examples:');
    for (const e of report.examples) {
      lines.push(
        `  ${e.decision_id}  ${e.action}  session ${e.session_id}  ${e.evaluated_at}`,
        `    before: ${e.before.verdict.padEnd(5)} ${e.before.reason}  [${e.before.rules.join(', ')}]`,
        `    now:    ${e.after.verdict.padEnd(5)} ${e.after.reason}  [${e.after.rules.join(', ')}]`,
      );
    }
  }
  if (report.next_after_seq !== null) {
    const why = report.stopped_by === 'time_budget' ? 'the time budget (20 s)' : 'the limit';
    lines.push('', `Stopped at ${why}: continue with --after-seq ${report.next_after_seq}.`);
  }
  if (report.event_id) lines.push('', `Recorded as ${report.event_id} (policy.replayed).`);
  return `${lines.join('\n')}\n`;
}
