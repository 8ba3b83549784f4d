/**
 * The web UI's building blocks, shared by its modules: elements built with DOM calls and
 * textContent (never HTML from data), and readers of the dashboard's JSON answers. Served as
 * /ui/dom.ts, imported by app.ts and the other modules.
 */

export type Json = Record<string, unknown>;

/** A child of `h`: nothing is appended for null, undefined or false. */
export type Child = Node | string | null | undefined | false;

/** The element of ID `id` (the page has it). */
export const byId = (id: string): HTMLElement => {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`#${id} missing`);
  return e;
};

/** An element with attributes and children (strings become text nodes). */
export function h(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
}

/** A select element with `attrs` and its options, each `[value, text]`, in order. */
export function selectOf(
  attrs: Record<string, string>,
  options: readonly (readonly [value: string, text: string])[],
): HTMLSelectElement {
  return h(
    'select',
    attrs,
    ...options.map(([value, text]) => h('option', { value }, text)),
  ) as HTMLSelectElement;
}

/** A push button (`type=button`, `attrs` besides) that calls `onClick` with itself when pressed. */
export function pushButton(
  label: string,
  attrs: Record<string, string>,
  onClick: (b: HTMLButtonElement) => void,
): HTMLButtonElement {
  const b = h('button', { type: 'button', ...attrs }, label) as HTMLButtonElement;
  b.addEventListener('click', () => {
    onClick(b);
  });
  return b;
}

/** A table with its headers and rows, `data-testid` `testId`. */
export function table(headers: string[], rows: Child[][], testId: string): HTMLElement {
  return h(
    'table',
    { 'data-testid': testId },
    h('thead', {}, h('tr', {}, ...headers.map((x) => h('th', {}, x)))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c))))),
  );
}

/** A string, number or boolean as text; `fallback` for anything else. */
export const str = (v: unknown, fallback = ''): string =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : fallback;
/** A finite number, else 0. */
export const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
/** A plain object, else an empty one. */
export const obj = (v: unknown): Json =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {};
/** An array, else an empty one. */
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? (v as unknown[]) : []);
