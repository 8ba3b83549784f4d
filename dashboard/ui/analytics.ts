/**
 * The web UI's Analytics tab: the organisation's traffic over a range (relative, updated every
 * 15 s, or custom), for all APIs or one, all keys or one: totals, requests and errors and latency
 * over time (uPlot charts, each with its table), rankings of APIs, refusals, keys and endpoints,
 * the quota usage per key (quota-usage.ts) and an API's request log (request-log.ts). Served as
 * /ui/analytics.ts, imported by app.ts, which hands it how to call the dashboard.
 */

import type uPlot from 'uplot';
import { arr, h, num, obj, str, table, type Child, type Json } from './dom.ts';
import { quotaUsage } from './quota-usage.ts';
import { requestLog } from './request-log.ts';

/** What app.ts gives the analytics view. */
export interface AnalyticsEnv {
  /** Calls the dashboard with the signed-in key (throws the dashboard's refusal). */
  call(method: string, path: string, body?: unknown): Promise<Json>;
  /** Draws the current tab again. */
  rerender(): Promise<void>;
  /** The signed-in user's organisation name. */
  orgName(): string;
}

/** uPlot's constructor (node_modules/uplot, served at /ui/vendor/uplot.js), loaded once. */
type UPlotCtor = typeof uPlot;
let uplotLoaded: Promise<UPlotCtor> | undefined;
const UPLOT_URL = '/ui/vendor/uplot.js';
function loadUplot(): Promise<UPlotCtor> {
  uplotLoaded ??= (import(UPLOT_URL) as Promise<{ default: UPlotCtor }>).then((m) => m.default);
  return uplotLoaded;
}

/** Charts on the page, destroyed when the view is drawn again. */
let charts: { destroy(): void }[] = [];
/** The analytics view's refresh timer (live updates of a relative range). */
let analyticsTimer: number | undefined;

/** Ranges the analytics view offers, in milliseconds back from now. */
const RANGES: readonly [value: string, label: string, ms: number][] = [
  ['1h', 'Last hour', 3_600_000],
  ['6h', 'Last 6 hours', 6 * 3_600_000],
  ['1d', 'Last day', 24 * 3_600_000],
  ['7d', 'Last week', 7 * 24 * 3_600_000],
  ['30d', 'Last 30 days', 30 * 24 * 3_600_000],
];

const when = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 16);

/** The analytics query of the controls: from, to (ms), API. */
interface AnalyticsQuery {
  range: string;
  from: number;
  to: number;
  api: string;
  /** One key's ID (its totals and series), or ''. */
  key: string;
}

function analyticsQuery(): AnalyticsQuery {
  const params = new URLSearchParams(location.hash.replace(/^#analytics\??/, ''));
  const range = params.get('range') ?? '1h';
  const api = params.get('api') ?? '';
  const key = params.get('key') ?? '';
  if (range === 'custom') {
    const from = Date.parse(params.get('from') ?? '');
    const to = Date.parse(params.get('to') ?? '');
    if (Number.isFinite(from) && Number.isFinite(to)) return { range, from, to, api, key };
  }
  const ms = (RANGES.find((r) => r[0] === range) ?? RANGES[0] ?? ['1h', '', 3_600_000])[2];
  const to = Date.now();
  return { range: range === 'custom' ? '1h' : range, from: to - ms, to, api, key };
}

/** Every period of the range, with zeros where the series has no row. */
function filled(series: Json[], from: number, to: number, step: number): Json[] {
  const byAt = new Map(series.map((x) => [num(x.at), x]));
  const out: Json[] = [];
  for (let at = Math.floor(from / step) * step; at < to; at += step) out.push(byAt.get(at) ?? { at });
  return out;
}

/** A time-series chart (uPlot) with its table behind it. */
async function timeChart(
  title: string,
  testId: string,
  rows: Json[],
  lines: readonly [field: string, label: string, color: string][],
  unit: string,
): Promise<HTMLElement> {
  const box = h('div', { class: 'chart-canvas' });
  const section = h(
    'section',
    { class: 'chart', 'data-testid': testId },
    h('h3', {}, title),
    box,
    h(
      'details',
      {},
      h('summary', {}, `${title}: table`),
      table(
        ['Time (UTC)', ...lines.map((l) => `${l[1]}${unit === '' ? '' : ` (${unit})`}`)],
        rows
          .filter((r) => lines.some((l) => num(r[l[0]]) > 0))
          .map((r) => [when(num(r.at)), ...lines.map((l) => String(num(r[l[0]])))]),
        `${testId}-table`,
      ),
    ),
  );
  const UPlot = await loadUplot();
  const chart = new UPlot(
    {
      width: 460,
      height: 220,
      series: [{}, ...lines.map(([, label, stroke]) => ({ label, stroke, width: 2 }))],
      axes: [{}, { label: unit }],
    },
    [rows.map((r) => num(r.at) / 1000), ...lines.map(([field]) => rows.map((r) => num(r[field])))],
    box,
  );
  charts.push(chart);
  return section;
}

/** A ranking (refusals, top keys, top endpoints): a meter per row, the figures beside it. */
function ranking(title: string, testId: string, headers: string[], rows: [Child[], number][]): HTMLElement {
  const max = Math.max(1, ...rows.map((r) => r[1]));
  return h(
    'section',
    { class: 'chart', 'data-testid': testId },
    h('h3', {}, title),
    rows.length === 0
      ? h('p', {}, 'Nothing in this range.')
      : table(
          [...headers, ''],
          rows.map(([cells, value]) => [
            ...cells,
            h('meter', { min: '0', max: String(max), value: String(value), title: String(value) }),
          ]),
          `${testId}-table`,
        ),
  );
}

/** Stops the analytics view's refresh (the page is drawn again, or another tab is shown). */
export function stopAnalytics(): void {
  window.clearTimeout(analyticsTimer);
}

/** The Analytics tab: traffic over the chosen range, API and key, refreshed every 15 s. */
export async function viewAnalytics(env: AnalyticsEnv): Promise<Node> {
  for (const c of charts) c.destroy();
  charts = [];
  const q = analyticsQuery();
  const params = new URLSearchParams({ from: String(q.from), to: String(q.to) });
  if (q.api !== '') params.set('api_id', q.api);
  if (q.key !== '') params.set('key', q.key);
  const t = await env.call('GET', `/api/analytics/traffic?${params.toString()}`);
  const totals = obj(t.totals);
  const step = num(t.step_ms) || 60_000;
  const rows = filled(arr(t.series).map(obj), num(t.from), num(t.to), step);

  const go = (next: Partial<Record<string, string>>): void => {
    const p = new URLSearchParams({ range: q.range, api: q.api, key: q.key });
    for (const [k, v] of Object.entries(next)) if (v !== undefined) p.set(k, v);
    location.hash = `analytics?${p.toString()}`;
  };
  const rangeSelect = h(
    'select',
    { id: 'analytics-range', 'aria-label': 'Time range' },
    ...RANGES.map(([v, label]) => {
      const o = h('option', { value: v }, label);
      if (v === q.range) o.setAttribute('selected', '');
      return o;
    }),
    h('option', q.range === 'custom' ? { value: 'custom', selected: '' } : { value: 'custom' }, 'Custom…'),
  ) as HTMLSelectElement;
  const apiSelect = h(
    'select',
    { id: 'analytics-api', 'aria-label': 'API' },
    h('option', { value: '' }, 'All APIs'),
    ...arr(t.apis)
      .map(obj)
      .map((a) => {
        const o = h('option', { value: str(a.api_id) }, str(a.api_id));
        if (str(a.api_id) === q.api) o.setAttribute('selected', '');
        return o;
      }),
  ) as HTMLSelectElement;
  if (q.api !== '' && !arr(t.apis).some((a) => str(obj(a).api_id) === q.api))
    apiSelect.append(h('option', { value: q.api, selected: '' }, q.api));
  const local = (ms: number): string =>
    new Date(ms - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  const fromInput = h('input', {
    type: 'datetime-local',
    id: 'analytics-from',
    value: local(q.from),
  }) as HTMLInputElement;
  const toInput = h('input', {
    type: 'datetime-local',
    id: 'analytics-to',
    value: local(q.to),
  }) as HTMLInputElement;
  const custom = h(
    'span',
    { id: 'analytics-custom' },
    h('label', {}, 'From ', fromInput),
    ' ',
    h('label', {}, 'To ', toInput),
    ' ',
    h('button', { type: 'button', id: 'analytics-apply' }, 'Show'),
  );
  custom.hidden = rangeSelect.value !== 'custom';
  rangeSelect.addEventListener('change', () => {
    if (rangeSelect.value === 'custom') custom.hidden = false;
    else go({ range: rangeSelect.value });
  });
  apiSelect.addEventListener('change', () => {
    go({ api: apiSelect.value });
  });
  custom.querySelector('button')?.addEventListener('click', () => {
    go({
      range: 'custom',
      from: new Date(fromInput.value).toISOString(),
      to: new Date(toInput.value).toISOString(),
    });
  });

  const mask = (k: string): string => `${k.slice(0, 6)}…${k.slice(-4)}`;
  const keyRow = arr(t.top_keys)
    .map(obj)
    .find((k) => str(k.key) === q.key);
  const keyLabel = q.key === '' ? '' : str(keyRow?.alias) || mask(q.key);
  const keyLink = (k: string): string => {
    const p = new URLSearchParams(location.hash.replace(/^#analytics\??/, ''));
    if (k === '') p.delete('key');
    else p.set('key', k);
    return `#analytics?${p.toString()}`;
  };
  const figure = (label: string, value: string, id: string): HTMLElement =>
    h('div', { 'data-testid': id }, label, h('strong', {}, value));
  const section = h(
    'section',
    { 'data-testid': 'analytics' },
    h('h2', {}, 'Traffic analytics'),
    h(
      'div',
      { class: 'analytics-controls' },
      h('label', {}, 'Range ', rangeSelect),
      h('label', {}, 'API ', apiSelect),
      custom,
    ),
    h(
      'p',
      {},
      `${when(num(t.from))} to ${when(num(t.to))} UTC, per ${str(t.resolution)}`,
      q.range === 'custom' ? '' : ' · updates every 15 s',
      q.key === '' ? '' : ' · ',
      q.key === ''
        ? ''
        : h('a', { href: keyLink(''), id: 'analytics-all-keys' }, `key ${keyLabel}: show all keys`),
    ),
    h(
      'div',
      { class: 'totals' },
      figure('Requests', String(num(totals.requests)), 'total-requests'),
      figure('Errors', String(num(totals.errors)), 'total-errors'),
      figure('p50', `${String(num(totals.latency_p50_ms))} ms`, 'total-p50'),
      figure('p95', `${String(num(totals.latency_p95_ms))} ms`, 'total-p95'),
      figure('p99', `${String(num(totals.latency_p99_ms))} ms`, 'total-p99'),
    ),
  );
  const grid = h('div', { class: 'charts' });
  section.append(grid);
  grid.append(
    await timeChart(
      `Requests and errors${q.api === '' && keyLabel === '' ? ` of organisation ${env.orgName()}` : ''}${q.api === '' ? '' : ` of ${q.api}`}${keyLabel === '' ? '' : ` of key ${keyLabel}`}`,
      'chart-requests',
      rows,
      [
        ['requests', 'Requests', '#2a6fdb'],
        ['errors', 'Errors', '#d9412b'],
      ],
      '',
    ),
    await timeChart(
      'Latency',
      'chart-latency',
      rows,
      [
        ['latency_p50_ms', 'p50', '#2a9d5b'],
        ['latency_p95_ms', 'p95', '#e0a30b'],
        ['latency_p99_ms', 'p99', '#d9412b'],
      ],
      'ms',
    ),
    ranking(
      'Requests per API',
      'chart-apis',
      ['API', 'Requests', 'Errors', 'p95 (ms)'],
      arr(t.apis)
        .map(obj)
        .map((a) => [
          [str(a.api_id), String(num(a.requests)), String(num(a.errors)), String(num(a.latency_p95_ms))],
          num(a.requests),
        ]),
    ),
    ranking(
      'Refusals by reason',
      'chart-refusals',
      ['Reason', 'Requests'],
      arr(t.refusals)
        .map(obj)
        .map((r) => [[str(r.reason), String(num(r.requests))], num(r.requests)]),
    ),
    ranking(
      'Top keys',
      'chart-keys',
      ['Key', 'Alias', 'Requests', 'Errors'],
      arr(t.top_keys)
        .map(obj)
        .map((k) => [
          [
            h('a', { href: keyLink(str(k.key)), 'data-key': str(k.key) }, h('code', {}, mask(str(k.key)))),
            str(k.alias) || '-',
            String(num(k.requests)),
            String(num(k.errors)),
          ],
          num(k.requests),
        ]),
    ),
    ranking(
      'Top endpoints',
      'chart-endpoints',
      ['API', 'Endpoint', 'Requests', 'Errors', 'p95 (ms)'],
      arr(t.top_endpoints)
        .map(obj)
        .map((e) => [
          [
            str(e.api_id),
            h('code', {}, str(e.endpoint)),
            String(num(e.requests)),
            String(num(e.errors)),
            String(num(e.latency_p95_ms)),
          ],
          num(e.requests),
        ]),
    ),
  );
  // Quota usage per key (the organisation's keys, whatever the API chosen).
  grid.append(quotaUsage(arr((await env.call('GET', '/api/analytics/quotas')).keys)));
  if (q.api !== '') {
    // The API's detailed records (enable_detailed_recording), newest first.
    const log = await env.call(
      'GET',
      `/api/analytics/requests?${new URLSearchParams({ api_id: q.api, from: String(q.from), to: String(q.to) }).toString()}`,
    );
    section.append(requestLog(q.api, arr(log.records)));
  }
  if (q.range !== 'custom') {
    analyticsTimer = window.setTimeout(() => {
      if (location.hash.startsWith('#analytics')) void env.rerender();
    }, 15_000);
  }
  return section;
}
