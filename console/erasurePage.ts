/**
 * Erasure (docs/data-lifecycle.md): erase what callers wrote into one session, or into every
 * session tagged with a subject. A dry run first lists what would go; the real erasure needs the
 * session or subject typed again. The shapes are `ErasureReport` and `SubjectErasureReport` of
 * `src/schemas.ts`. Overriding a legal hold is left to the API and the CLI, on purpose.
 */
import { ApiError, post, seg } from './api.js';
import { errorBox, facts, h, link, replace, row, shortId, table } from './dom.js';
import type { Page, PageContext } from './pageTypes.js';

/** `POST /v1/erasures`: what an erasure erased, or (dry run) would erase. */
export interface ErasureReport {
  session_id: string;
  dry_run: boolean;
  reference: string | null;
  events: Array<{ seq: number; type: string; paths: string[] }>;
  fields: number;
  state_items: string[];
  pending_approvals: string[];
  approved_approvals: string[];
  pending_deliveries: string[];
  legal_holds: Array<{ hold_id: string; reference: string; session_id: string | null }>;
  erasure: { event_id: string; seq: number } | null;
}

/** `POST /v1/erasures/subject`: one report per tagged session. */
interface SubjectErasureReport {
  subject: string;
  dry_run: boolean;
  sessions: ErasureReport[];
}

type Target = { kind: 'session'; id: string } | { kind: 'subject'; id: string };

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

/** True when the report holds nothing to erase. */
const empty = (r: ErasureReport) =>
  r.fields === 0 &&
  r.state_items.length === 0 &&
  r.pending_approvals.length === 0 &&
  r.approved_approvals.length === 0;

/** A list of IDs or keys as short monospace items, or a dash. */
function idList(ids: string[], href?: (id: string) => string): HTMLElement | string {
  if (ids.length === 0) return '—';
  return h(
    'ul',
    { class: 'plain' },
    ...ids.map((id) =>
      h('li', {}, href ? link(href(id), shortId(id, 24)) : h('span', { class: 'mono' }, id)),
    ),
  );
}

/** One session's report: counts, then the fields by event, as the API lists them. */
function sessionReport(report: ErasureReport, ctx: PageContext): HTMLElement {
  const approval = ctx.can('approvals:decide') ? (id: string) => `approvals/${seg(id)}` : undefined;
  const session = ctx.can('state:read')
    ? link(`sessions/${seg(report.session_id)}`, report.session_id)
    : h('span', { class: 'mono' }, report.session_id);
  return h(
    'section',
    { class: 'panel erasure-report', 'aria-label': `Session ${report.session_id}` },
    h('h3', {}, 'Session ', session),
    facts([
      ['History fields', `${plural(report.fields, 'field')} in ${plural(report.events.length, 'event')}`],
      [
        'State items (every version)',
        report.state_items.length
          ? h('ul', { class: 'plain' }, ...report.state_items.map((k) => h('li', {}, h('code', {}, k))))
          : '—',
      ],
      ['Pending approvals (denied)', idList(report.pending_approvals, approval)],
      ['Approved approvals (expired)', idList(report.approved_approvals, approval)],
      [
        'Pending webhook deliveries',
        report.pending_deliveries.length
          ? `${plural(report.pending_deliveries.length, 'delivery', 'deliveries')}: they go out with the values erased`
          : '—',
      ],
      [
        'Legal holds',
        report.legal_holds.length
          ? h(
              'ul',
              { class: 'plain' },
              ...report.legal_holds.map((hold) =>
                h(
                  'li',
                  {},
                  h('strong', { class: 'danger-text' }, hold.reference),
                  ` (${hold.session_id === null ? 'the whole tenant' : 'this session'}): the erasure will be refused while it is in force`,
                ),
              ),
            )
          : '—',
      ],
    ]),
    table(
      'Fields by event',
      [{ text: 'Seq', class: 'num' }, 'Type', 'Fields (JSON Pointer)'],
      report.events.map((e) =>
        row(
          h('td', { class: 'num' }, e.seq),
          e.type,
          h('span', { class: 'paths' }, ...e.paths.flatMap((p, i) => [i ? ' ' : '', h('code', {}, p)])),
        ),
      ),
      'No event of this session holds a value.',
    ),
  );
}

/** A refusal: status and code, the API's message, and what to do about a legal hold. */
function refusal(error: unknown, ctx: PageContext): HTMLElement {
  const box = errorBox(error);
  if (!(error instanceof ApiError)) return box;
  (box.tagName === 'P' ? box : box.firstElementChild!).prepend(
    h('strong', {}, `${error.status} ${error.code}: `),
  );
  if (/Legal hold/.test(error.message)) {
    box.append(
      h(
        'p',
        { class: 'hint' },
        'The console does not override a legal hold. ',
        ...(ctx.can('admin')
          ? [
              'Release it on ',
              link('retention', 'Retention & holds'),
              ' if the matter is closed, or override it with the API (',
              h('code', {}, 'override_hold: true'),
              ') or ',
              h('code', {}, 'gatehouse erase --override-hold'),
              ', which records it as ',
              h('code', {}, 'legal_hold.overridden'),
              '.',
            ]
          : ['An admin can release it when the matter is closed, or override it (recorded in the history).']),
      ),
    );
  }
  return box;
}

async function render(root: HTMLElement, ctx: PageContext): Promise<void> {
  const bySession = h('input', {
    type: 'radio',
    name: 'erase-kind',
    id: 'erase-by-session',
    value: 'session',
    checked: true,
  });
  const bySubject = h('input', {
    type: 'radio',
    name: 'erase-kind',
    id: 'erase-by-subject',
    value: 'subject',
  });
  const targetLabel = h('span', {}, 'Session ID');
  const target = h('input', {
    id: 'erase-target',
    name: 'erase-target',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    maxlength: 128,
  });
  const reference = h('input', {
    id: 'erase-reference',
    name: 'erase-reference',
    autocomplete: 'off',
    spellcheck: 'false',
    maxlength: 128,
    placeholder: 'DSR-7',
    'aria-describedby': 'erase-reference-help',
  });
  const result = h('div', { id: 'erasure-result', 'aria-live': 'polite' });

  const kind = (): Target['kind'] => (bySubject.checked ? 'subject' : 'session');
  const syncKind = () => {
    targetLabel.textContent = kind() === 'subject' ? 'Subject' : 'Session ID';
    target.placeholder = kind() === 'subject' ? 'p-1234' : 'checkout-7';
  };
  // A dry run speaks for the inputs it ran with: any change makes it stale, so it goes.
  const stale = () => replace(result);
  for (const input of [bySession, bySubject])
    input.addEventListener('change', () => {
      syncKind();
      stale();
    });
  for (const input of [target, reference]) input.addEventListener('input', stale);
  syncKind();

  const request = (t: Target, ref: string, dryRun: boolean) => {
    const body = {
      ...(t.kind === 'session' ? { session_id: t.id } : { subject: t.id }),
      ...(ref ? { reference: ref } : {}),
      dry_run: dryRun,
    };
    return t.kind === 'session'
      ? post<ErasureReport>('/v1/erasures', body).then((r) => [r])
      : post<SubjectErasureReport>('/v1/erasures/subject', body).then((r) => r.sessions);
  };

  const noun = (t: Target) => (t.kind === 'session' ? `session ${t.id}` : `subject ${t.id}`);

  /** The real erasure, after the dry run and the typed confirmation. */
  const erase = async (t: Target, ref: string, button: HTMLButtonElement, area: HTMLElement) => {
    button.disabled = true;
    replace(area, h('p', { class: 'muted' }, `Erasing ${noun(t)}…`));
    try {
      const reports = await request(t, ref, false);
      const done = reports.filter((r) => r.erasure !== null);
      const fields = done.reduce((n, r) => n + r.fields, 0);
      replace(
        result,
        h(
          'div',
          { class: 'notice', role: 'status', id: 'erasure-done' },
          h(
            'p',
            {},
            `Erased ${noun(t)}: ${plural(fields, 'field')} in ${plural(
              done.reduce((n, r) => n + r.events.length, 0),
              'event',
            )}, ${plural(
              done.reduce((n, r) => n + r.state_items.length, 0),
              'state item',
            )}.`,
          ),
          h(
            'ul',
            { class: 'plain' },
            ...done.map((r) =>
              h(
                'li',
                {},
                `Session ${r.session_id}: recorded as erasure.completed, seq ${r.erasure!.seq}`,
                ctx.can('history:read')
                  ? h(
                      'span',
                      {},
                      ' · ',
                      link(`history?session=${seg(r.session_id)}`, `Show session ${r.session_id} in History`),
                    )
                  : null,
              ),
            ),
          ),
        ),
      );
      result.focus();
    } catch (error) {
      replace(area, refusal(error, ctx));
      button.disabled = false;
    }
  };

  /** The dry run's answer and, when there is something to erase, the confirmation. */
  const showDryRun = (t: Target, ref: string, reports: ErasureReport[]) => {
    const heading = h('h2', { id: 'h-dry-run' }, `Dry run: what erasing ${noun(t)} would erase`);
    if (reports.length === 0) {
      replace(result, heading, h('p', { class: 'muted' }, `No session is tagged with subject ${t.id}.`));
      return;
    }
    const fields = reports.reduce((n, r) => n + r.fields, 0);
    const summary = h(
      'p',
      {},
      `${plural(reports.length, 'session')}, ${plural(fields, 'field')} in ${plural(
        reports.reduce((n, r) => n + r.events.length, 0),
        'event',
      )}, ${plural(
        reports.reduce((n, r) => n + r.state_items.length, 0),
        'state item',
      )}. Nothing has been erased yet.`,
    );
    if (reports.every(empty)) {
      replace(
        result,
        heading,
        h(
          'p',
          { class: 'muted' },
          t.kind === 'session'
            ? `Nothing to erase: session ${t.id} holds no value (no such session, or it is erased already).`
            : `Nothing to erase: the sessions of subject ${t.id} hold no value.`,
        ),
        ...reports.map((r) => sessionReport(r, ctx)),
      );
      return;
    }
    const confirm = h('input', {
      id: 'erase-confirm',
      autocomplete: 'off',
      spellcheck: 'false',
      'aria-describedby': 'erase-confirm-help',
    });
    const button = h('button', { type: 'submit', class: 'danger', disabled: true }, `Erase ${noun(t)}`);
    confirm.addEventListener('input', () => {
      button.disabled = confirm.value.trim() !== t.id;
    });
    const outcome = h('div', { 'aria-live': 'assertive' });
    replace(
      result,
      heading,
      summary,
      ...reports.map((r) => sessionReport(r, ctx)),
      h(
        'form',
        {
          class: 'panel confirm',
          'aria-labelledby': 'h-confirm',
          onsubmit: (event: Event) => {
            event.preventDefault();
            if (confirm.value.trim() === t.id) void erase(t, ref, button, outcome);
          },
        },
        h('h2', { id: 'h-confirm' }, 'Erase for good'),
        h(
          'p',
          { id: 'erase-confirm-help' },
          'This cannot be undone: the values above leave the database; the chain keeps who, when and which fields (no content). ',
          `Type the ${t.kind === 'session' ? 'session ID' : 'subject'} `,
          h('code', {}, t.id),
          ' to confirm.',
        ),
        h(
          'div',
          { class: 'toolbar' },
          h(
            'label',
            { for: 'erase-confirm' },
            `Type ${t.kind === 'session' ? 'the session ID' : 'the subject'} again`,
            confirm,
          ),
          button,
        ),
        outcome,
      ),
    );
  };

  const dryRunButton = h('button', { type: 'submit' }, 'Dry run');
  const form = h(
    'form',
    {
      class: 'panel',
      'aria-labelledby': 'h-erase',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const t: Target = { kind: kind(), id: target.value.trim() };
        const ref = reference.value.trim();
        dryRunButton.disabled = true;
        replace(result, h('p', { class: 'muted' }, 'Listing what would be erased…'));
        try {
          showDryRun(t, ref, await request(t, ref, true));
        } catch (error) {
          replace(result, refusal(error, ctx));
        } finally {
          dryRunButton.disabled = false;
        }
      },
    },
    h('h2', { id: 'h-erase' }, 'What to erase'),
    h(
      'p',
      { class: 'muted' },
      'Erases what callers wrote into a session (state values, action params, messages, comments): the history keeps its hash-chained envelopes and records the erasure. A subject erases every session tagged with it, and the tags.',
    ),
    h(
      'fieldset',
      { class: 'choice' },
      h('legend', {}, 'Erase by'),
      h('label', { for: 'erase-by-session', class: 'inline' }, bySession, ' Session'),
      h('label', { for: 'erase-by-subject', class: 'inline' }, bySubject, ' Subject'),
    ),
    h(
      'div',
      { class: 'filters' },
      h('label', { for: 'erase-target' }, targetLabel, target),
      h('label', { for: 'erase-reference' }, 'Reference (optional)', reference),
      dryRunButton,
    ),
    h(
      'p',
      { id: 'erase-reference-help', class: 'muted' },
      'The reference (a ticket ID such as DSR-7) is kept in the chain: never personal data.',
    ),
  );
  replace(root, form, result);
  result.tabIndex = -1;
}

/** The erasure page: keys with `data:erase` (or `admin`). */
export const erasurePage: Page = {
  path: 'erasure',
  title: 'Erasure',
  nav: { label: 'Erasure', href: 'erasure' },
  scopes: ['data:erase'],
  render,
};
