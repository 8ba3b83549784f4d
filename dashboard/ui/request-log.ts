/**
 * The request log of an API with `enable_detailed_recording` (the Analytics tab, an API chosen):
 * its newest detailed records (`GET /api/analytics/requests?api_id=`), one row per request with
 * its time, method, path, status and latency, and its request and response bodies folded
 * (`<details>`), marked when the gateway cut them. Served as /ui/request-log.ts, imported by
 * app.ts; it builds elements only (the page's `'self'`-only policy: no inline script or style).
 */

import { h as el, num, obj, str, type Json } from './dom.ts';

/** One recorded body, folded: its size in the summary, its text (or base64) inside. */
function body(b: Json, testId: string): HTMLElement {
  const size = num(b.size);
  const text = str(b.body);
  if (size === 0 && text === '') return el('span', { 'data-testid': testId }, '-');
  const notes = [`${String(size)} bytes`];
  if (b.truncated === true) notes.push(`cut at ${String(new TextEncoder().encode(text).length)}`);
  if (b.encoding === 'base64') notes.push('base64');
  return el(
    'details',
    { 'data-testid': testId },
    el('summary', {}, notes.join(', ')),
    el('pre', { class: 'body' }, text),
  );
}

/** The request log of the records answered by `GET /api/analytics/requests`. */
export function requestLog(apiId: string, records: readonly unknown[]): HTMLElement {
  const rows = records.map(obj).map((r) => {
    const d = obj(r.detail);
    const query = str(d.query);
    return el(
      'tr',
      { 'data-record': str(r.id) },
      el('td', {}, new Date(num(r.time)).toISOString().replace('T', ' ').slice(0, 19)),
      el('td', {}, str(r.method)),
      el('td', {}, el('code', {}, str(r.path) + query)),
      el('td', {}, String(num(r.status))),
      el('td', {}, `${String(num(r.latency_ms))} ms`),
      el('td', {}, body(obj(d.request), 'request-body')),
      el('td', {}, body(obj(d.response), 'response-body')),
    );
  });
  return el(
    'div',
    { class: 'ranking', 'data-testid': 'request-log' },
    el('h3', {}, `Request log of ${apiId}`),
    records.length === 0
      ? el(
          'p',
          {},
          'No detailed records in this range: an API records request and response bodies when it sets enable_detailed_recording.',
        )
      : el(
          'table',
          {},
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              ...['Time (UTC)', 'Method', 'Path', 'Status', 'Latency', 'Request body', 'Response body'].map(
                (x) => el('th', {}, x),
              ),
            ),
          ),
          el('tbody', {}, ...rows),
        ),
  );
}
