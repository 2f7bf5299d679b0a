/**
 * Approvals (issue 16): the queue of held actions, approve / deny with a comment, who decided
 * what. Written against the routes the issue names (`GET /v1/approvals`, `GET /v1/approvals/{id}`,
 * `POST /v1/approvals/{id}/approve|deny`); the shell hides the page where the server answers 404.
 * Fields are read defensively until that API's shape is final.
 */
import { ApiError, get, post, seg } from './api.js';
import { badge, errorBox, facts, h, json, link, replace, row, shortId, table, time } from './dom.js';
import type { Page, PageContext } from './pageTypes.js';

/** An approval as far as the console reads it. */
interface Approval {
  id?: string;
  approval_id?: string;
  status: string;
  session_id?: string;
  action?: string;
  decision_id?: string;
  params?: unknown;
  requested_by?: string;
  created_at?: string;
  requested_at?: string;
  expires_at?: string;
  decided_by?: string | null;
  decided_at?: string | null;
  comment?: string | null;
}

interface ApprovalList {
  approvals: Approval[];
  next_cursor?: string | null;
}

const idOf = (a: Approval) => a.id ?? a.approval_id ?? '';
const STATUSES = ['pending', 'approved', 'denied', 'expired', 'used'];

/** The number of pending approvals, or undefined where the server has no approvals. */
export async function pendingCount(): Promise<number | undefined> {
  try {
    const list = await get<ApprovalList>('/v1/approvals', { status: 'pending', limit: 100 });
    return list.approvals.length;
  } catch (error) {
    if (error instanceof ApiError) return undefined;
    throw error;
  }
}

function decideForm(approval: Approval, ctx: PageContext, done: () => void): HTMLElement {
  const id = idOf(approval);
  const inputId = `comment-${id}`;
  const comment = h('input', { id: inputId, name: 'comment', autocomplete: 'off', maxlength: 1000 });
  const message = h('div', { 'aria-live': 'polite' });
  const decide = (verb: 'approve' | 'deny') => async (event: Event) => {
    const button = event.currentTarget as HTMLButtonElement;
    button.disabled = true;
    try {
      await post(
        `/v1/approvals/${seg(id)}/${verb}`,
        comment.value.trim() ? { comment: comment.value.trim() } : {},
      );
      ctx.refreshHeader();
      done();
    } catch (error) {
      replace(message, errorBox(error));
      button.disabled = false;
    }
  };
  return h(
    'div',
    { class: 'actions' },
    h('label', { for: inputId }, 'Comment (optional)', comment),
    h(
      'button',
      { type: 'button', onclick: decide('approve'), 'aria-label': `Approve ${approval.action ?? id}` },
      'Approve',
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: decide('deny'),
        'aria-label': `Deny ${approval.action ?? id}`,
      },
      'Deny',
    ),
    message,
  );
}

async function renderQueue(root: HTMLElement, ctx: PageContext): Promise<void> {
  const status = ctx.query.get('status') ?? 'pending';
  const select = h(
    'select',
    { id: 'a-status', onchange: () => ctx.navigate(`approvals?status=${select.value}`) },
    ...[...STATUSES, 'all'].map((s) => h('option', { value: s, selected: s === status }, s)),
  );
  const list = await get<ApprovalList>('/v1/approvals', {
    status: status === 'all' ? undefined : status,
    limit: 50,
  });
  const canDecide = ctx.can('approvals:decide');
  replace(
    root,
    h('div', { class: 'toolbar' }, h('label', { for: 'a-status' }, 'Status', select)),
    table(
      status === 'pending' ? 'Held actions waiting for a decision' : `Approvals: ${status}`,
      [
        'Action',
        'Session',
        'Status',
        'Requested',
        'Expires',
        'Decided by',
        canDecide && status === 'pending' ? 'Decide' : 'Comment',
      ],
      list.approvals.map((a) =>
        row(
          link(`approvals/${seg(idOf(a))}`, h('strong', {}, a.action ?? idOf(a))),
          a.session_id ? link(`sessions/${seg(a.session_id)}`, a.session_id) : '—',
          badge(a.status),
          time(a.created_at ?? a.requested_at),
          time(a.expires_at),
          a.decided_by ?? '—',
          canDecide && a.status === 'pending'
            ? decideForm(a, ctx, () => ctx.navigate(`approvals?status=${status}`))
            : (a.comment ?? '—'),
        ),
      ),
      status === 'pending' ? 'Nothing waits for you.' : 'None.',
    ),
  );
}

async function renderOne(root: HTMLElement, ctx: PageContext): Promise<void> {
  const id = ctx.params['id'] ?? '';
  const approval = await get<Approval>(`/v1/approvals/${seg(id)}`);
  replace(
    root,
    h(
      'section',
      { class: 'panel', 'aria-label': 'Approval' },
      facts([
        ['Approval', shortId(idOf(approval), 40)],
        ['Status', badge(approval.status)],
        ['Action', approval.action ?? '—'],
        [
          'Session',
          approval.session_id ? link(`sessions/${seg(approval.session_id)}`, approval.session_id) : '—',
        ],
        [
          'Decision',
          approval.decision_id
            ? link(`decisions/${seg(approval.decision_id)}`, shortId(approval.decision_id))
            : '—',
        ],
        ['Requested by', approval.requested_by ?? '—'],
        ['Requested', time(approval.created_at ?? approval.requested_at)],
        ['Expires', time(approval.expires_at)],
        ['Decided by', approval.decided_by ?? '—'],
        ['Decided', time(approval.decided_at)],
        ['Comment', approval.comment ?? '—'],
      ]),
    ),
    approval.params === undefined ? null : h('h2', {}, 'Params'),
    approval.params === undefined ? null : json(approval.params),
    approval.status === 'pending' && ctx.can('approvals:decide')
      ? decideForm(approval, ctx, () => ctx.navigate(`approvals/${seg(id)}`))
      : null,
  );
}

/** The approvals queue. */
export const approvalsPage: Page = {
  path: 'approvals',
  title: 'Approvals',
  nav: { label: 'Approvals', href: 'approvals' },
  scopes: ['approvals:decide', 'history:read'],
  probe: '/v1/approvals?limit=1',
  render: renderQueue,
};

/** One approval. */
export const approvalPage: Page = {
  path: 'approvals/:id',
  title: 'Approval',
  scopes: ['approvals:decide', 'history:read'],
  probe: '/v1/approvals?limit=1',
  render: renderOne,
};
