/**
 * Building the page with DOM calls only: text goes in as text (never as HTML), so nothing the
 * API returns (a value, a reason, an action name) can become markup or script.
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;

/**
 * Creates an element: `h('a', { href: '#/x' }, 'text')`. `on<event>` attributes become listeners;
 * `true` sets an empty attribute, `false` and `undefined` leave it out.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  append(element, ...children);
  return element;
}

/**
 * How a value shows as text. A field erased from the history (docs/data-lifecycle.md) arrives as
 * `{erased: true, by: <seq>}` where the API otherwise has a string: it shows as such.
 */
export function shown(value: unknown): string {
  if (value !== null && typeof value === 'object') {
    const v = value as { erased?: unknown; by?: unknown };
    if (v.erased === true) return v.by == null ? '(erased)' : `(erased by #${String(v.by)})`;
    return JSON.stringify(value);
  }
  return String(value);
}

/** Appends children, skipping empty ones. */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    // Not only nodes arrive as objects: an erased field is an object where a string was typed.
    parent.appendChild(child instanceof Node ? child : document.createTextNode(shown(child)));
  }
}

/** Empties an element and fills it again. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** A coloured label for a verdict or a status. */
export function badge(text: string): HTMLSpanElement {
  return h('span', { class: `badge ${text.replace(/[^A-Za-z_-]/g, '')}` }, text);
}

/** A local, readable time with the ISO value in `datetime`. */
export function time(iso: string | null | undefined): HTMLElement | string {
  if (!iso) return '—';
  const date = new Date(iso);
  return h('time', { datetime: iso, title: iso }, date.toLocaleString());
}

/** A table in a sideways-scrolling wrapper, with a caption for screen readers. */
export function table(
  caption: string,
  headers: Array<string | { text: string; class: string }>,
  rows: HTMLTableRowElement[],
  empty = 'Nothing here yet.',
): HTMLElement {
  const body = h('tbody');
  if (rows.length === 0) {
    body.append(h('tr', {}, h('td', { colspan: headers.length, class: 'muted' }, empty)));
  } else body.append(...rows);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      h('caption', {}, caption),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...headers.map((x) =>
            typeof x === 'string'
              ? h('th', { scope: 'col' }, x)
              : h('th', { scope: 'col', class: x.class }, x.text),
          ),
        ),
      ),
      body,
    ),
  );
}

/** A row of cells. */
export function row(...cells: Array<Child | HTMLTableCellElement>): HTMLTableRowElement {
  return h('tr', {}, ...cells.map((c) => (c instanceof HTMLTableCellElement ? c : h('td', {}, c))));
}

/** A definition list of facts. */
export function facts(entries: Array<[string, Child]>): HTMLDListElement {
  const list = h('dl', { class: 'facts' });
  for (const [term, value] of entries) list.append(h('dt', {}, term), h('dd', {}, value));
  return list;
}

/** JSON, indented, as text. */
export function json(value: unknown): HTMLPreElement {
  return h('pre', {}, JSON.stringify(value, null, 2));
}

/**
 * An error box that screen readers announce: the message, and each entry of a problem's
 * `errors` (a 422 names every field or policy `line:col` that is wrong) as a list.
 */
export function errorBox(error: unknown): HTMLElement {
  const message = (error as Error).message ?? String(error);
  // An entry the message already says word for word (`field: problem`) is not listed twice.
  const entries = ((error as { errors?: Array<{ path: string; message: string }> }).errors ?? []).filter(
    (e) => !message.includes(e.path ? `${e.path}: ${e.message}` : e.message),
  );
  if (entries.length === 0) return h('p', { class: 'error', role: 'alert' }, message);
  return h(
    'div',
    { class: 'error', role: 'alert' },
    h('p', {}, message),
    h(
      'ul',
      {},
      ...entries.map((e) =>
        h('li', {}, e.path ? h('span', { class: 'mono' }, e.path) : null, e.path ? ': ' : '', e.message),
      ),
    ),
  );
}

/** A link inside the console. */
export function link(hash: string, text: Child): HTMLAnchorElement {
  return h('a', { href: `#/${hash}` }, text);
}

/** The first `n` characters of an ID, the whole one in the title. */
export function shortId(id: string, n = 14): HTMLElement {
  return h('span', { class: 'mono', title: id }, id.length > n ? `${id.slice(0, n)}…` : id);
}
