/**
 * Body templates (`extended_paths.transform` and `transform_response`) as a table: request in;
 * status, the body the upstream received and the body the client received out. Each table runs
 * against the files and Redis stores with the fast path on and off; a route with a body template
 * is always served by node:http (it reads bodies). Writes with templates beyond the subset are
 * refused by path.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho, type Echoed } from '../../testing/echo.ts';
import { keyed, keyless, oneVersion, startGateway } from '../../testing/harness.ts';
import {
  assertAnswer,
  describeEachSetup,
  provision,
  sendRow,
  type Expected,
  type RowRequest,
} from '../../testing/tables.ts';

interface Row extends Expected, RowRequest {
  name: string;
  /** The body the upstream received. */
  upstreamBody?: string;
  /** The body the client received (when the response is transformed). */
  clientBody?: string;
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const tpl = (path: string, method: string, source: string, extra: Record<string, unknown> = {}) => ({
  path,
  method,
  template_data: { input_type: 'json', template_mode: 'blob', template_source: b64(source), ...extra },
});

const version = (extended: Record<string, unknown>): Record<string, unknown> =>
  oneVersion({ extended_paths: extended });

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless('bt', '/bt/', echo().url, {
    enable_context_vars: true,
    ...version({
      transform: [
        tpl(
          '/order',
          'POST',
          '{"name": {{printf "%q" .user.name}}, "items": {{len .items}}, "first": {{index .items 0 | json}}}',
        ),
        tpl(
          '/list',
          'POST',
          '{{range $i, $v := .array}}{{if $i}},{{end}}{{$v.id}}{{end}}|{{with .missing}}x{{else}}none{{end}}',
        ),
        tpl('/ctx', 'POST', '{{._tyk_context.path}} {{._tyk_context.headers_X_Name}} {{.n}}'),
      ],
      transform_response: [
        tpl(
          '/resp',
          'GET',
          '{"path": {{printf "%q" .path}}, "method": "{{.method}}", "big": {{if gt (len .path) 5}}true{{else}}false{{end}}}',
        ),
      ],
    }),
  }),
  keyed(
    'btmeta',
    '/btmeta/',
    echo().url,
    version({
      transform: [tpl('/m', 'POST', 'tier={{._tyk_meta.tier}} a={{.a}}', { enable_session: true })],
    }),
  ),
];

const rows: Row[] = [
  {
    name: 'request body through a template',
    method: 'POST',
    path: '/bt/order',
    body: '{"user":{"name":"Ann \\"A\\""},"items":[{"sku":"x<1>"},{"sku":"y"}]}',
    status: 200,
    upstreamBody: '{"name": "Ann \\"A\\"", "items": 2, "first": {"sku":"x\\u003c1\\u003e"}}',
  },
  {
    name: 'a JSON list is .array; range, if, with/else',
    method: 'POST',
    path: '/bt/list',
    body: '[{"id":1},{"id":2},{"id":3}]',
    status: 200,
    upstreamBody: '1,2,3|none',
  },
  {
    name: 'context variables as ._tyk_context',
    method: 'POST',
    path: '/bt/ctx',
    headers: { 'x-name': 'Bo' },
    body: '{"n": 1000000}',
    status: 200,
    upstreamBody: '/bt/ctx Bo 1e+06',
  },
  {
    name: 'a body that is not JSON is sent unchanged',
    method: 'POST',
    path: '/bt/order',
    body: 'plain text',
    status: 200,
    upstreamBody: 'plain text',
  },
  {
    name: 'another method is not transformed',
    method: 'PUT',
    path: '/bt/order',
    body: '{"a":1}',
    status: 200,
    upstreamBody: '{"a":1}',
  },
  {
    name: 'response body through a template',
    path: '/bt/resp',
    status: 200,
    clientBody: '{"path": "/bt/resp", "method": "GET", "big": true}',
  },
  {
    name: 'session metadata as ._tyk_meta',
    method: 'POST',
    path: '/btmeta/m',
    headers: { authorization: 'bt-gold' },
    body: '{"a":"b"}',
    status: 200,
    upstreamBody: 'tier=gold a=b',
  },
];

describeEachSetup(
  'body transforms',
  () => ({}),
  ({ gw }) => {
    before(async () => {
      await provision(gw(), apis(), {
        'bt-gold': {
          access_rights: { btmeta: { api_id: 'btmeta', versions: ['Default'] } },
          meta_data: { tier: 'gold' },
        },
      });
    });
    for (const row of rows) {
      test(`${row.name}: ${String(row.status)}`, async () => {
        const { res, served } = await sendRow(gw(), row);
        assertAnswer(res, row);
        if (row.clientBody !== undefined) {
          assert.equal(res.text, row.clientBody);
          assert.equal(res.headers['content-length'], String(Buffer.byteLength(row.clientBody)));
        }
        if (row.upstreamBody !== undefined) assert.equal((res.json as Echoed).body, row.upstreamBody);
        assert.equal(served, 0, 'served by node:http');
      });
    }
  },
);

test('writes: templates beyond the subset are refused by path', async () => {
  const gw = await startGateway();
  try {
    const res = await gw.admin(
      'POST',
      '/svc/apis',
      keyless(
        'btrefused',
        '/btrefused/',
        'http://127.0.0.1:1',
        version({
          transform: [
            tpl('/a', 'POST', '{{template "x" .}}'),
            tpl('/b', 'POST', '{{.a | upper}}'),
            tpl('/c', 'POST', '{{if .a}}'),
            {
              path: '/d',
              template_data: { input_type: 'xml', template_mode: 'blob', template_source: b64('{{.a}}') },
            },
            { path: '/e', template_data: { template_mode: 'file', template_source: '/etc/t.tmpl' } },
          ],
          transform_response: [tpl('/f', 'GET', '{{define "x"}}{{end}}')],
        }),
      ),
    );
    assert.equal(res.status, 400, res.text);
    const message = (res.json as { message: string }).message;
    const at = 'version_data.versions.Default.extended_paths';
    for (const part of [
      `${at}.transform[0].template_data.template_source: not supported by svc yet: the action {{template}}`,
      `${at}.transform[1].template_data.template_source: not supported by svc yet: the function "upper"`,
      `${at}.transform[2].template_data.template_source: Invalid value`,
      `${at}.transform[3].template_data.input_type: not supported by svc yet`,
      `${at}.transform[4].template_data.template_mode: not supported by svc yet`,
      `${at}.transform_response[0].template_data.template_source: not supported by svc yet: the action {{define}}`,
    ]) {
      assert.ok(message.includes(part), `${part} in ${message}`);
    }
  } finally {
    await gw.stop();
  }
});
