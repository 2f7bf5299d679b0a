/**
 * What `gatehouse policy test` and `gatehouse policy replay` print: plain text for people, JUnit
 * XML for CI. The JSON forms are the core's own result objects. Names, reasons and actions come
 * from policies, test files and recorded decisions (an agent's action and params): each is
 * escaped for the terminal, each line written here is the report's own.
 */
import type { PolicyTestRun, ReplayReport } from '../../src/index.js';
import { terminalSafe, terminalText } from './terminalText.js';

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
  const lines = [terminalText`Policy ${options.policyName} (revision ${short(run.revision)})`, ''];
  if (run.files.length === 0) lines.push(terminalText`No test files: ${options.whereTestsGo}`, '');
  for (const file of run.files) {
    lines.push(terminalSafe(file.path));
    if (file.cases.length === 0) lines.push('  (no cases)');
    for (const c of file.cases) {
      lines.push(terminalText`  ${c.passed ? '✓' : '✗'} ${c.name}`);
      for (const f of c.failures) {
        if (f.field === 'setup') {
          lines.push(terminalText`      could not run: ${f.actual}`);
          continue;
        }
        lines.push(terminalText`      ${f.field.padEnd(8)} expected ${f.expected}, got ${f.actual}`);
        for (const m of f.missing ?? []) lines.push(terminalText`        missing:    ${m}`);
        for (const u of f.unexpected ?? []) lines.push(terminalText`        unexpected: ${u}`);
      }
      if (!c.passed && c.decision) {
        lines.push(terminalText`      answer   ${c.decision.verdict}: ${c.decision.reason}`);
      }
    }
    lines.push('');
  }
  const rules = run.coverage;
  const silent = rules.filter((r) => r.fired === 0);
  lines.push(`Rule coverage: ${rules.length - silent.length} of ${rules.length} rules fired`);
  for (const r of silent) {
    lines.push(terminalText`  never fired: ${r.rule} (${r.mode === 'shadow' ? 'shadow, ' : ''}${r.scope})`);
  }
  const { cases, passed, failed } = run.totals;
  lines.push('', `${cases} case${cases === 1 ? '' : 's'}: ${passed} passed, ${failed} failed`);
  return `${lines.join('\n')}\n`;
}

// A JUnit report is a dozen elements: written here rather than adding an XML library for it.
// XML 1.0 cannot carry most control characters even as references, and CI logs print the
// report: each value is escaped for the terminal first, which also keeps the document valid.
const xml = (text: string) =>
  terminalSafe(text).replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

// Markup escapes only, for text whose values went through terminalSafe and whose breaks are ours.
const xmlText = (text: string) => text.split('\n').map(xml).join('\n');

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
            terminalText`${f.field}: expected ${f.expected}, got ${f.actual}`,
            ...(f.missing ?? []).map((m) => terminalText`  missing: ${m}`),
            ...(f.unexpected ?? []).map((u) => terminalText`  unexpected: ${u}`),
          ].join('\n'),
        )
        .join('\n');
      const message = c.failures.map((f) => `${f.field}: expected ${f.expected}, got ${f.actual}`).join('; ');
      out.push(
        `${open}>`,
        // The detail's lines are escaped already; its line breaks are the report's own.
        `      <failure message="${xml(message)}">${xmlText(detail)}</failure>`,
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
    f.since && terminalText`since ${f.since}`,
    f.until && terminalText`until ${f.until}`,
    f.session_id && terminalText`session ${f.session_id}`,
    f.action && terminalText`action ${f.action}`,
  ].filter(Boolean);
  lines.push(
    terminalText`Replayed ${n(report.decisions)} recorded decision${report.decisions === 1 ? '' : 's'} against candidate ${short(report.candidate.revision)}` +
      (scope.length > 0 ? ` (${scope.join(', ')})` : ''),
    `  history seq ${n(report.from_seq + 1)} to ${n(report.to_seq)}; each on the state at its position and its own time`,
    '',
  );
  if (report.unreplayable > 0) {
    const { inputs_erased, state_erased } = report.unreplayable_reasons;
    lines.push(
      `Not replayed: ${n(report.unreplayable)} decision${report.unreplayable === 1 ? '' : 's'} rested on erased values (params or context erased ${n(inputs_erased)}, state read erased ${n(state_erased)}); see docs/replay.md`,
      '',
    );
  }
  if (report.decisions === 0) {
    lines.push(
      report.unreplayable > 0 ? 'No other recorded decision matched.' : 'No recorded decision matched.',
    );
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
  const rules = report.rules.map((r) => ({ ...r, rule: terminalSafe(r.rule) }));
  const ruleWidth = Math.max(4, ...rules.map((r) => r.rule.length));
  lines.push(
    `Rules (decisions they fired in):`,
    `  ${'rule'.padEnd(ruleWidth)}  ${'before'.padStart(9)}  ${'now'.padStart(9)}`,
  );
  for (const r of rules) {
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
        terminalText`  ${e.decision_id}  ${e.action}  session ${e.session_id}  ${e.evaluated_at}`,
        terminalText`    before: ${e.before.verdict.padEnd(5)} ${e.before.reason}  [${e.before.rules.join(', ')}]`,
        terminalText`    now:    ${e.after.verdict.padEnd(5)} ${e.after.reason}  [${e.after.rules.join(', ')}]`,
      );
    }
  }
  if (report.next_after_seq !== null) {
    const why = report.stopped_by === 'time_budget' ? 'the time budget (20 s)' : 'the limit';
    lines.push('', `Stopped at ${why}: continue with --after-seq ${report.next_after_seq}.`);
  }
  if (report.event_id) lines.push('', terminalText`Recorded as ${report.event_id} (policy.replayed).`);
  return `${lines.join('\n')}\n`;
}
