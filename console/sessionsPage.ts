/**
 * Sessions and state: open conflicts (with resolve, for keys that may write state), recent
 * sessions, and per session its current items with every version over time.
 */
import { get, post, seg } from './api.js';
import { badge, errorBox, h, link, replace, row, table, time } from './dom.js';
import type { HistoryEvent } from './historyPage.js';
import type { Page, PageContext, StateItem } from './pageTypes.js';
import { maskValue } from './secretMask.js';

/** A state value as shown: a secret item's value masked as the server masks it. */
const valueCell = (value: string, sensitivity: string) =>
  h('span', { class: 'mono' }, maskValue(value, sensitivity));

/**
 * The sensitivity of each `session_id` + `key` with an open conflict: a conflict does not say,
 * its item does. Unknown (the item could not be read) counts as secret.
 */
type SensitivityOf = (sessionId: string, key: string) => string;

function sensitivityFrom(items: StateItem[][]): SensitivityOf {
  const known = new Map<string, string>();
  for (const list of items)
    for (const item of list) known.set(JSON.stringify([item.session_id, item.key]), item.sensitivity);
  return (sessionId, key) => known.get(JSON.stringify([sessionId, key])) ?? 'secret';
}

/** A side of a conflict; `sensitivity` is its own value's (the item's is the current one's). */
interface ConflictSide {
  value: string;
  source: string;
  trust: number;
  sensitivity?: string;
}

interface Conflict {
  conflict_id: string;
  session_id: string;
  key: string;
  status: string;
  current: ConflictSide & { version: number };
  proposed: ConflictSide;
  created_at: string;
}

/**
 * How a side of a conflict shows: masked when its own value is secret (a secret proposed for a
 * key whose current value is not) or when its item is (or could not be read).
 */
const sideCell = (side: ConflictSide, itemSensitivity: string) =>
  valueCell(side.value, side.sensitivity === 'secret' ? 'secret' : itemSensitivity);

/** The conflicts table; `status` (kept by the caller, outside what is re-rendered) gets the outcome. */
function conflictsTable(
  conflicts: Conflict[],
  ctx: PageContext,
  options: {
    rerender: () => void;
    withSession: boolean;
    status: HTMLElement;
    sensitivity: SensitivityOf;
  },
) {
  const { rerender, withSession, status } = options;
  const rows = conflicts.map((c) => {
    // The proposed value belongs to the same key: a secret key's proposal is masked too.
    const sensitivity = options.sensitivity(c.session_id, c.key);
    const actions = h('div', { class: 'actions' });
    if (ctx.can('state:write')) {
      for (const [resolution, label] of [
        ['keep_current', 'Keep current'],
        ['accept_proposed', 'Accept proposed'],
      ] as const) {
        actions.append(
          h(
            'button',
            {
              type: 'button',
              class: resolution === 'keep_current' ? 'secondary' : '',
              'aria-label': `${label} for ${c.key} in ${c.session_id}`,
              'data-resolution': resolution,
              onclick: async (event: Event) => {
                const button = event.currentTarget as HTMLButtonElement;
                button.disabled = true;
                try {
                  await post(`/v1/state/conflicts/${seg(c.conflict_id)}/resolve`, { resolution });
                  replace(
                    status,
                    h('p', { class: 'notice', role: 'status' }, `Resolved ${c.key}: ${label.toLowerCase()}.`),
                  );
                  rerender();
                } catch (error) {
                  replace(status, errorBox(error));
                  button.disabled = false;
                }
              },
            },
            label,
          ),
        );
      }
    } else actions.append(h('span', { class: 'muted' }, 'read only'));
    return row(
      ...(withSession ? [link(`sessions/${seg(c.session_id)}`, c.session_id)] : []),
      h('code', {}, c.key),
      h(
        'span',
        {},
        sideCell(c.current, sensitivity),
        h('span', { class: 'muted' }, ` v${c.current.version}, ${c.current.source} (${c.current.trust})`),
      ),
      h(
        'span',
        {},
        sideCell(c.proposed, sensitivity),
        h('span', { class: 'muted' }, ` ${c.proposed.source} (${c.proposed.trust})`),
      ),
      time(c.created_at),
      actions,
    );
  });
  return table(
    'Open conflicts: a lower-trust write that did not replace the current value',
    [...(withSession ? ['Session'] : []), 'Key', 'Current', 'Proposed', 'Opened', 'Resolve'],
    rows,
    'No open conflict.',
  );
}

async function renderIndex(root: HTMLElement, ctx: PageContext): Promise<void> {
  const input = h('input', { id: 'session-id', name: 'session', autocomplete: 'off', required: true });
  const form = h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': 'Open a session',
      onsubmit: (event: Event) => {
        event.preventDefault();
        if (input.value.trim()) ctx.navigate(`sessions/${seg(input.value.trim())}`);
      },
    },
    h('label', { for: 'session-id' }, 'Session ID', input),
    h('button', { type: 'submit' }, 'Open session'),
  );
  const conflicts = h(
    'section',
    { 'aria-labelledby': 'h-conflicts' },
    h('h2', { id: 'h-conflicts' }, 'Open conflicts'),
  );
  const recent = h(
    'section',
    { 'aria-labelledby': 'h-recent' },
    h('h2', { id: 'h-recent' }, 'Recent sessions'),
  );
  const status = h('div', { 'aria-live': 'polite' });
  replace(root, form, status, conflicts, recent);

  const load = async () => {
    const { conflicts: list } = await get<{ conflicts: Conflict[] }>('/v1/state/conflicts', {
      status: 'open',
    });
    const sessions = [...new Set(list.map((c) => c.session_id))];
    const items = await Promise.all(
      sessions.map((id) =>
        get<{ items: StateItem[] }>('/v1/state/items', { session_id: id }).then(
          (answer) => answer.items,
          () => [],
        ),
      ),
    );
    replace(
      conflicts,
      h('h2', { id: 'h-conflicts' }, 'Open conflicts'),
      conflictsTable(list, ctx, {
        rerender: () => void load(),
        withSession: true,
        status,
        sensitivity: sensitivityFrom(items),
      }),
    );
  };
  await load();
  if (ctx.can('history:read')) {
    // No session list in the API: the sessions of the latest events are the ones worth a look.
    const { events } = await get<{ events: HistoryEvent[] }>('/v1/history/events', { limit: 200 });
    const last = new Map<string, HistoryEvent>();
    // Tenant-wide events (a policy activated or replayed) have no session: '' is none to list.
    for (const e of events) if (e.session_id !== '' && !last.has(e.session_id)) last.set(e.session_id, e);
    recent.append(
      table(
        'Sessions of the latest 200 events',
        ['Session', 'Last event', 'When'],
        [...last.values()].map((e) =>
          row(link(`sessions/${seg(e.session_id)}`, e.session_id), e.type, time(e.occurred_at)),
        ),
        'No event yet.',
      ),
    );
  } else recent.append(h('p', { class: 'muted' }, 'Listing recent sessions needs the history:read scope.'));
}

async function versionsOf(sessionId: string, key: string): Promise<HTMLElement> {
  const { versions } = await get<{ versions: StateItem[] }>(`/v1/state/items/${seg(key)}/versions`, {
    session_id: sessionId,
  });
  return table(
    `Every version of ${key}, oldest first`,
    [{ text: 'Version', class: 'num' }, 'Value', 'Type', 'Source (trust)', 'Status', 'Written'],
    versions.map((v) =>
      row(
        h('td', { class: 'num' }, v.version),
        valueCell(v.value, v.sensitivity),
        v.type,
        `${v.source} (${v.trust})`,
        badge(v.status),
        time(v.updated_at),
      ),
    ),
  );
}

async function renderSession(root: HTMLElement, ctx: PageContext): Promise<void> {
  const sessionId = ctx.params['id'] ?? '';
  const heading = root.closest('main')?.querySelector('h1');
  if (heading) heading.textContent = `Session ${sessionId}`;
  const conflictsSection = h('section', { 'aria-labelledby': 'h-conflicts' });
  const itemsSection = h('section', { 'aria-labelledby': 'h-items' });
  const versionsSection = h('section', { 'aria-labelledby': 'h-versions', 'aria-live': 'polite' });
  const status = h('div', { 'aria-live': 'polite' });
  replace(root, status, conflictsSection, itemsSection, versionsSection);

  const showVersions = async (key: string) => {
    replace(
      versionsSection,
      h('h2', { id: 'h-versions', tabindex: '-1' }, `Versions of ${key}`),
      h('p', { class: 'muted' }, 'Loading…'),
    );
    try {
      replace(
        versionsSection,
        h('h2', { id: 'h-versions', tabindex: '-1' }, `Versions of ${key}`),
        await versionsOf(sessionId, key),
      );
    } catch (error) {
      replace(versionsSection, h('h2', { id: 'h-versions' }, `Versions of ${key}`), errorBox(error));
    }
  };

  const load = async () => {
    const [{ items }, { conflicts }] = await Promise.all([
      get<{ items: StateItem[] }>('/v1/state/items', { session_id: sessionId }),
      get<{ conflicts: Conflict[] }>('/v1/state/conflicts', { session_id: sessionId, status: 'open' }),
    ]);
    replace(
      conflictsSection,
      h('h2', { id: 'h-conflicts' }, 'Open conflicts'),
      conflictsTable(conflicts, ctx, {
        rerender: () => void load(),
        withSession: false,
        status,
        sensitivity: sensitivityFrom([items]),
      }),
    );
    replace(
      itemsSection,
      h('h2', { id: 'h-items' }, 'Current items'),
      table(
        'The value in force for each key',
        [
          'Key',
          'Value',
          'Type',
          'Source (trust)',
          { text: 'Version', class: 'num' },
          'Status',
          'Updated',
          'History',
        ],
        items.map((item) =>
          row(
            h('code', {}, item.key),
            valueCell(item.value, item.sensitivity),
            item.type,
            `${item.source} (${item.trust})`,
            h('td', { class: 'num' }, item.version),
            badge(item.status),
            time(item.updated_at),
            h(
              'button',
              {
                type: 'button',
                class: 'secondary',
                'aria-label': `Versions of ${item.key}`,
                onclick: async () => {
                  await showVersions(item.key);
                  versionsSection.querySelector<HTMLElement>('h2')?.focus();
                },
              },
              'Versions',
            ),
          ),
        ),
        'This session has no state item.',
      ),
    );
  };
  await load();
  const key = ctx.query.get('key');
  if (key) await showVersions(key);
}

/** The sessions index: look one up, open conflicts, recent sessions. */
export const sessionsPage: Page = {
  path: 'sessions',
  title: 'Sessions and state',
  nav: { label: 'Sessions', href: 'sessions' },
  scopes: ['state:read'],
  render: renderIndex,
};

/** One session's items, versions and conflicts. */
export const sessionPage: Page = {
  path: 'sessions/:id',
  title: 'Session',
  scopes: ['state:read'],
  render: renderSession,
};
