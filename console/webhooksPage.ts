/**
 * Webhooks: the endpoints, and per endpoint its deliveries (status, attempts, last answer),
 * paged, with redeliver and re-enable. The whole page needs `webhooks:manage`, so every key that
 * sees it may use its buttons.
 */
import { get, post, seg } from './api.js';
import { badge, errorBox, facts, h, link, replace, row, shortId, table, time } from './dom.js';
import type { Delivery, Page, PageContext, Webhook } from './pageTypes.js';
import { DELIVERY_STATUSES } from './vocabulary.js';

const PAGE_SIZE = 50;

function filterText(filter: Webhook['filter']): string {
  if (!filter) return '—';
  const parts: string[] = [];
  if (filter.verdicts) parts.push(`verdicts ${filter.verdicts.join(', ')}`);
  if (filter.session_id) parts.push(`session ${filter.session_id}`);
  return parts.join('; ') || '—';
}

async function renderList(root: HTMLElement): Promise<void> {
  const { webhooks } = await get<{ webhooks: Webhook[] }>('/v1/webhooks');
  replace(
    root,
    table(
      'Registered endpoints',
      ['Endpoint', 'Events', 'Filter', 'Status', 'Created'],
      webhooks.map((w) =>
        row(
          link(`webhooks/${seg(w.id)}`, w.url),
          w.events.join(', '),
          filterText(w.filter),
          badge(w.status),
          time(w.created_at),
        ),
      ),
      'No webhook yet: register one with POST /v1/webhooks.',
    ),
  );
}

async function renderOne(root: HTMLElement, ctx: PageContext): Promise<void> {
  const id = ctx.params['id'] ?? '';
  const status = ctx.query.get('status') ?? '';
  const webhook = await get<Webhook>(`/v1/webhooks/${seg(id)}`);
  const heading = root.closest('main')?.querySelector('h1');
  if (heading) heading.textContent = `Webhook ${webhook.url}`;
  const notice = h('div', { 'aria-live': 'polite' });

  const enable =
    webhook.status === 'disabled'
      ? h(
          'button',
          {
            type: 'button',
            onclick: async () => {
              try {
                await post(`/v1/webhooks/${seg(id)}/enable`);
                ctx.navigate(`webhooks/${seg(id)}`);
              } catch (error) {
                replace(notice, errorBox(error));
              }
            },
          },
          'Re-enable',
        )
      : null;

  const statusSelect = h(
    'select',
    {
      id: 'd-status',
      onchange: () =>
        ctx.navigate(`webhooks/${seg(id)}${statusSelect.value ? `?status=${statusSelect.value}` : ''}`),
    },
    ...['', ...DELIVERY_STATUSES].map((s) =>
      h('option', { value: s, selected: s === status }, s || 'Any status'),
    ),
  );
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'secondary' }, 'Load older deliveries');
  replace(
    root,
    h(
      'section',
      { class: 'panel', 'aria-label': 'Endpoint' },
      facts([
        ['URL', h('span', { class: 'mono' }, webhook.url)],
        ['Events', webhook.events.join(', ')],
        ['Filter', filterText(webhook.filter)],
        ['Status', h('span', {}, badge(webhook.status), ' ', enable)],
        ['Description', webhook.description ?? '—'],
        ['Created', time(webhook.created_at)],
      ]),
    ),
    notice,
    h('h2', {}, 'Deliveries'),
    h('div', { class: 'toolbar' }, h('label', { for: 'd-status' }, 'Status', statusSelect)),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'deliveries' },
        h('caption', {}, 'Deliveries, newest first'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ...['Delivery', 'Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Created', ''].map(
              (t) =>
                h(
                  'th',
                  { scope: 'col', class: t === 'Attempts' ? 'num' : '' },
                  t === '' ? h('span', { class: 'visually-hidden' }, 'Actions') : t,
                ),
            ),
          ),
        ),
        body,
      ),
    ),
    h('p', {}, more),
  );

  let before: string | undefined;
  const deliveryRow = (d: Delivery): HTMLTableRowElement => {
    const redeliver = h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        'aria-label': `Redeliver ${d.delivery_id}`,
        onclick: async () => {
          redeliver.disabled = true;
          try {
            const queued = await post<Delivery>(
              `/v1/webhooks/${seg(id)}/deliveries/${seg(d.delivery_id)}/redeliver`,
            );
            tr.replaceWith(deliveryRow(queued));
            replace(
              notice,
              h('p', { class: 'notice', role: 'status' }, `Delivery ${d.delivery_id} queued again.`),
            );
          } catch (error) {
            replace(notice, errorBox(error));
            redeliver.disabled = false;
          }
        },
      },
      'Redeliver',
    );
    const tr = row(
      shortId(d.delivery_id),
      d.event_type,
      badge(d.status),
      h('td', { class: 'num' }, d.attempts),
      d.last_status_code !== null ? `HTTP ${d.last_status_code}` : (d.last_error ?? '—'),
      time(d.next_attempt_at),
      time(d.created_at),
      redeliver,
    );
    tr.dataset['delivery'] = d.delivery_id;
    return tr;
  };
  const load = async () => {
    more.disabled = true;
    try {
      const { deliveries } = await get<{ deliveries: Delivery[] }>(`/v1/webhooks/${seg(id)}/deliveries`, {
        limit: PAGE_SIZE,
        status: status || undefined,
        before_id: before,
      });
      if (deliveries.length === 0 && before === undefined) {
        body.append(h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No delivery yet.')));
      }
      body.append(...deliveries.map(deliveryRow));
      before = deliveries[deliveries.length - 1]?.delivery_id;
      more.hidden = deliveries.length < PAGE_SIZE;
    } catch (error) {
      replace(notice, errorBox(error));
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener('click', () => void load());
  await load();
}

/** The webhooks list. */
export const webhooksPage: Page = {
  path: 'webhooks',
  title: 'Webhooks',
  nav: { label: 'Webhooks', href: 'webhooks' },
  scopes: ['webhooks:manage'],
  render: renderList,
};

/** One webhook and its deliveries. */
export const webhookPage: Page = {
  path: 'webhooks/:id',
  title: 'Webhook',
  scopes: ['webhooks:manage'],
  render: renderOne,
};
