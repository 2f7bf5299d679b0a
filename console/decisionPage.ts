/**
 * One decision: the action and its params (secrets masked as stored), each rule with its reason
 * and keys, the state items it read (with their versions and sources), shadow results, the
 * outcome, an approval when it has one, and the webhook deliveries of its events.
 */
import { get, seg } from './api.js';
import { badge, errorBox, facts, h, json, link, replace, row, shortId, table, time } from './dom.js';
import type { HistoryEvent } from './historyPage.js';
import type { Delivery, Page, PageContext, StateItem, Webhook } from './pageTypes.js';
import { principalLabel, principalRecordOf } from './principalLabel.js';
import { maskValue } from './secretMask.js';

/** Who asked: the decision's principal, else its evaluation event's; `—` for older records. */
function askedBy(record: object, events: readonly HistoryEvent[]): string {
  const own = principalRecordOf((record as { principal?: unknown }).principal);
  const evaluation = events.find((e) => e.type === 'gate_evaluation');
  const principal = own ?? principalRecordOf(evaluation?.data['principal']);
  return principal ? principalLabel(principal) : '—';
}

interface Reason {
  rule: string;
  verdict: string;
  message: string;
  keys: string[];
}

interface DecisionRecord {
  decision_id: string;
  verdict: string;
  allowed: boolean;
  reason: string;
  reasons: Reason[];
  shadow: Reason[];
  session_id: string;
  action: string;
  policy: { revision: string };
  state_versions: Record<string, number>;
  evaluated_at: string;
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  event_id: string;
  /** A held Block's pending approval, a denied one, or the approval an Allow used (DecisionApprovalSchema). */
  approval?: {
    id: string;
    status: string;
    expires_at: string;
    rules: string[];
    decided_by: string | null;
  };
}

/** The approval a decision cites: its status now, who decided, a link where this key may read it. */
function approvalFact(approval: NonNullable<DecisionRecord['approval']>, ctx: PageContext): HTMLElement {
  const readable = ctx.can('approvals:decide') || ctx.can('gate:evaluate');
  return h(
    'span',
    {},
    readable ? link(`approvals/${seg(approval.id)}`, shortId(approval.id, 40)) : shortId(approval.id, 40),
    ' ',
    badge(approval.status),
    approval.decided_by === null
      ? h('span', { class: 'muted' }, ' expires ', time(approval.expires_at))
      : h('span', { class: 'muted' }, ` decided by ${approval.decided_by}`),
    h('span', { class: 'muted' }, ` · ${approval.rules.join(', ')}`),
  );
}

function reasonsTable(caption: string, reasons: Reason[], empty: string): HTMLElement {
  return table(
    caption,
    ['Rule', 'Verdict', 'Reason', 'Keys'],
    reasons.map((r) =>
      row(h('code', {}, r.rule), badge(r.verdict), r.message, r.keys.length ? r.keys.join(', ') : '—'),
    ),
    empty,
  );
}

/** The `state_versions` entry saying the whole key set was read (its value: how many items). */
const KEY_SET_READ = '*';

/** The version column of a `state_versions` entry: `*` and 0 name no stored version. */
function versionText(key: string, version: number): string {
  if (key === KEY_SET_READ) return `all keys (${version} items)`;
  return version === 0 ? 'absent' : `v${version}`;
}

async function stateRead(record: DecisionRecord, ctx: PageContext): Promise<HTMLElement> {
  const entries = Object.entries(record.state_versions);
  if (!ctx.can('state:read')) {
    return table(
      'State items read (values need the state:read scope)',
      ['Key', 'Version'],
      entries.map(([key, version]) => row(h('code', {}, key), versionText(key, version))),
      'The decision read no state item.',
    );
  }
  const items = await Promise.all(
    entries.map(([key, version]) =>
      key === KEY_SET_READ || version === 0
        ? undefined
        : get<StateItem>(`/v1/state/items/${seg(key)}/versions/${version}`, {
            session_id: record.session_id,
          }).catch(() => undefined),
    ),
  );
  return table(
    'State items read, as they were at the decision',
    ['Key', 'Version', 'Value', 'Type', 'Source (trust)', 'Written'],
    entries.map(([key, version], i) => {
      const item = items[i];
      return row(
        key === KEY_SET_READ
          ? h('code', {}, key)
          : link(`sessions/${seg(record.session_id)}?key=${seg(key)}`, h('code', {}, key)),
        versionText(key, version),
        item
          ? h('span', { class: 'mono' }, maskValue(item.value, item.sensitivity))
          : h('span', { class: 'muted' }, key === KEY_SET_READ || version === 0 ? '—' : 'not readable'),
        item?.type ?? '—',
        item ? `${item.source} (${item.trust})` : '—',
        time(item?.updated_at),
      );
    }),
    'The decision read no state item.',
  );
}

async function deliveries(record: DecisionRecord, events: HistoryEvent[]): Promise<HTMLElement> {
  const ids = new Set([record.event_id, ...events.map((e) => e.event_id)]);
  const { webhooks } = await get<{ webhooks: Webhook[] }>('/v1/webhooks');
  const rows: HTMLTableRowElement[] = [];
  for (const webhook of webhooks) {
    const { deliveries: list } = await get<{ deliveries: Delivery[] }>(
      `/v1/webhooks/${seg(webhook.id)}/deliveries`,
      {
        limit: 100,
      },
    );
    for (const d of list.filter((x) => ids.has(x.event_id))) {
      rows.push(
        row(
          link(`webhooks/${seg(webhook.id)}`, webhook.url),
          d.event_type,
          badge(d.status),
          h('td', { class: 'num' }, d.attempts),
          d.last_status_code !== null ? `HTTP ${d.last_status_code}` : (d.last_error ?? '—'),
          time(d.updated_at),
        ),
      );
    }
  }
  return table(
    "Webhook deliveries of this decision's events (among each endpoint's latest 100)",
    ['Endpoint', 'Event', 'Status', { text: 'Attempts', class: 'num' }, 'Last answer', 'Updated'],
    rows,
    'No delivery: no endpoint subscribes to these events.',
  );
}

async function render(root: HTMLElement, ctx: PageContext): Promise<void> {
  const id = ctx.params['id'] ?? '';
  const record = await get<DecisionRecord>(`/v1/decisions/${seg(id)}`);
  const { events } = await get<{ events: HistoryEvent[] }>('/v1/history/events', {
    decision_id: id,
    order: 'asc',
    limit: 50,
  });
  const outcome = events.find((e) => e.type === 'action_outcome');
  const heading = root.closest('main')?.querySelector('h1');
  if (heading) heading.append(' ', badge(record.verdict));

  const summary = h(
    'section',
    { class: 'panel', 'aria-label': 'Summary' },
    facts([
      ['Decision', shortId(record.decision_id, 40)],
      ['Action', h('strong', {}, record.action)],
      ['Verdict', h('span', {}, badge(record.verdict), record.allowed ? ' allowed' : ' not allowed')],
      ['Reason', record.reason],
      ['Session', link(`sessions/${seg(record.session_id)}`, record.session_id)],
      ['Evaluated', time(record.evaluated_at)],
      ['Policy revision', h('span', { class: 'mono' }, record.policy.revision.slice(0, 16))],
      ['Asked by', askedBy(record, events)],
      [
        'Outcome',
        outcome
          ? h(
              'span',
              {},
              badge(String(outcome.data['outcome'])),
              ' ',
              String(outcome.data['detail'] ?? ''),
              ' ',
              time(outcome.occurred_at),
            )
          : h('span', { class: 'muted' }, 'not reported'),
      ],
      ...(record.approval
        ? ([['Approval', approvalFact(record.approval, ctx)]] as Array<[string, Node]>)
        : []),
    ]),
  );
  const deliveriesSection = h(
    'section',
    { 'aria-labelledby': 'h-deliveries' },
    h('h2', { id: 'h-deliveries' }, 'Webhook deliveries'),
  );
  replace(
    root,
    summary,
    h(
      'div',
      { class: 'grid2' },
      h(
        'section',
        { 'aria-labelledby': 'h-params' },
        h('h2', { id: 'h-params' }, 'Params (secrets masked as stored)'),
        json(record.params),
      ),
      h(
        'section',
        { 'aria-labelledby': 'h-context' },
        h('h2', { id: 'h-context' }, 'Context'),
        json(record.context),
      ),
    ),
    h('h2', {}, 'Rules that fired'),
    reasonsTable(
      'Each rule with its verdict, reason and the keys it looked at',
      record.reasons,
      'No rule fired: the default verdict applied.',
    ),
    h('h2', {}, 'State it read'),
    await stateRead(record, ctx),
    h('h2', {}, 'Shadow rules'),
    reasonsTable(
      'Shadow rules: evaluated and recorded, never enforced',
      record.shadow,
      'No shadow rule fired.',
    ),
    h('h2', {}, 'Events'),
    table(
      'History events of this decision',
      [{ text: 'Seq', class: 'num' }, 'Type', 'When'],
      events.map((e) => row(h('td', { class: 'num' }, e.seq), e.type, time(e.occurred_at))),
    ),
    ctx.can('webhooks:manage') ? deliveriesSection : null,
  );
  if (ctx.can('webhooks:manage')) {
    try {
      deliveriesSection.append(await deliveries(record, events));
    } catch (error) {
      deliveriesSection.append(errorBox(error));
    }
  }
}

/** The decision page. */
export const decisionPage: Page = {
  path: 'decisions/:id',
  title: 'Decision',
  scopes: ['history:read'],
  render,
};
