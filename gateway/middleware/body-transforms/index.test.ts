/**
 * Body templates (`extended_paths.transform` and `transform_response`) as a table: request in;
 * status, the body the upstream received and the body the client received out. JSON bodies, and
 * XML ones (`input_type: xml`, read into the reference's map: the reference operator's own
 * sample, httpbin's /xml through `{{ . | jsonMarshal }}`, is a row), from the echo upstream and
 * an XML upstream. Each table runs against the files and Redis stores with the fast path on and
 * off; a route with a body template is always served by node:http (it reads bodies). Writes
 * with templates beyond the subset are refused by path.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { useEcho, type Echoed } from '../../testing/echo.ts';
import { keyed, keyless, oneVersion, assertWriteRefused, withGateway } from '../../testing/harness.ts';
import {
  assertAnswer,
  describeProvisioned,
  sendRow,
  type Expected,
  type RowRequest,
} from '../../testing/tables.ts';
import { rights } from '../../testing/limits.ts';
import { closeServer, listenLocal } from '../../testing/servers.ts';

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

/** httpbin's /xml, as the reference operator's sample reads it. */
const HTTPBIN_XML = `<?xml version='1.0' encoding='us-ascii'?>

<!--  A SAMPLE set of slides  -->

<slideshow
    title="Sample Slide Show"
    date="Date of publication"
    author="Yours Truly"
    >

    <!-- TITLE SLIDE -->
    <slide type="all">
      <title>Wake up to WonderWidgets!</title>
    </slide>

    <!-- OVERVIEW -->
    <slide type="all">
        <title>Overview</title>
        <item>Why <em>WonderWidgets</em> are great</item>
        <item/>
        <item>Who <em>buys</em> WonderWidgets</item>
    </slide>

</slideshow>`;

const XML_BODIES: Record<string, string> = {
  '/xml': HTTPBIN_XML,
  '/soap':
    '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>' +
    '<m:Price xmlns:m="urn:x" currency="EUR">12.50</m:Price><note><![CDATA[a < b]]></note>' +
    '<q>&lt;&amp;&#65;</q></soap:Body></soap:Envelope>',
  '/broken': '<a><b></a>',
};

/** An upstream answering XML documents (XML_BODIES by the end of the path). */
let xmlUpstream: Server | undefined;
let xmlUrl = '';
before(async () => {
  xmlUpstream = createServer((req, res) => {
    const body = XML_BODIES[(req.url ?? '').slice((req.url ?? '').lastIndexOf('/'))];
    res
      .writeHead(body === undefined ? 404 : 200, {
        'content-type': 'application/xml',
        'content-length': Buffer.byteLength(body ?? ''),
      })
      .end(body ?? '');
  });
  xmlUrl = await listenLocal(xmlUpstream);
});
after(async () => {
  if (xmlUpstream !== undefined) await closeServer(xmlUpstream);
});

const xmlTpl = (path: string, method: string, source: string) => {
  const t = tpl(path, method, source);
  return { ...t, template_data: { ...t.template_data, input_type: 'xml' } };
};

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
  keyless('btxml', '/btxml/', xmlUrl, {
    response_processors: [{ name: 'response_body_transform' }],
    ...version({
      transform_response: [
        xmlTpl('/xml', 'GET', '{{ . | jsonMarshal }}'),
        xmlTpl(
          '/soap',
          'GET',
          '{{with .Envelope}}{{index .Body.Price "-currency"}} {{index .Body.Price "#text"}}|{{.Body.note}}|{{.Body.q}}|{{index . "-soap"}}{{end}}',
        ),
        xmlTpl('/broken', 'GET', '{{ . | jsonMarshal }}'),
      ],
    }),
  }),
  keyless(
    'btxmlreq',
    '/btxmlreq/',
    echo().url,
    version({
      transform: [
        xmlTpl('/order', 'POST', '{"id": "{{index .order "-id"}}", "items": {{json .order.item}}}'),
        xmlTpl('/empty', 'POST', '{{ . | json }}'),
      ],
    }),
  ),
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
    name: "XML response through a template: the reference operator's sample (httpbin's /xml)",
    path: '/btxml/xml',
    status: 200,
    clientBody:
      '{"slideshow":{"-author":"Yours Truly","-date":"Date of publication","-title":"Sample Slide Show",' +
      '"slide":[{"-type":"all","title":"Wake up to WonderWidgets!"},' +
      '{"-type":"all","item":["Why","","Who"],"title":"Overview"}]}}',
  },
  {
    name: 'XML response: namespaces dropped, attributes, #text, CDATA and entities',
    path: '/btxml/soap',
    status: 200,
    clientBody: 'EUR 12.50|a < b|<&A|http://schemas.xmlsoap.org/soap/envelope/',
  },
  {
    name: 'an XML response that does not parse is sent unchanged',
    path: '/btxml/broken',
    status: 200,
    clientBody: '<a><b></a>',
  },
  {
    name: 'XML request body through a template (a repeated element is a list)',
    method: 'POST',
    path: '/btxmlreq/order',
    body: '<order id="7"><item>a</item><item>b</item></order>',
    status: 200,
    upstreamBody: '{"id": "7", "items": ["a","b"]}',
  },
  {
    name: 'an empty XML request body reads as <_/>',
    method: 'POST',
    path: '/btxmlreq/empty',
    body: '',
    status: 200,
    upstreamBody: '{"_":""}',
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

describeProvisioned(
  'body transforms',
  apis,
  { 'bt-gold': { access_rights: rights('btmeta'), meta_data: { tier: 'gold' } } },
  (gw) => {
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
  const at = 'version_data.versions.Default.extended_paths';
  await withGateway((gw) =>
    assertWriteRefused(
      gw,
      keyless(
        'btrefused',
        '/btrefused/',
        'http://127.0.0.1:1',
        version({
          transform: [
            tpl('/a', 'POST', '{{template "x" .}}'),
            tpl('/b', 'POST', '{{.a | upper}}'),
            tpl('/c', 'POST', '{{if .a}}'),
            { path: '/d', template_data: { template_mode: 'file', template_source: '/etc/t.tmpl' } },
          ],
          transform_response: [tpl('/f', 'GET', '{{define "x"}}{{end}}')],
        }),
      ),
      [
        `${at}.transform[0].template_data.template_source: not supported by svc yet: the action {{template}}`,
        `${at}.transform[1].template_data.template_source: not supported by svc yet: the function "upper"`,
        `${at}.transform[2].template_data.template_source: Invalid value`,
        `${at}.transform[3].template_data.template_mode: not supported by svc yet`,
        `${at}.transform_response[0].template_data.template_source: not supported by svc yet: the action {{define}}`,
      ],
    ),
  );
});
