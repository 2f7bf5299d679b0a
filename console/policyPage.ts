/**
 * Policy (issue 17): the active revision with its source and rules, the stored revisions (paged)
 * with a line diff against the active one, a replay form (candidate YAML or a stored revision,
 * with filters) and its report, and activation with `If-Match` for keys with `policy:write`.
 * The shapes are those of `src/lifecycle/lifecycleSchemas.ts`.
 */
import { ApiError, call, get, post, seg } from './api.js';
import { badge, errorBox, facts, h, link, replace, row, shortId, table, time } from './dom.js';
import { lineDiff } from './lineDiff.js';
import type { Page, PageContext } from './pageTypes.js';

/** `GET /v1/policy`. */
interface ActivePolicy {
  revision: string;
  source: string;
  rules: Array<{ name: string; verdict: string; mode: string; scope: string }>;
  activated_by: string | null;
  activated_at: string | null;
  seq: number | null;
}

/** A row of `GET /v1/policy/revisions`. */
interface RevisionSummary {
  revision: string;
  created_by: string;
  created_at: string;
  active: boolean;
}

/** `GET /v1/policy/revisions/{id}`. */
interface Revision extends RevisionSummary {
  source: string;
}

/** One side of a changed decision. */
interface ReplaySide {
  verdict: string;
  reason: string;
  rules: string[];
}

/** `POST /v1/policy/replay`. */
interface ReplayReport {
  candidate: { revision: string };
  filters: { since: string | null; until: string | null; session_id: string | null; action: string | null };
  decisions: number;
  unchanged: number;
  changed: number;
  rules_changed: number;
  pinned: number;
  unreplayable: number;
  unreplayable_reasons: { inputs_erased: number; state_erased: number };
  by_verdict: Array<{ from: string; to: string; count: number }>;
  rules: Array<{ rule: string; before: number; now: number }>;
  recorded_revisions: Array<{ revision: string; decisions: number }>;
  examples: Array<{
    decision_id: string;
    seq: number;
    session_id: string;
    action: string;
    evaluated_at: string;
    before: ReplaySide;
    after: ReplaySide;
  }>;
  from_seq: number;
  to_seq: number;
  next_after_seq: number | null;
  event_id: string | null;
}

/** Unchanged lines shown around each change; longer unchanged runs fold into one line. */
const CONTEXT = 3;

function diffView(a: string, b: string): HTMLElement {
  const pre = h('pre', { class: 'diff', 'aria-label': 'Differences, - removed, + added' });
  const lines = lineDiff(a, b);
  const near = lines.map(() => false);
  lines.forEach(({ op }, i) => {
    if (op === ' ') return;
    for (let k = Math.max(0, i - CONTEXT); k <= Math.min(lines.length - 1, i + CONTEXT); k++) near[k] = true;
  });
  let folded = 0;
  const fold = () => {
    if (folded)
      pre.append(h('span', { class: 'fold' }, `  … ${folded} unchanged line${folded === 1 ? '' : 's'}\n`));
    folded = 0;
  };
  lines.forEach(({ op, line }, i) => {
    if (!near[i]) {
      folded++;
      return;
    }
    fold();
    pre.append(h('span', { class: op === '+' ? 'add' : op === '-' ? 'del' : '' }, `${op} ${line}\n`));
  });
  fold();
  if (!lines.some((l) => l.op !== ' ')) replace(pre, h('span', { class: 'fold' }, 'No difference.'));
  return pre;
}

const num = (n: number) => h('td', { class: 'num' }, n.toLocaleString());
const who = (by: string | null, ctx: PageContext) =>
  by === null ? '—' : by === ctx.me.key_id ? `${by} (you)` : by;

/** The rules that fired on one side of a changed decision, as `rule:verdict` codes. */
const fired = (side: ReplaySide) =>
  side.rules.length
    ? h('span', { class: 'mono' }, side.rules.join(', '))
    : h('span', { class: 'muted' }, 'none');

function replayReport(report: ReplayReport): HTMLElement {
  const filters = Object.entries(report.filters)
    .filter(([, v]) => v !== null)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  return h(
    'div',
    { class: 'replay-report' },
    h(
      'h3',
      {},
      `Seq ${report.from_seq + 1} to ${report.to_seq}: ${report.changed} of ${report.decisions} decisions would change verdict`,
    ),
    facts([
      ['Candidate', h('span', { class: 'mono' }, report.candidate.revision)],
      ['Filters', filters || 'none'],
      ['Decisions replayed', String(report.decisions)],
      ['Verdict changed', String(report.changed)],
      ['Same verdict, other rules', String(report.rules_changed)],
      ['Unchanged', String(report.unchanged)],
      ['Pinned to recorded versions', String(report.pinned)],
      [
        'Not replayed: values erased',
        report.unreplayable === 0
          ? '0'
          : `${report.unreplayable} (params or context ${report.unreplayable_reasons.inputs_erased}, state read ${report.unreplayable_reasons.state_erased})`,
      ],
      [
        'Recorded under',
        report.recorded_revisions.length
          ? h(
              'span',
              {},
              ...report.recorded_revisions.flatMap((r, i) => [
                i ? ', ' : '',
                shortId(r.revision, 12),
                ` (${r.decisions})`,
              ]),
            )
          : '—',
      ],
      ['Recorded as event', report.event_id ? h('span', { class: 'mono' }, report.event_id) : '—'],
    ]),
    table(
      'Decisions by recorded → candidate verdict',
      ['Recorded', 'Candidate', { text: 'Decisions', class: 'num' }],
      report.by_verdict.map((t) => row(badge(t.from), badge(t.to), num(t.count))),
      'No decision in range.',
    ),
    table(
      'Decisions each rule fired in',
      ['Rule', { text: 'Recorded', class: 'num' }, { text: 'Candidate', class: 'num' }],
      report.rules.map((r) =>
        h(
          'tr',
          { class: r.before === r.now ? '' : 'changed' },
          h('td', { class: 'mono' }, r.rule),
          num(r.before),
          num(r.now),
        ),
      ),
      'No rule fired either way.',
    ),
    table(
      report.changed > report.examples.length
        ? `Changed decisions: the first ${report.examples.length} of ${report.changed}`
        : 'Changed decisions',
      ['Decision', 'Session', 'Action', 'Evaluated', 'Recorded', 'Candidate', 'Candidate reason'],
      report.examples.map((e) =>
        row(
          link(`decisions/${seg(e.decision_id)}`, shortId(e.decision_id)),
          link(`sessions/${seg(e.session_id)}`, e.session_id),
          h('span', { class: 'mono' }, e.action),
          time(e.evaluated_at),
          h('span', {}, badge(e.before.verdict), ' ', fired(e.before)),
          h('span', {}, badge(e.after.verdict), ' ', fired(e.after)),
          e.after.reason,
        ),
      ),
      'No decision would change verdict.',
    ),
  );
}

async function render(root: HTMLElement, ctx: PageContext): Promise<void> {
  const active = await get<ActivePolicy>('/v1/policy');
  const first = await get<{ revisions: RevisionSummary[]; next_cursor: string | null }>(
    '/v1/policy/revisions',
    { limit: 20 },
  );
  const writer = ctx.can('policy:write');
  const sources = new Map<string, Promise<Revision>>();
  const revision = (id: string) => {
    let found = sources.get(id);
    if (!found) {
      found = get<Revision>(`/v1/policy/revisions/${seg(id)}`);
      found.catch(() => sources.delete(id));
      sources.set(id, found);
    }
    return found;
  };

  // ---- activation (policy:write) ----------------------------------------------------------------
  // Below the replay form, where the "Activate candidate" button is; scrolled to when it changes.
  const activation = h('div', { 'aria-live': 'polite', id: 'activation' });
  /** A refused activation: status and code first, each policy problem, and after a 412 a way out. */
  const refused = (error: unknown) => {
    const box = errorBox(error);
    if (error instanceof ApiError) {
      (box.tagName === 'P' ? box : box.firstElementChild!).prepend(
        h('strong', {}, `${error.status} ${error.code}: `),
      );
      if (error.status === 412)
        box.append(
          ' ',
          h(
            'button',
            { type: 'button', class: 'secondary', onclick: () => ctx.navigate('policy') },
            'Read the active policy again',
          ),
        );
    }
    replace(activation, box);
    activation.scrollIntoView({ block: 'nearest' });
  };
  const activate = async (source: string, what: string) => {
    replace(activation, h('p', { class: 'muted' }, `Activating ${what}…`));
    activation.scrollIntoView({ block: 'nearest' });
    try {
      // If-Match names the revision this page shows: a 412 says someone activated another since.
      const now = await call<ActivePolicy>('PUT', '/v1/policy', {
        body: { policy: source },
        headers: { 'if-match': `"${active.revision}"` },
      });
      ctx.navigate(`policy?activated=${now.revision}`);
    } catch (error) {
      refused(error);
    }
  };

  // ---- revisions --------------------------------------------------------------------------------
  const diffArea = h('div', { 'aria-live': 'polite', id: 'diff' });
  const showDiff = async (id: string) => {
    replace(diffArea, h('p', { class: 'muted' }, 'Loading…'));
    try {
      const r = await revision(id);
      replace(
        diffArea,
        h('h3', {}, 'Revision ', shortId(id, 12), ' → active ', shortId(active.revision, 12)),
        diffView(r.source, active.source),
      );
      diffArea.scrollIntoView({ block: 'nearest' });
    } catch (error) {
      replace(diffArea, errorBox(error));
    }
  };
  // Set by the replay form (writers only): a revision row's "Replay" button picks it there.
  let useRevision: (id: string) => void = () => {};
  const known: RevisionSummary[] = [];
  const revisionRows = h('tbody');
  const addRevisions = (list: RevisionSummary[]) => {
    known.push(...list);
    for (const r of list) {
      const short = r.revision.slice(0, 12);
      revisionRows.append(
        row(
          h('span', { class: 'mono', title: r.revision }, short),
          r.active ? badge('active') : '',
          time(r.created_at),
          who(r.created_by, ctx),
          h(
            'span',
            { class: 'toolbar' },
            r.active
              ? null
              : h(
                  'button',
                  {
                    type: 'button',
                    class: 'secondary',
                    'aria-label': `Diff ${short} with active`,
                    onclick: () => showDiff(r.revision),
                  },
                  'Diff with active',
                ),
            writer
              ? h(
                  'button',
                  {
                    type: 'button',
                    class: 'secondary',
                    'aria-label': `Replay ${short}`,
                    onclick: () => useRevision(r.revision),
                  },
                  'Replay',
                )
              : null,
            writer && !r.active
              ? h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Activate ${short}`,
                    onclick: async () => {
                      try {
                        await activate((await revision(r.revision)).source, `revision ${short}`);
                      } catch (error) {
                        refused(error);
                      }
                    },
                  },
                  'Activate',
                )
              : null,
          ),
        ),
      );
    }
  };
  const revisionsTable = h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { id: 'revisions' },
      h('caption', {}, 'Stored revisions, newest first'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['Revision', 'State', 'Created', 'By', 'Actions'].map((x) => h('th', { scope: 'col' }, x)),
        ),
      ),
      revisionRows,
    ),
  );
  let cursor = first.next_cursor;
  const more = h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      hidden: cursor === null,
      onclick: async () => {
        try {
          const page = await get<{ revisions: RevisionSummary[]; next_cursor: string | null }>(
            '/v1/policy/revisions',
            { limit: 20, cursor: cursor ?? undefined },
          );
          addRevisions(page.revisions);
          cursor = page.next_cursor;
          more.hidden = cursor === null;
        } catch (error) {
          replace(diffArea, errorBox(error));
        }
      },
    },
    'More revisions',
  );
  addRevisions(first.revisions);
  if (first.revisions.length === 0)
    revisionRows.append(
      h(
        'tr',
        {},
        h('td', { colspan: 5, class: 'muted' }, 'No revision stored yet: the instance policy is in force.'),
      ),
    );

  // ---- replay (policy:write) --------------------------------------------------------------------
  const replaySection = h(
    'section',
    { 'aria-labelledby': 'h-replay' },
    h('h2', { id: 'h-replay' }, 'Replay a candidate'),
  );
  if (writer) {
    const yamlChoice = h('input', {
      type: 'radio',
      name: 'candidate-kind',
      id: 'c-yaml',
      value: 'policy',
      checked: true,
    });
    const revisionChoice = h('input', {
      type: 'radio',
      name: 'candidate-kind',
      id: 'c-rev',
      value: 'revision',
    });
    const candidate = h('textarea', { id: 'candidate', spellcheck: 'false', rows: 16 }, active.source);
    const pick = h(
      'select',
      { id: 'c-revision' },
      ...known.map((r) =>
        h('option', { value: r.revision }, `${r.revision.slice(0, 12)}${r.active ? ' (active)' : ''}`),
      ),
    );
    const since = h('input', { id: 'r-since', type: 'datetime-local', step: 1 });
    const until = h('input', { id: 'r-until', type: 'datetime-local', step: 1 });
    const session = h('input', { id: 'r-session', autocomplete: 'off' });
    const action = h('input', { id: 'r-action', autocomplete: 'off', placeholder: 'payments.*' });
    const limit = h('input', { id: 'r-limit', type: 'number', min: 1, max: 100000, placeholder: '100000' });
    const result = h('div', { 'aria-live': 'polite', id: 'replay-result' });
    const iso = (v: string) => (v ? new Date(v).toISOString() : undefined);
    const sync = () => {
      candidate.disabled = !yamlChoice.checked;
      pick.disabled = !revisionChoice.checked;
    };
    yamlChoice.addEventListener('change', sync);
    revisionChoice.addEventListener('change', sync);
    sync();
    useRevision = (id: string) => {
      if (![...pick.options].some((o) => o.value === id))
        pick.append(h('option', { value: id }, id.slice(0, 12)));
      pick.value = id;
      revisionChoice.checked = true;
      sync();
      replaySection.scrollIntoView({ block: 'start' });
      pick.focus();
    };

    const runReplay = async (body: Record<string, unknown>, into: HTMLElement) => {
      try {
        const report = await post<ReplayReport>('/v1/policy/replay', body);
        const part = h('div', {}, replayReport(report));
        if (report.next_after_seq !== null) {
          const next = report.next_after_seq;
          const button = h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              onclick: async () => {
                button.disabled = true;
                const rest = h('div', {}, h('p', { class: 'muted' }, 'Replaying…'));
                part.append(rest);
                await runReplay({ ...body, after_seq: next }, rest);
                button.remove();
              },
            },
            `Continue after seq ${next}`,
          );
          part.append(h('p', {}, button));
        }
        replace(into, part);
      } catch (error) {
        replace(into, errorBox(error));
      }
    };

    replaySection.append(
      h(
        'form',
        {
          'aria-label': 'Replay',
          onsubmit: async (event: Event) => {
            event.preventDefault();
            replace(result, h('p', { class: 'muted' }, 'Replaying…'));
            const body = Object.fromEntries(
              Object.entries({
                policy: yamlChoice.checked ? candidate.value : undefined,
                revision: revisionChoice.checked ? pick.value : undefined,
                since: iso(since.value),
                until: iso(until.value),
                session_id: session.value.trim() || undefined,
                action: action.value.trim() || undefined,
                limit: Number(limit.value) || undefined,
              }).filter(([, v]) => v !== undefined),
            );
            await runReplay(body, result);
          },
        },
        h(
          'fieldset',
          {},
          h('legend', {}, 'Candidate'),
          h('label', { for: 'c-yaml', class: 'inline' }, yamlChoice, ' Policy YAML'),
          h('label', { for: 'c-rev', class: 'inline' }, revisionChoice, ' Stored revision'),
          h('label', { for: 'c-revision' }, 'Revision', pick),
          h('label', { for: 'candidate' }, 'Candidate policy (YAML)', candidate),
        ),
        h(
          'div',
          { class: 'filters' },
          h('label', { for: 'r-since' }, 'Since', since),
          h('label', { for: 'r-until' }, 'Until', until),
          h('label', { for: 'r-session' }, 'Session', session),
          h('label', { for: 'r-action' }, 'Action', action),
          h('label', { for: 'r-limit' }, 'At most', limit),
          h('button', { type: 'submit' }, 'Run replay'),
          h(
            'button',
            {
              type: 'button',
              class: 'danger',
              onclick: () =>
                yamlChoice.checked
                  ? activate(candidate.value, 'the candidate')
                  : revision(pick.value).then(
                      (r) => activate(r.source, `revision ${pick.value.slice(0, 12)}`),
                      refused,
                    ),
            },
            'Activate candidate',
          ),
        ),
      ),
      activation,
      result,
    );
  } else {
    replaySection.append(
      h('p', { class: 'muted' }, 'Replaying or activating a policy needs a key with the policy:write scope.'),
    );
  }

  const activated = ctx.query.get('activated');
  replace(
    root,
    activated === active.revision
      ? h('p', { class: 'notice', role: 'status' }, 'Activated revision ', shortId(activated, 12), '.')
      : null,
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'h-active' },
      h('h2', { id: 'h-active' }, 'Active revision'),
      facts([
        ['Revision', h('span', { class: 'mono', id: 'active-revision' }, active.revision)],
        ['Activated', active.activated_at ? time(active.activated_at) : 'not recorded (instance policy)'],
        ['By', who(active.activated_by, ctx)],
        ['Event', active.seq === null ? '—' : `seq ${active.seq}`],
      ]),
      table(
        'Named rules',
        ['Rule', 'Verdict', 'Mode', 'Scope'],
        active.rules.map((r) =>
          row(
            h('span', { class: 'mono' }, r.name),
            badge(r.verdict),
            r.mode,
            h('span', { class: 'mono' }, r.scope),
          ),
        ),
        'This policy has no named rule.',
      ),
      h('details', {}, h('summary', {}, 'Source (YAML)'), h('pre', { id: 'active-source' }, active.source)),
    ),
    h('h2', {}, 'Revisions'),
    revisionsTable,
    more,
    diffArea,
    replaySection,
  );
}

/** The policy page. */
export const policyPage: Page = {
  path: 'policy',
  title: 'Policy',
  nav: { label: 'Policy', href: 'policy' },
  // `GET /v1/policy` needs history:read; other keys would only see its 403.
  scopes: ['history:read'],
  probe: '/v1/policy',
  render,
};
