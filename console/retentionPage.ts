/**
 * Retention & holds (docs/data-lifecycle.md), for `admin` keys: the retention in force with a
 * form that sets it (`PUT /v1/retention`; the service refuses a history period below the floor
 * and says so), and the legal holds in force, placed on a session or the tenant and released
 * after a confirmation. Shapes: `RetentionView` of `src/history/pruneSchemas.ts` and `LegalHold`
 * of `src/history/legalHoldSchemas.ts`.
 */
import { ApiError, call, get, post, seg } from './api.js';
import { errorBox, facts, h, link, replace, row, shortId, table, time } from './dom.js';
import type { Page, PageContext } from './pageTypes.js';

/** `GET /v1/retention`. */
interface RetentionView {
  values_after_days: number | null;
  history_after_days: number | null;
  allow_below_floor: boolean;
  source: 'api' | 'policy' | 'none';
  updated_at: string | null;
  updated_by: string | null;
}

/** A legal hold in force. */
interface LegalHold {
  hold_id: string;
  session_id: string | null;
  reference: string;
  placed_by: string;
  placed_at: string;
}

/** The history floor (EU AI Act Art. 19 and 26(6)): the service enforces it, the page only says it. */
const FLOOR_DAYS = 183;

const SOURCES: Record<RetentionView['source'], string> = {
  api: 'set here (PUT /v1/retention)',
  policy: "the active policy's retention:",
  none: 'nothing set: everything is kept',
};

const HOLD_COLUMNS = ['Hold', 'Covers', 'Reference', 'Placed by', 'Placed', 'Actions'];

const days = (n: number | null) => (n === null ? 'kept for good' : `${n.toLocaleString()} days`);
const who = (by: string | null, ctx: PageContext) =>
  by === null ? '—' : by === ctx.me.key_id ? `${by} (you)` : by;

/** A refusal with its status and code first, then the API's message and each field's problem. */
function refused(error: unknown): HTMLElement {
  const box = errorBox(error);
  if (error instanceof ApiError)
    (box.tagName === 'P' ? box : box.firstElementChild!).prepend(
      h('strong', {}, `${error.status} ${error.code}: `),
    );
  return box;
}

function retentionSection(view: RetentionView, ctx: PageContext): HTMLElement {
  const notice = h('div', { 'aria-live': 'polite', id: 'retention-notice' });
  const number = (id: string, value: number | null, help: string) =>
    h('input', {
      id,
      name: id,
      type: 'number',
      min: 1,
      max: 99999,
      step: 1,
      inputmode: 'numeric',
      value: value === null ? '' : String(value),
      placeholder: 'keep',
      'aria-describedby': help,
    });
  const valuesAfter = number('values-after', view.values_after_days, 'values-after-help');
  const historyAfter = number('history-after', view.history_after_days, 'history-after-help');
  const belowFloor = h('input', {
    type: 'checkbox',
    id: 'allow-below-floor',
    checked: view.allow_below_floor,
  });
  const facts_ = h(
    'div',
    { id: 'retention-facts' },
    facts([
      ['Values erased after', days(view.values_after_days)],
      ['History pruned after', days(view.history_after_days)],
      ['Below the floor', view.allow_below_floor ? 'allowed' : `no (at least ${FLOOR_DAYS} days)`],
      ['Source', SOURCES[view.source]],
      ['Updated', time(view.updated_at)],
      ['By', who(view.updated_by, ctx)],
    ]),
  );
  const save = h('button', { type: 'submit' }, 'Save retention');
  const form = h(
    'form',
    {
      'aria-labelledby': 'h-retention-form',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const body: Record<string, unknown> = { allow_below_floor: belowFloor.checked };
        if (valuesAfter.value.trim()) body['values_after'] = `${valuesAfter.value.trim()}d`;
        if (historyAfter.value.trim()) body['history_after'] = `${historyAfter.value.trim()}d`;
        save.disabled = true;
        try {
          const now = await call<RetentionView>('PUT', '/v1/retention', { body });
          const next = retentionSection(now, ctx);
          section.replaceWith(next);
          const fresh = next.querySelector<HTMLElement>('#retention-notice');
          if (fresh)
            replace(
              fresh,
              h('p', { class: 'notice', role: 'status' }, 'Retention saved (retention.configured).'),
            );
        } catch (error) {
          replace(notice, refused(error));
        } finally {
          save.disabled = false;
        }
      },
    },
    h('h3', { id: 'h-retention-form' }, 'Change retention'),
    h(
      'div',
      { class: 'filters' },
      h('label', { for: 'values-after' }, 'Erase values after (days)', valuesAfter),
      h('label', { for: 'history-after' }, 'Prune history after (days)', historyAfter),
    ),
    h(
      'p',
      { class: 'muted', id: 'values-after-help' },
      'Older values that callers wrote are erased, in events, state items, conflicts and approvals; the envelopes stay. Empty: kept for good.',
    ),
    h(
      'p',
      { class: 'muted', id: 'history-after-help' },
      `Older events are deleted behind a signed checkpoint; at least ${FLOOR_DAYS} days (six months, EU AI Act Art. 19 and 26(6)). Empty: kept for good.`,
    ),
    h(
      'label',
      { for: 'allow-below-floor', class: 'inline danger-text' },
      belowFloor,
      ` Allow history below the ${FLOOR_DAYS}-day floor (each prune records below_floor)`,
    ),
    h(
      'p',
      { class: 'muted' },
      "Saving replaces the retention in force (and takes the place of the policy's retention:); it is recorded as a retention.configured event.",
    ),
    notice,
    h('div', { class: 'actions' }, save),
  );
  const section = h(
    'section',
    { class: 'panel', 'aria-labelledby': 'h-retention' },
    h('h2', { id: 'h-retention' }, 'Retention in force'),
    facts_,
    form,
  );
  return section;
}

async function holdsSection(ctx: PageContext): Promise<HTMLElement> {
  const notice = h('div', { 'aria-live': 'polite', id: 'holds-notice' });
  const list = h('div', { id: 'holds' });
  const section = h('section', { 'aria-labelledby': 'h-holds' });

  const holdRow = (hold: LegalHold): HTMLTableRowElement => {
    const actions = h('div', { class: 'toolbar' });
    const what = `${hold.reference}${hold.session_id ? ` on session ${hold.session_id}` : ' on the tenant'}`;
    const ask = () =>
      replace(
        actions,
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            'aria-label': `Release hold ${what}`,
            onclick: () => {
              const yes = h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  onclick: async () => {
                    yes.disabled = true;
                    try {
                      await call<LegalHold>('DELETE', `/v1/legal-holds/${seg(hold.hold_id)}`);
                      await load();
                      replace(
                        notice,
                        h(
                          'p',
                          { class: 'notice', role: 'status' },
                          `Released hold ${hold.hold_id} (${hold.reference}).`,
                        ),
                      );
                    } catch (error) {
                      replace(notice, refused(error));
                      yes.disabled = false;
                    }
                  },
                },
                `Confirm release of ${hold.reference}`,
              );
              replace(
                actions,
                yes,
                h('button', { type: 'button', class: 'secondary', onclick: ask }, 'Cancel'),
              );
              yes.focus();
            },
          },
          'Release',
        ),
      );
    ask();
    const tr = row(
      shortId(hold.hold_id, 18),
      hold.session_id === null
        ? h('strong', {}, 'the whole tenant')
        : ctx.can('state:read')
          ? link(`sessions/${seg(hold.session_id)}`, hold.session_id)
          : h('span', { class: 'mono' }, hold.session_id),
      h('span', { class: 'mono' }, hold.reference),
      who(hold.placed_by, ctx),
      time(hold.placed_at),
      actions,
    );
    tr.dataset['hold'] = hold.hold_id;
    // A phone shows each hold as a card (table.stack-narrow): each cell names its column.
    for (const [i, cell] of [...tr.cells].entries()) cell.dataset['label'] = HOLD_COLUMNS[i] ?? '';
    return tr;
  };

  const load = async () => {
    const { holds } = await get<{ holds: LegalHold[] }>('/v1/legal-holds');
    const wrap = table(
      'Legal holds in force',
      HOLD_COLUMNS,
      holds.map(holdRow),
      'No legal hold is in force.',
    );
    wrap.querySelector('table')!.classList.add('stack-narrow');
    replace(list, wrap);
  };

  const tenantWide = h('input', { type: 'radio', name: 'hold-scope', id: 'hold-tenant', value: 'tenant' });
  const oneSession = h('input', {
    type: 'radio',
    name: 'hold-scope',
    id: 'hold-session-scope',
    value: 'session',
    checked: true,
  });
  const session = h('input', {
    id: 'hold-session',
    autocomplete: 'off',
    spellcheck: 'false',
    maxlength: 128,
  });
  const reference = h('input', {
    id: 'hold-reference',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    maxlength: 128,
    placeholder: 'CASE-7',
    'aria-describedby': 'hold-reference-help',
  });
  const sync = () => {
    session.disabled = tenantWide.checked;
    session.required = !tenantWide.checked;
  };
  tenantWide.addEventListener('change', sync);
  oneSession.addEventListener('change', sync);
  sync();
  const place = h('button', { type: 'submit' }, 'Place hold');
  const form = h(
    'form',
    {
      class: 'panel',
      'aria-labelledby': 'h-place-hold',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        place.disabled = true;
        try {
          const hold = await post<LegalHold>('/v1/legal-holds', {
            ...(tenantWide.checked ? {} : { session_id: session.value.trim() }),
            reference: reference.value.trim(),
          });
          await load();
          reference.value = '';
          session.value = '';
          replace(
            notice,
            h(
              'p',
              { class: 'notice', role: 'status' },
              `Placed hold ${hold.hold_id} (${hold.reference}) on ${hold.session_id ? `session ${hold.session_id}` : 'the whole tenant'}.`,
            ),
          );
        } catch (error) {
          replace(notice, refused(error));
        } finally {
          place.disabled = false;
        }
      },
    },
    h('h3', { id: 'h-place-hold' }, 'Place a hold'),
    h(
      'p',
      { class: 'muted' },
      'While a hold is in force, what it covers is neither erased nor pruned; retention skips it. A tenant-wide hold stops both for every session.',
    ),
    h(
      'fieldset',
      { class: 'choice' },
      h('legend', {}, 'Covers'),
      h('label', { for: 'hold-session-scope', class: 'inline' }, oneSession, ' One session'),
      h('label', { for: 'hold-tenant', class: 'inline' }, tenantWide, ' The whole tenant'),
    ),
    h(
      'div',
      { class: 'filters' },
      h('label', { for: 'hold-session' }, 'Session ID', session),
      h('label', { for: 'hold-reference' }, 'Reference', reference),
      place,
    ),
    h(
      'p',
      { class: 'muted', id: 'hold-reference-help' },
      'The reference (a case ID such as CASE-7) is kept in the chain: never personal data.',
    ),
  );
  await load();
  section.append(h('h2', { id: 'h-holds' }, 'Legal holds'), notice, list, form);
  return section;
}

async function render(root: HTMLElement, ctx: PageContext): Promise<void> {
  const view = await get<RetentionView>('/v1/retention');
  const holds = await holdsSection(ctx);
  replace(root, retentionSection(view, ctx), holds);
}

/** Retention and legal holds: `admin` keys only, as the routes are. */
export const retentionPage: Page = {
  path: 'retention',
  title: 'Retention & holds',
  nav: { label: 'Retention', href: 'retention' },
  scopes: ['admin'],
  render,
};
