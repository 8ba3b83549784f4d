/**
 * The API-wide response headers of `response_processors` (`header_injector`) as a table: request
 * in; status and the headers the client saw out. The injector's changes come after the version's
 * and the endpoint's (they win), on mock responses too, several injectors apply in list order, a processor that only
 * names the body templates (`response_body_transform`) changes no header, and its values read
 * context variables. Runs against the files and Redis stores with the fast path on and off; on
 * the fast path every row must be served by it. Refusals at write time: the processors svc does
 * not serve, named.
 */
import { test } from 'node:test';
import { useEcho } from '../../testing/echo.ts';
import { keyless, oneVersion, assertWriteRefused, withGateway } from '../../testing/harness.ts';
import { describeProxiedTable, type ProxiedRow } from '../../testing/tables.ts';

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless('rp', '/rp/', echo().url, {
    enable_context_vars: true,
    response_processors: [
      { name: 'response_body_transform' },
      {
        name: 'header_injector',
        options: {
          add_headers: { 'X-Api-Wide': 'yes', 'x-resp': 'api', 'x-path': '$tyk_context.path' },
          remove_headers: ['X-Upstream'],
        },
      },
    ],
    ...oneVersion({
      global_response_headers: { 'x-resp': 'version', 'x-version-only': 'v' },
      extended_paths: {
        transform_response_headers: [
          { path: '/users', method: 'GET', add_headers: { 'x-upstream': 'endpoint', 'x-endpoint': 'e' } },
        ],
        mock_response: [
          {
            path: '/mock',
            method: 'GET',
            code: 201,
            body: 'm',
            headers: { 'x-mock': '1', 'x-upstream': 'm' },
          },
        ],
      },
    }),
  }),
  keyless('rp2', '/rp2/', echo().url, {
    response_processors: [
      { name: 'header_injector', options: { add_headers: { 'x-one': '1', 'x-two': '2' } } },
      { name: 'header_injector', options: { remove_headers: ['x-two'] } },
    ],
  }),
  keyless('rp3', '/rp3/', echo().url, { response_processors: [{ name: 'response_body_transform' }] }),
];

const rows: ProxiedRow[] = [
  {
    name: "header_injector: added and removed on every response, over the version's",
    path: '/rp/a',
    status: 200,
    responseHeaders: {
      'x-api-wide': 'yes',
      'x-resp': 'api',
      'x-version-only': 'v',
      'x-upstream': undefined,
      'x-path': '/rp/a',
    },
  },
  {
    name: "header_injector: after the endpoint's changes",
    path: '/rp/users',
    status: 200,
    responseHeaders: { 'x-api-wide': 'yes', 'x-endpoint': 'e', 'x-upstream': undefined },
  },
  {
    name: 'header_injector: on every method',
    method: 'DELETE',
    path: '/rp/users',
    status: 200,
    responseHeaders: { 'x-api-wide': 'yes', 'x-endpoint': undefined, 'x-upstream': undefined },
  },
  {
    name: "header_injector: on the gateway's mock responses too (the mock's own headers win)",
    path: '/rp/mock',
    status: 201,
    responseHeaders: { 'x-api-wide': 'yes', 'x-mock': '1', 'x-upstream': 'm' },
  },
  {
    name: 'header_injector: several, in list order (a later one removes what an earlier added)',
    path: '/rp2/a',
    status: 200,
    responseHeaders: { 'x-one': '1', 'x-two': undefined, 'x-upstream': 'echo' },
  },
  {
    name: 'response_body_transform alone changes no header',
    path: '/rp3/a',
    status: 200,
    responseHeaders: { 'x-upstream': 'echo', 'content-type': 'application/json' },
  },
];

describeProxiedTable('response processors', apis, rows);

test('writes: processors svc does not serve are refused by name, bad options by path', async () => {
  await withGateway((gw) =>
    assertWriteRefused(
      gw,
      keyless('rprefused', '/rprefused/', 'http://127.0.0.1:1', {
        response_processors: [
          { name: 'response_body_transform_jq' },
          { name: 'header_transform', options: { rev_proxy_header_cleanup: { target_host: 'a' } } },
          { name: 'goplugin_res_hook' },
          { name: 'made_up' },
          { name: 'header_injector', options: { add_headers: { 'bad name': 'x' }, other: 1 } },
          { name: 'response_body_transform', options: { x: 1 } },
          { options: {} },
        ],
      }),
      [
        'response_processors[0].name: not supported by svc yet: jq needs an engine',
        "response_processors[1].name: not supported by svc yet: rewriting the upstream's host",
        'response_processors[2].name: Unsupported value: Go plugins cannot run in a Node.js gateway',
        'response_processors[3].name: Unsupported value: "made_up" is not a response processor svc knows: use header_injector or response_body_transform',
        'response_processors[4].options.other: Invalid value: header_injector reads add_headers and remove_headers only',
        'response_processors[4].options.add_headers["bad name"]: Invalid value: "bad name" is not a header name',
        'response_processors[5].options: Invalid value: response_body_transform takes no options ("x")',
        'response_processors[6].name: Required value: name the processor: header_injector or response_body_transform',
      ],
    ),
  );
});
