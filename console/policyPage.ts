/**
 * Policy (issue 17): the active revision, the revisions with a diff between two, and a replay
 * form whose result table links to the decisions that would change. Written against the routes
 * the issue names (`GET /v1/policy`, `GET /v1/policy/revisions[/{id}]`, `POST /v1/policy/replay`);
 * the shell hides the page where the server answers 404. Fields are read defensively until that
 * API's shape is final.
 */
import { get, post, seg } from './api.js';
import { badge, errorBox, facts, h, json, link, replace, row, shortId, table, time } from './dom.js';
import type { Page, PageContext } from './pageTypes.js';

interface Revision {
  id?: string;
  revision?: string;
  source?: string;
  created_at?: string;
  activated_at?: string;
  created_by?: string | null;
  activated_by?: string | null;
}

const revisionId = (r: Revision) => r.id ?? r.revision ?? '';

/** Lines of `a` and `b` as kept / removed / added (a longest-common-subsequence diff). */
export function lineDiff(a: string, b: string): Array<{ op: ' ' | '-' | '+'; line: string }> {
  const x = a.split('\n');
  const y = b.split('\n');
  // Policies are small (a few hundred lines): the quadratic table is fine.
  const lcs: number[][] = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const out: Array<{ op: ' ' | '-' | '+'; line: string }> = [];
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    if (x[i] === y[j]) {
      out.push({ op: ' ', line: x[i]! });
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) out.push({ op: '-', line: x[i++]! });
    else out.push({ op: '+', line: y[j++]! });
  }
  while (i < x.length) out.push({ op: '-', line: x[i++]! });
  while (j < y.length) out.push({ op: '+', line: y[j++]! });
  return out;
}

function diffView(a: string, b: string): HTMLElement {
  const pre = h('pre', { class: 'diff', 'aria-label': 'Differences, - removed, + added' });
  for (const { op, line } of lineDiff(a, b)) {
    pre.append(h('span', { class: op === '+' ? 'add' : op === '-' ? 'del' : '' }, `${op} ${line}\n`));
  }
  return pre;
}

function replayResult(result: Record<string, unknown>): HTMLElement {
  const parts: Node[] = [];
  const scalars = Object.entries(result).filter(([, v]) => typeof v === 'number' || typeof v === 'string');
  if (scalars.length) parts.push(facts(scalars.map(([k, v]) => [k, String(v)])));
  const counts = (result['transitions'] ?? result['counts'] ?? result['by_verdict']) as
    | Record<string, unknown>
    | unknown[]
    | undefined;
  if (counts && typeof counts === 'object') {
    const entries = Array.isArray(counts)
      ? counts.map((c) => {
          const t = c as Record<string, unknown>;
          return [
            `${String(t['from'] ?? t['old'])} → ${String(t['to'] ?? t['new'])}`,
            t['count'] ?? t['n'],
          ] as const;
        })
      : Object.entries(counts);
    parts.push(
      table(
        'Decisions by old → new verdict',
        ['Old → new', { text: 'Decisions', class: 'num' }],
        entries.map(([k, n]) => row(String(k), h('td', { class: 'num' }, String(n)))),
      ),
    );
  }
  const examples = (result['examples'] ?? result['changed_decisions'] ?? result['details']) as
    | Array<Record<string, unknown>>
    | undefined;
  if (Array.isArray(examples)) {
    parts.push(
      table(
        'Decisions whose verdict would change',
        ['Decision', 'Action', 'Old', 'New', 'New reason'],
        examples.map((e) => {
          const id = String(e['decision_id'] ?? '');
          return row(
            id ? link(`decisions/${seg(id)}`, shortId(id)) : '—',
            String(e['action'] ?? '—'),
            badge(String(e['old_verdict'] ?? e['before'] ?? '')),
            badge(String(e['new_verdict'] ?? e['after'] ?? '')),
            String(e['new_reason'] ?? e['reason'] ?? ''),
          );
        }),
        'No decision would change.',
      ),
    );
  }
  if (parts.length === 0) parts.push(json(result));
  return h('div', { id: 'replay-result' }, ...parts);
}

async function render(root: HTMLElement, ctx: PageContext): Promise<void> {
  const active = await get<Revision & Record<string, unknown>>('/v1/policy');
  const { revisions } = await get<{ revisions: Revision[] }>('/v1/policy/revisions', { limit: 50 });
  const diffArea = h('div', { 'aria-live': 'polite' });
  const pickA = h(
    'select',
    { id: 'rev-a' },
    ...revisions.map((r, i) =>
      h('option', { value: revisionId(r), selected: i === 1 }, revisionId(r).slice(0, 12)),
    ),
  );
  const pickB = h(
    'select',
    { id: 'rev-b' },
    ...revisions.map((r, i) =>
      h('option', { value: revisionId(r), selected: i === 0 }, revisionId(r).slice(0, 12)),
    ),
  );
  const showDiff = async (event: Event) => {
    event.preventDefault();
    try {
      const [a, b] = await Promise.all([
        get<Revision>(`/v1/policy/revisions/${seg(pickA.value)}`),
        get<Revision>(`/v1/policy/revisions/${seg(pickB.value)}`),
      ]);
      replace(diffArea, diffView(a.source ?? '', b.source ?? ''));
    } catch (error) {
      replace(diffArea, errorBox(error));
    }
  };

  const replaySection = h(
    'section',
    { 'aria-labelledby': 'h-replay' },
    h('h2', { id: 'h-replay' }, 'Replay a candidate'),
  );
  if (ctx.can('policy:write') || ctx.can('policy:replay')) {
    const candidate = h(
      'textarea',
      { id: 'candidate', name: 'policy', required: true, spellcheck: 'false' },
      typeof active['source'] === 'string' ? active['source'] : '',
    );
    const since = h('input', { id: 'r-since', type: 'datetime-local' });
    const until = h('input', { id: 'r-until', type: 'datetime-local' });
    const session = h('input', { id: 'r-session', autocomplete: 'off' });
    const action = h('input', { id: 'r-action', autocomplete: 'off' });
    const limit = h('input', { id: 'r-limit', type: 'number', min: 1, max: 100000, value: 1000 });
    const result = h('div', { 'aria-live': 'polite' });
    const iso = (v: string) => (v ? new Date(v).toISOString() : undefined);
    replaySection.append(
      h(
        'form',
        {
          onsubmit: async (event: Event) => {
            event.preventDefault();
            replace(result, h('p', { class: 'muted' }, 'Replaying…'));
            try {
              const body = Object.fromEntries(
                Object.entries({
                  policy: candidate.value,
                  since: iso(since.value),
                  until: iso(until.value),
                  session_id: session.value.trim() || undefined,
                  action: action.value.trim() || undefined,
                  limit: Number(limit.value) || undefined,
                }).filter(([, v]) => v !== undefined),
              );
              replace(result, replayResult(await post<Record<string, unknown>>('/v1/policy/replay', body)));
            } catch (error) {
              replace(result, errorBox(error));
            }
          },
        },
        h('label', { for: 'candidate' }, 'Candidate policy (YAML)', candidate),
        h(
          'div',
          { class: 'filters' },
          h('label', { for: 'r-since' }, 'Since', since),
          h('label', { for: 'r-until' }, 'Until', until),
          h('label', { for: 'r-session' }, 'Session', session),
          h('label', { for: 'r-action' }, 'Action', action),
          h('label', { for: 'r-limit' }, 'At most', limit),
          h('button', { type: 'submit' }, 'Run replay'),
        ),
      ),
      result,
    );
  } else
    replaySection.append(
      h('p', { class: 'muted' }, 'Replaying a candidate needs a key with the policy:write scope.'),
    );

  replace(
    root,
    h(
      'section',
      { class: 'panel', 'aria-label': 'Active revision' },
      facts([
        ['Active revision', h('span', { class: 'mono' }, revisionId(active))],
        ['Activated', time(active.activated_at ?? active.created_at)],
        ['By', active.activated_by ?? active.created_by ?? '—'],
      ]),
    ),
    h('h2', {}, 'Revisions'),
    table(
      'Every policy that was active, newest first',
      ['Revision', 'Activated', 'By'],
      revisions.map((r) =>
        row(
          h('span', { class: 'mono' }, revisionId(r).slice(0, 16)),
          time(r.activated_at ?? r.created_at),
          r.activated_by ?? r.created_by ?? '—',
        ),
      ),
    ),
    revisions.length > 1
      ? h(
          'form',
          { class: 'filters', onsubmit: showDiff, 'aria-label': 'Compare two revisions' },
          h('label', { for: 'rev-a' }, 'From', pickA),
          h('label', { for: 'rev-b' }, 'To', pickB),
          h('button', { type: 'submit', class: 'secondary' }, 'Show diff'),
        )
      : null,
    diffArea,
    replaySection,
  );
}

/** The policy page. */
export const policyPage: Page = {
  path: 'policy',
  title: 'Policy',
  nav: { label: 'Policy', href: 'policy' },
  probe: '/v1/policy',
  render,
};
