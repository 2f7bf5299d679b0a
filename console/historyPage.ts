/**
 * Live history: the newest events first, paged with the API's cursor (never all of them), new
 * ones streamed in as they are written; filters by session, type and verdict; "Verify chain".
 */
import { followStream, get } from './api.js';
import { badge, errorBox, h, link, replace, row, shortId, shown, time } from './dom.js';
import type { Page, PageContext } from './pageTypes.js';
import { principalLabel, principalRecordOf } from './principalLabel.js';
import { EVENT_TYPES, VERDICTS } from './vocabulary.js';

/** The part of a history event the console reads. */
export interface HistoryEvent {
  event_id: string;
  seq: number;
  type: string;
  session_id: string;
  occurred_at: string;
  data: Record<string, unknown>;
}

interface HistoryPage {
  events: HistoryEvent[];
  next_cursor: string | null;
}

const PAGE_SIZE = 50;
/** With a verdict filter, pages are filtered here; this many pages at most per "load older". */
const MAX_PAGES_PER_LOAD = 10;

const text = (value: unknown) =>
  typeof value === 'string' ? value : value === undefined ? '' : shown(value);

/** One line saying what an event is about. */
export function summarize(event: HistoryEvent): Node {
  const d = event.data;
  const decision = typeof d['decision_id'] === 'string' ? (d['decision_id'] as string) : undefined;
  const decisionLink = decision ? link(`decisions/${encodeURIComponent(decision)}`, shortId(decision)) : null;
  const span = h('span', { class: 'summary' });
  switch (event.type) {
    case 'gate_evaluation':
      span.append(badge(text(d['verdict'])), ' ', h('strong', {}, text(d['action'])), ' ');
      if (decisionLink) span.append(decisionLink, ' ');
      span.append(h('span', { class: 'muted' }, text(d['reason'])));
      break;
    case 'state_change':
    case 'conflict_resolved':
      span.append(h('code', {}, text(d['key'])), ' ');
      if (d['value'] !== undefined) span.append('= ', h('span', { class: 'mono' }, text(d['value'])), ' ');
      if (d['version'] !== undefined)
        span.append(h('span', { class: 'muted' }, `v${text(d['version'])}`), ' ');
      if (d['source'] !== undefined) span.append(h('span', { class: 'muted' }, `from ${text(d['source'])}`));
      if (d['resolution'] !== undefined) span.append(badge(text(d['resolution'])));
      break;
    case 'state_conflict': {
      const current = (d['current'] ?? {}) as Record<string, unknown>;
      const proposed = (d['proposed'] ?? {}) as Record<string, unknown>;
      span.append(
        badge('conflicted'),
        ' ',
        h('code', {}, text(d['key'])),
        ' keeps ',
        h('span', { class: 'mono' }, text(current['value'])),
        h('span', { class: 'muted' }, ` (${text(current['source'])})`),
        '; refused ',
        h('span', { class: 'mono' }, text(proposed['value'])),
        h('span', { class: 'muted' }, ` (${text(proposed['source'])})`),
      );
      break;
    }
    case 'action_outcome':
      span.append(badge(text(d['outcome'])), ' ');
      if (decisionLink) span.append(decisionLink);
      break;
    case 'approval.requested':
    case 'approval.approved':
    case 'approval.denied':
    case 'approval.expired':
    case 'approval.used': {
      const approval = text(d['approval_id']);
      span.append(
        badge(event.type.slice('approval.'.length)),
        ' ',
        h('strong', {}, text(d['action'])),
        ' ',
        link(`approvals/${encodeURIComponent(approval)}`, shortId(approval)),
      );
      if (decisionLink) span.append(' ', decisionLink);
      if (typeof d['decided_by'] === 'string')
        span.append(h('span', { class: 'muted' }, ` by ${d['decided_by']}`));
      if (typeof d['comment'] === 'string') span.append(' ', h('q', {}, d['comment']));
      break;
    }
    case 'policy.activated':
    case 'policy.replayed': {
      span.append(badge(event.type.slice('policy.'.length)), ' ', link('policy', 'policy'), ' ');
      span.append(shortId(text(d['revision']), 12));
      if (event.type === 'policy.activated') {
        if (typeof d['activated_by'] === 'string')
          span.append(h('span', { class: 'muted' }, ` by ${d['activated_by']}`));
      } else {
        const n = text(d['decisions']);
        span.append(
          h(
            'span',
            { class: 'muted' },
            ` over ${n} decision${n === '1' ? '' : 's'}: ${text(d['changed'])} changed verdict`,
          ),
        );
      }
      break;
    }
    case 'erasure.completed': {
      const fields = text(d['fields']);
      span.append(
        badge('erased'),
        ' ',
        `${fields} field${fields === '1' ? '' : 's'} in ${text(d['events'])} event${text(d['events']) === '1' ? '' : 's'}`,
      );
      if (Array.isArray(d['state_items']) && d['state_items'].length > 0)
        span.append(`, state ${(d['state_items'] as unknown[]).map(text).join(', ')}`);
      if (typeof d['reference'] === 'string')
        span.append(', reference ', h('span', { class: 'mono' }, d['reference']));
      if (d['reason'] === 'retention') span.append(h('span', { class: 'muted' }, ' by retention'));
      else if (typeof d['requested_by'] === 'string')
        span.append(h('span', { class: 'muted' }, ` by ${d['requested_by']}`));
      break;
    }
    case 'legal_hold.placed':
    case 'legal_hold.released':
      span.append(
        badge(event.type.slice('legal_hold.'.length)),
        ' legal hold ',
        h('span', { class: 'mono' }, text(d['reference'])),
        d['session_id'] ? '' : ' on the whole tenant',
        typeof d['by'] === 'string' ? h('span', { class: 'muted' }, ` by ${d['by']}`) : '',
      );
      break;
    case 'retention.configured': {
      const period = (v: unknown) => (typeof v === 'number' ? `${v}d` : 'kept');
      span.append(
        badge('configured'),
        ` retention: values ${period(d['values_after_days'])}, history ${period(d['history_after_days'])}`,
        d['allow_below_floor'] === true ? ' (below the floor allowed)' : '',
        typeof d['by'] === 'string' ? h('span', { class: 'muted' }, ` by ${d['by']}`) : '',
      );
      break;
    }
    default: {
      const compact = JSON.stringify(d);
      span.append(
        h('span', { class: 'mono muted' }, compact.length > 140 ? `${compact.slice(0, 140)}…` : compact),
      );
    }
  }
  const principal = principalRecordOf(d['principal']);
  if (principal) span.append(h('span', { class: 'muted principal' }, ` · by ${principalLabel(principal)}`));
  return span;
}

function eventRow(event: HistoryEvent, fresh: boolean): HTMLTableRowElement {
  const tr = row(
    h('td', { class: 'num' }, event.seq),
    h('td', { class: 'hide-narrow nowrap' }, time(event.occurred_at)),
    h('td', { class: 'hide-narrow' }, event.type),
    // Tenant-wide events (a policy activated or replayed) belong to no session.
    // Session IDs may be long (up to 128 characters): they wrap, so "What" keeps its room.
    h(
      'td',
      { class: 'long-id' },
      event.session_id === ''
        ? h('span', { class: 'muted' }, '—')
        : link(`sessions/${encodeURIComponent(event.session_id)}`, event.session_id),
    ),
    summarize(event),
  );
  tr.dataset['seq'] = String(event.seq);
  if (fresh) tr.classList.add('new');
  return tr;
}

async function render(root: HTMLElement, ctx: PageContext): Promise<void> {
  const session = ctx.query.get('session') ?? '';
  const type = ctx.query.get('type') ?? '';
  const verdict = ctx.query.get('verdict') ?? '';
  // A verdict only exists on gate evaluations: ask the server for those, filter the rest here.
  const serverType = verdict !== '' ? 'gate_evaluation' : type;
  const matches = (e: HistoryEvent) => verdict === '' || e.data['verdict'] === verdict;

  const sessionInput = h('input', { id: 'f-session', name: 'session', value: session, autocomplete: 'off' });
  const typeInput = h('input', {
    id: 'f-type',
    name: 'type',
    value: type,
    list: 'event-types',
    autocomplete: 'off',
  });
  const verdictSelect = h(
    'select',
    { id: 'f-verdict', name: 'verdict' },
    ...['', ...VERDICTS].map((v) =>
      h('option', { value: v, selected: v === verdict }, v === '' ? 'Any verdict' : v),
    ),
  );
  const filters = h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': 'Filter history',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const q = new URLSearchParams();
        if (sessionInput.value.trim()) q.set('session', sessionInput.value.trim());
        if (typeInput.value.trim()) q.set('type', typeInput.value.trim());
        if (verdictSelect.value) q.set('verdict', verdictSelect.value);
        ctx.navigate(`history${q.size > 0 ? `?${q}` : ''}`);
      },
    },
    h('label', { for: 'f-session' }, 'Session', sessionInput),
    h('label', { for: 'f-type' }, 'Event type', typeInput),
    h('datalist', { id: 'event-types' }, ...EVENT_TYPES.map((t) => h('option', { value: t }))),
    h('label', { for: 'f-verdict' }, 'Verdict', verdictSelect),
    h('button', { type: 'submit' }, 'Apply filters'),
  );

  const dot = h('span', { class: 'dot', 'aria-hidden': 'true' });
  const liveText = h('span', {}, 'Connecting…');
  const newCount = h('span', { class: 'muted' });
  const status = h(
    'p',
    { class: 'status-line', role: 'status', 'aria-live': 'polite' },
    dot,
    liveText,
    newCount,
  );
  const verifyResult = h('div', { 'aria-live': 'polite' });
  const verifyButton = h('button', { type: 'button', class: 'secondary' }, 'Verify chain');
  verifyButton.addEventListener('click', async () => {
    verifyButton.disabled = true;
    replace(verifyResult, h('p', { class: 'muted' }, 'Recomputing the hash chain…'));
    try {
      const result = await get<{
        ok: boolean;
        checked: number;
        head: string | null;
        first_bad_seq: number | null;
        problem: string | null;
      }>('/v1/history/verify');
      replace(
        verifyResult,
        h(
          'div',
          { class: result.ok ? 'notice' : 'error', role: 'status' },
          result.ok
            ? `Chain intact: ${result.checked} events checked; head ${result.head?.slice(0, 16) ?? '—'}…`
            : `Chain broken at seq ${result.first_bad_seq}: ${result.problem ?? 'hash mismatch'} (${result.checked} checked).`,
        ),
      );
    } catch (error) {
      replace(verifyResult, errorBox(error));
    } finally {
      verifyButton.disabled = false;
    }
  });
  const pauseButton = h(
    'button',
    { type: 'button', class: 'secondary', 'aria-pressed': 'false' },
    'Pause live',
  );

  const body = h('tbody');
  const tableEl = h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { id: 'history-table' },
      h('caption', {}, 'History events, newest first'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col', class: 'num' }, 'Seq'),
          h('th', { scope: 'col', class: 'hide-narrow' }, 'Time'),
          h('th', { scope: 'col', class: 'hide-narrow' }, 'Type'),
          h('th', { scope: 'col' }, 'Session'),
          h('th', { scope: 'col' }, 'What'),
        ),
      ),
      body,
    ),
  );
  const more = h('button', { type: 'button', class: 'secondary' }, 'Load older events');
  const pageError = h('div');
  replace(
    root,
    filters,
    h('div', { class: 'toolbar' }, status, pauseButton, verifyButton),
    verifyResult,
    pageError,
    tableEl,
    h('p', {}, more),
  );

  const seen = new Set<number>();
  let cursor: string | null = null;
  let top = 0;
  const emptyRow = () => {
    if (body.children.length === 0) {
      body.append(h('tr', { class: 'empty' }, h('td', { colspan: 5, class: 'muted' }, 'No events match.')));
    }
  };
  const query = { session_id: session || undefined, type: serverType || undefined };

  async function loadOlder(): Promise<void> {
    more.disabled = true;
    try {
      let shown = 0;
      for (let i = 0; i < MAX_PAGES_PER_LOAD && shown < PAGE_SIZE; i++) {
        const page: HistoryPage = await get<HistoryPage>(
          '/v1/history/events',
          { ...query, limit: PAGE_SIZE, cursor: cursor ?? undefined },
          ctx.signal,
        );
        for (const event of page.events) {
          top = Math.max(top, event.seq);
          if (seen.has(event.seq) || !matches(event)) continue;
          seen.add(event.seq);
          body.querySelector('tr.empty')?.remove();
          body.append(eventRow(event, false));
          shown += 1;
        }
        cursor = page.next_cursor;
        if (cursor === null) break;
      }
      more.hidden = cursor === null;
      emptyRow();
    } catch (error) {
      if (!ctx.signal.aborted) replace(pageError, errorBox(error));
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener('click', () => void loadOlder());
  await loadOlder();

  // Live: a stream that starts after the newest event already shown, so nothing is missed or doubled.
  let live: AbortController | undefined;
  let fresh = 0;
  const start = () => {
    live = new AbortController();
    const stop = () => live?.abort();
    ctx.signal.addEventListener('abort', stop, { once: true });
    void followStream({
      query: { ...query, verdict: verdict || undefined, after_seq: top },
      signal: live.signal,
      onEvent: (data) => {
        const event = data as HistoryEvent;
        top = Math.max(top, event.seq);
        // An approval asked for or decided elsewhere changes the pending count in the header.
        if (event.type.startsWith('approval.')) ctx.refreshHeader();
        if (seen.has(event.seq) || !matches(event)) return;
        seen.add(event.seq);
        body.querySelector('tr.empty')?.remove();
        body.prepend(eventRow(event, true));
        fresh += 1;
        newCount.textContent = `${fresh} new since you opened this page`;
      },
      onState: (state, detail) => {
        dot.className = `dot ${state === 'live' ? 'live' : state === 'retrying' ? 'error' : ''}`;
        liveText.textContent =
          state === 'live'
            ? 'Live: new events appear as they are written.'
            : state === 'retrying'
              ? `Reconnecting… (${detail ?? ''})`
              : detail
                ? `Not live: ${detail}`
                : 'Paused.';
      },
    });
  };
  pauseButton.addEventListener('click', () => {
    const paused = pauseButton.getAttribute('aria-pressed') === 'true';
    if (paused) {
      pauseButton.setAttribute('aria-pressed', 'false');
      pauseButton.textContent = 'Pause live';
      start();
    } else {
      pauseButton.setAttribute('aria-pressed', 'true');
      pauseButton.textContent = 'Resume live';
      live?.abort();
    }
  });
  start();
}

/** The history page. */
export const historyPage: Page = {
  path: 'history',
  title: 'Live history',
  nav: { label: 'History', href: 'history' },
  scopes: ['history:read'],
  render,
};
