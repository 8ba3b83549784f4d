/**
 * The web UI's lists: a search box above each list's table, and filters on its columns of a few
 * values, both kept while the page is drawn again. Served as /ui/lists.ts, imported by app.ts and
 * the views.
 */

import { h } from './dom.ts';

/** The search of each list, kept while the page is drawn again (after an action, on a tab change). */
const searches = new Map<string, string>();
/** The filters of each list (`<list>/<column>` -> value), kept as the searches are. */
const filters = new Map<string, string>();

/** Columns a list can be filtered by, when they hold at least two values. */
const FILTERED = new Set(['Type', 'State', 'System user', 'Action', 'Kind']);

/**
 * A list's table with a search box above it: rows whose text does not contain every word typed
 * (case-insensitive) are hidden, and the count of rows shown is given. A column of a few values
 * (FILTERED: state, type, ...) gets a filter beside it: only the rows holding the value chosen.
 */
export function searchable(list: HTMLElement): HTMLElement {
  const id = list.getAttribute('data-testid') ?? 'list';
  const rows = [...list.querySelectorAll('tbody tr')] as HTMLElement[];
  const input = h('input', {
    type: 'search',
    id: `search-${id}`,
    'aria-label': `Search ${id}`,
    placeholder: 'Search…',
    value: searches.get(id) ?? '',
  }) as HTMLInputElement;
  const cell = (r: HTMLElement, i: number): string => (r.children[i]?.textContent ?? '').trim();
  const selects: { index: number; key: string; select: HTMLSelectElement }[] = [];
  [...list.querySelectorAll('thead th')].forEach((th, index) => {
    const name = th.textContent.trim();
    if (!FILTERED.has(name)) return;
    const values = [...new Set(rows.map((r) => cell(r, index)))].sort();
    if (values.length < 2) return;
    const key = `${id}/${name}`;
    const kept = filters.get(key) ?? '';
    const select = h(
      'select',
      { id: `filter-${id}-${name.toLowerCase().replaceAll(' ', '-')}`, 'aria-label': `${name} of ${id}` },
      h('option', { value: '' }, `${name}: all`),
      ...values.map((v) => h('option', v === kept ? { value: v, selected: '' } : { value: v }, v)),
    ) as HTMLSelectElement;
    selects.push({ index, key, select });
  });
  const count = h('span', { class: 'search-count', id: `search-${id}-count` });
  const apply = (): void => {
    const words = input.value
      .toLowerCase()
      .split(/\s+/)
      .filter((w) => w !== '');
    let shown = 0;
    for (const r of rows) {
      const text = r.textContent.toLowerCase();
      r.hidden =
        !words.every((w) => text.includes(w)) ||
        selects.some((f) => f.select.value !== '' && cell(r, f.index) !== f.select.value);
      if (!r.hidden) shown += 1;
    }
    const narrowed = words.length > 0 || selects.some((f) => f.select.value !== '');
    count.textContent = narrowed
      ? `${String(shown)} of ${String(rows.length)} rows`
      : `${String(rows.length)} rows`;
    if (input.value === '') searches.delete(id);
    else searches.set(id, input.value);
    for (const f of selects) {
      if (f.select.value === '') filters.delete(f.key);
      else filters.set(f.key, f.select.value);
    }
  };
  input.addEventListener('input', apply);
  for (const f of selects) f.select.addEventListener('change', apply);
  apply();
  return h(
    'div',
    { class: 'searchable' },
    h('p', { class: 'search' }, input, ' ', ...selects.flatMap((f) => [f.select, ' ']), count),
    list,
  );
}
