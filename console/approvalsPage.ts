/**
 * Approvals (issue 16): the queue of held actions, approve / deny with a comment, who decided
 * what. Reads the shapes of `GET /v1/approvals` (ApprovalPageSchema, paged by `next_cursor`) and
 * `GET /v1/approvals/{id}` (ApprovalSchema); decides with `POST /v1/approvals/{id}/approve|deny`.
 * Listing needs `approvals:decide`; one approval may also be read with `gate:evaluate`.
 */
import { ApiError, get, post, seg } from './api.js';
import { badge, errorBox, facts, h, json, link, replace, row, shortId, shown, table, time } from './dom.js';
import type { HistoryEvent } from './historyPage.js';
import type { Page, PageContext } from './pageTypes.js';
import { APPROVAL_STATUSES, type ApprovalStatus } from './vocabulary.js';

/** An approval as the API answers it (ApprovalSchema in src/schemas.ts). */
export interface Approval {
  id: string;
  status: ApprovalStatus;
  session_id: string;
  action: string;
  params: Record<string, unknown>;
  state_versions: Record<string, number>;
  policy: { revision: string };
  rules: string[];
  reason: string;
  digest: string;
  approvers: string[][];
  allow_self_approval: boolean;
  uses: number;
  uses_left: number;
  requested_by: string | null;
  /** Every key that asked while it was pending (`in-process` for an in-process call). */
  requesters: string[];
  decision_id: string;
  created_at: string;
  expires_at: string;
  decided_by: string | null;
  decided_at: string | null;
  comment: string | null;
  updated_at: string;
}

interface ApprovalList {
  approvals: Approval[];
  next_cursor: string | null;
}

const PAGE_SIZE = 50;
/** The header counts up to this many pending approvals, then shows `N+`. */
const COUNT_LIMIT = 100;

/** The pending count for the header: `"3"`, `"100+"`, or `""` when none. */
export async function pendingCount(): Promise<string> {
  const list = await get<ApprovalList>('/v1/approvals', { status: 'pending', limit: COUNT_LIMIT });
  const n = list.approvals.length;
  if (n === 0) return '';
  return list.next_cursor === null ? String(n) : `${n}+`;
}

/** A key ID, marked when it is the signed-in key. */
export function keyLabel(keyId: string | null, ctx: PageContext): Node | string {
  if (keyId === null) return '—';
  return h(
    'span',
    {},
    h('span', { class: 'mono' }, keyId),
    keyId === ctx.me.key_id ? h('span', { class: 'muted' }, ' (you)') : null,
  );
}

/** Why this key may not decide `approval`, or null when the server will judge it. */
function cannotDecide(approval: Approval, ctx: PageContext): string | null {
  if (approval.status !== 'pending') return `This approval is ${approval.status}.`;
  if (!ctx.can('approvals:decide')) return 'Deciding needs the approvals:decide scope.';
  if (!approval.allow_self_approval && approval.requesters.includes(ctx.me.key_id)) {
    return 'This key asked for the approval; another approver must decide.';
  }
  // The server's rule (src/approvals/approverCheck.ts): a label or a scope of every list. Labels
  // never contain `:`, so an approver with one (or `admin`) names a scope.
  const isScope = (approver: string) => approver === 'admin' || approver.includes(':');
  const holds = (approver: string) =>
    isScope(approver) ? ctx.can(approver) : (ctx.me.labels?.includes(approver) ?? false);
  const missing = approval.approvers.find((list) => !list.some(holds));
  if (missing) return `Deciding needs a key with one of: ${missing.join(', ')}.`;
  return null;
}

/**
 * Comment, Approve and Deny. Both buttons are disabled while either is in flight, so one click
 * sends one decision. `done` gets the decided approval; after a 409 (decided meanwhile, or
 * expired) `stale` gets the approval as it is now, so the caller shows its real state.
 */
function decideForm(
  approval: Approval,
  ctx: PageContext,
  handlers: { done: (decided: Approval) => void; stale: (current: Approval) => void },
): HTMLElement {
  const inputId = `comment-${approval.id}`;
  const comment = h('input', { id: inputId, name: 'comment', autocomplete: 'off', maxlength: 1000 });
  const message = h('div', { 'aria-live': 'polite' });
  const buttons: HTMLButtonElement[] = [];
  const setBusy = (busy: boolean) => {
    for (const b of buttons) b.disabled = busy;
    comment.disabled = busy;
  };
  const decide = (verb: 'approve' | 'deny') => async () => {
    setBusy(true);
    const text = comment.value.trim();
    try {
      const decided = await post<Approval>(
        `/v1/approvals/${seg(approval.id)}/${verb}`,
        text ? { comment: text } : {},
      );
      ctx.refreshHeader();
      handlers.done(decided);
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        ctx.refreshHeader();
        try {
          handlers.stale(await get<Approval>(`/v1/approvals/${seg(approval.id)}`));
          return;
        } catch {
          // Not readable again: the 409's own message says what happened.
        }
      }
      replace(message, errorBox(error));
      setBusy(false);
    }
  };
  buttons.push(
    h(
      'button',
      {
        type: 'button',
        onclick: decide('approve'),
        'aria-label': `Approve ${approval.action} (${approval.id})`,
      },
      'Approve',
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: decide('deny'),
        'aria-label': `Deny ${approval.action} (${approval.id})`,
      },
      'Deny',
    ),
  );
  return h(
    'div',
    { class: 'decide' },
    h('label', { for: inputId }, 'Comment (optional)', comment),
    h('div', { class: 'actions' }, ...buttons),
    message,
  );
}

/**
 * Which rules held the action and why (the approval's `rules` and the first one's message), so an
 * approver sees the reason where they decide.
 */
function heldBy(approval: Approval): HTMLElement {
  return h(
    'div',
    { class: 'held-by' },
    'Held by ',
    ...approval.rules.flatMap((rule, i) => [i > 0 ? ', ' : '', h('code', {}, rule)]),
    ': ',
    approval.reason,
  );
}

/** `amount=9000, to="acct-9"`, cut to a table cell's width. */
function paramsLine(params: Record<string, unknown>): HTMLElement {
  if (params['erased'] === true) return h('span', { class: 'muted' }, shown(params));
  const text = Object.entries(params)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
  return h('span', { class: 'mono', title: text }, text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

async function renderQueue(root: HTMLElement, ctx: PageContext): Promise<void> {
  const status = ctx.query.get('status') ?? 'pending';
  const session = ctx.query.get('session') ?? '';
  const query = () => {
    const q = new URLSearchParams();
    q.set('status', select.value);
    if (sessionInput.value.trim()) q.set('session', sessionInput.value.trim());
    return `approvals?${q}`;
  };
  const select = h(
    'select',
    { id: 'a-status', name: 'status', onchange: () => ctx.navigate(query()) },
    ...[...APPROVAL_STATUSES, 'all'].map((s) => h('option', { value: s, selected: s === status }, s)),
  );
  const sessionInput = h('input', { id: 'a-session', name: 'session', value: session, autocomplete: 'off' });
  const filters = h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Filter approvals',
      onsubmit: (event: Event) => {
        event.preventDefault();
        ctx.navigate(query());
      },
    },
    h('label', { for: 'a-status' }, 'Status', select),
    h('label', { for: 'a-session' }, 'Session', sessionInput),
    h('button', { type: 'submit', class: 'secondary' }, 'Filter'),
  );
  const notice = h('div', { 'aria-live': 'polite' });
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Load older');
  const columns = [
    'Action',
    'Params',
    'Session',
    'Status',
    'Requested',
    'Expires',
    'Decided by',
    'Decide or comment',
  ];

  const approvalRow = (a: Approval): HTMLTableRowElement => {
    const tr = row(
      h('td', { class: 'held' }, link(`approvals/${seg(a.id)}`, h('strong', {}, a.action)), heldBy(a)),
      h('td', { class: 'long-id' }, paramsLine(a.params)),
      h('td', { class: 'long-id' }, link(`sessions/${seg(a.session_id)}`, a.session_id)),
      badge(a.status),
      time(a.created_at),
      time(a.expires_at),
      keyLabel(a.decided_by, ctx),
      cannotDecide(a, ctx) === null
        ? decideForm(a, ctx, {
            done: (decided) => {
              replace(
                notice,
                h(
                  'p',
                  { class: 'notice', role: 'status' },
                  `${decided.action} ${decided.status} (${decided.id}).`,
                ),
              );
              tr.replaceWith(approvalRow(decided));
            },
            stale: (current) => {
              replace(
                notice,
                h(
                  'p',
                  { class: 'error', role: 'alert' },
                  `${current.action} (${current.id}) was already decided: it is ${current.status}.`,
                ),
              );
              tr.replaceWith(approvalRow(current));
            },
          })
        : a.comment
          ? h('q', {}, a.comment)
          : a.status === 'pending' && ctx.can('approvals:decide')
            ? h('span', { class: 'muted' }, cannotDecide(a, ctx))
            : '—',
    );
    // A phone shows each approval as a card (table.stack-narrow): each cell names its column.
    for (const [i, cell] of [...tr.cells].entries()) cell.dataset['label'] = columns[i] ?? '';
    return tr;
  };

  let cursor: string | null = null;
  const load = async () => {
    more.disabled = true;
    const page: ApprovalList = await get<ApprovalList>('/v1/approvals', {
      status: status === 'all' ? undefined : status,
      session_id: session || undefined,
      limit: PAGE_SIZE,
      cursor: cursor ?? undefined,
    });
    if (page.approvals.length === 0 && cursor === null) {
      body.append(
        h(
          'tr',
          {},
          h(
            'td',
            { colspan: columns.length, class: 'muted' },
            status === 'pending' ? 'Nothing waits for you.' : 'None.',
          ),
        ),
      );
    }
    body.append(...page.approvals.map(approvalRow));
    cursor = page.next_cursor;
    more.hidden = cursor === null;
    more.disabled = false;
  };
  more.addEventListener(
    'click',
    () => void load().catch((error: unknown) => replace(notice, errorBox(error))),
  );
  const caption =
    status === 'pending'
      ? 'Held actions waiting for a decision, newest first'
      : `Approvals: ${status}, newest first`;
  const wrap = table(caption, columns, []);
  wrap.querySelector('table')!.classList.add('stack-narrow');
  wrap.querySelector('tbody')!.replaceWith(body);
  await load();
  replace(root, filters, notice, wrap, h('p', {}, more));
}

/** The decisions an approval released (its `approval.used` events), newest first. */
async function uses(approval: Approval, ctx: PageContext): Promise<HTMLElement | null> {
  if (approval.uses_left === approval.uses || !ctx.can('history:read')) return null;
  const { events } = await get<{ events: HistoryEvent[] }>('/v1/history/events', {
    session_id: approval.session_id,
    type: 'approval.used',
    limit: 100,
  });
  const mine = events.filter((e) => e.data['approval_id'] === approval.id);
  return table(
    'Evaluations this approval released',
    ['Decision', 'When', { text: 'Uses left', class: 'num' }],
    mine.map((e) =>
      row(
        link(`decisions/${seg(String(e.data['decision_id']))}`, shortId(String(e.data['decision_id']), 40)),
        time(e.occurred_at),
        h('td', { class: 'num' }, String(e.data['uses_left'])),
      ),
    ),
    'None among the latest 100 uses in this session.',
  );
}

async function renderOne(root: HTMLElement, ctx: PageContext): Promise<void> {
  const id = ctx.params['id'] ?? '';
  const approval = await get<Approval>(`/v1/approvals/${seg(id)}`);
  const heading = root.closest('main')?.querySelector('h1');
  if (heading) heading.append(' ', badge(approval.status));
  // The address only asks for the notice: it shows when this key did decide so (as the server
  // answers now), so a link cannot claim a decision that was not made, nor say anything else.
  const decided = ctx.query.get('decided');
  const notice =
    decided !== null && decided === approval.status && approval.decided_by === ctx.me.key_id ? decided : null;
  const already = ctx.query.get('already') !== null && approval.status !== 'pending';
  const why = cannotDecide(approval, ctx);
  const released = await uses(approval, ctx).catch((error: unknown) => errorBox(error));
  replace(
    root,
    notice ? h('p', { class: 'notice', role: 'status' }, `You ${notice} this approval.`) : null,
    already
      ? h(
          'p',
          { class: 'error', role: 'alert' },
          `This approval was already decided: it is ${approval.status}.`,
        )
      : null,
    h(
      'section',
      { class: 'panel', 'aria-label': 'Approval' },
      facts([
        ['Approval', h('span', { class: 'mono' }, approval.id)],
        ['Status', badge(approval.status)],
        ['Action', h('strong', {}, approval.action)],
        ['Session', link(`sessions/${seg(approval.session_id)}`, approval.session_id)],
        ['Reason', approval.reason],
        ['Rules', h('code', {}, approval.rules.join(', '))],
        [
          'Held decision',
          ctx.can('history:read')
            ? link(`decisions/${seg(approval.decision_id)}`, shortId(approval.decision_id, 40))
            : shortId(approval.decision_id, 40),
        ],
        [
          'Requested by',
          h('span', {}, ...approval.requesters.flatMap((r, i) => [i > 0 ? ', ' : '', keyLabel(r, ctx)])),
        ],
        ['Requested', time(approval.created_at)],
        ['Expires', time(approval.expires_at)],
        [
          'Approvers',
          approval.approvers.length
            ? approval.approvers.map((list) => `one of: ${list.join(', ')}`).join('; and ')
            : 'any key with approvals:decide',
        ],
        ['Self-approval', approval.allow_self_approval ? 'allowed' : 'not allowed'],
        ['Uses', `${approval.uses_left} of ${approval.uses} left`],
        ['Decided by', keyLabel(approval.decided_by, ctx)],
        ['Decided', time(approval.decided_at)],
        ['Comment', approval.comment ? h('q', {}, approval.comment) : '—'],
        ['Policy revision', h('span', { class: 'mono' }, approval.policy.revision.slice(0, 16))],
        ['Binding digest', shortId(approval.digest, 24)],
      ]),
    ),
    why === null
      ? h(
          'section',
          { 'aria-labelledby': 'h-decide' },
          h('h2', { id: 'h-decide' }, 'Decide'),
          decideForm(approval, ctx, {
            done: (decided) => ctx.navigate(`approvals/${seg(decided.id)}?decided=${decided.status}`),
            // Read again from the server: the badge, "Decided by" and the buttons as they are now.
            stale: (current) => ctx.navigate(`approvals/${seg(current.id)}?already=${current.status}`),
          }),
        )
      : approval.status === 'pending'
        ? h('p', { class: 'muted' }, why)
        : null,
    released ? h('h2', {}, 'Released evaluations') : null,
    released,
    h(
      'div',
      { class: 'grid2' },
      h(
        'section',
        { 'aria-labelledby': 'h-params' },
        h('h2', { id: 'h-params' }, 'Params (secrets masked)'),
        json(approval.params),
      ),
      h(
        'section',
        { 'aria-labelledby': 'h-state' },
        h('h2', { id: 'h-state' }, 'State versions it is bound to'),
        json(approval.state_versions),
      ),
    ),
  );
}

/** The approvals queue (listing needs `approvals:decide`). */
export const approvalsPage: Page = {
  path: 'approvals',
  title: 'Approvals',
  nav: { label: 'Approvals', href: 'approvals' },
  scopes: ['approvals:decide'],
  render: renderQueue,
};

/** One approval: also readable by the agent's key (`gate:evaluate`), which sees no buttons. */
export const approvalPage: Page = {
  path: 'approvals/:id',
  title: 'Approval',
  scopes: ['approvals:decide', 'gate:evaluate'],
  render: renderOne,
};
