/**
 * The Analytics tab's quota usage per key (`GET /api/analytics/quotas`): each key with a quota,
 * its requests in the current quota period against its maximum, as a meter with its figures
 * beside it (the table is the chart). Served as /ui/quota-usage.ts, imported by app.ts.
 */

import { h as el, num, obj, str } from './dom.ts';

/** The quota usage section of the keys answered by `GET /api/analytics/quotas`. */
export function quotaUsage(keys: readonly unknown[]): HTMLElement {
  const rows = keys.map(obj).map((k) => {
    const max = num(k.quota_max);
    const used = num(k.used);
    const id = str(k.key);
    return el(
      'tr',
      { 'data-key': id },
      el('td', {}, el('code', {}, id.length > 12 ? `${id.slice(0, 8)}…` : id)),
      el('td', {}, str(k.alias) || '-'),
      el('td', {}, `${String(used)} / ${String(max)}`),
      el('td', {}, `${String(Math.round((used / max) * 100))} %`),
      el(
        'td',
        {},
        el('meter', {
          min: '0',
          max: String(max),
          value: String(Math.min(used, max)),
          high: String(max * 0.8),
        }),
      ),
    );
  });
  return el(
    'section',
    { class: 'chart', 'data-testid': 'chart-quotas' },
    el('h3', {}, 'Quota usage per key (current period)'),
    rows.length === 0
      ? el('p', {}, 'No key of this organisation has a quota.')
      : el(
          'table',
          { 'data-testid': 'chart-quotas-table' },
          el(
            'thead',
            {},
            el('tr', {}, ...['Key', 'Alias', 'Used / maximum', 'Used', ''].map((x) => el('th', {}, x))),
          ),
          el('tbody', {}, ...rows),
        ),
  );
}
