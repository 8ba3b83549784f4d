/**
 * A version's header changes as a table (request in; status, the headers the upstream and the
 * client saw out): `global_headers` and `global_response_headers` (add, replace, remove,
 * disabled, and the svc extensions that append: `global_headers_append`,
 * `global_response_headers_append`), `transform_headers` and `transform_response_headers` per endpoint and method, a
 * disabled entry. Runs against the files and Redis stores with the fast path on and off; on the
 * fast path every row must be served by it.
 */
import { useEcho } from '../../testing/echo.ts';
import { keyless, oneVersion } from '../../testing/harness.ts';
import { describeProxiedTable, type ProxiedRow } from '../../testing/tables.ts';

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless(
    'hdr',
    '/hdr/',
    echo().url,
    oneVersion({
      global_headers: { 'x-global': 'g', 'x-replaced': 'by-gateway' },
      global_headers_remove: ['x-drop-me'],
      global_response_headers: { 'x-resp': 'r' },
      global_response_headers_remove: ['x-upstream'],
      extended_paths: {
        transform_headers: [
          {
            path: '/users',
            method: 'GET',
            add_headers: { 'x-users': 'yes' },
            delete_headers: ['x-global'],
          },
          { path: '/off', method: 'GET', add_headers: { 'x-off': 'yes' }, disabled: true },
        ],
        transform_response_headers: [
          {
            path: '/users',
            method: 'GET',
            add_headers: { 'x-upstream': 'rewritten' },
            delete_headers: ['x-resp'],
          },
        ],
        method_transforms: [{ path: '/convert', method: 'GET', to_method: 'POST' }],
      },
    }),
  ),
  keyless(
    'hdroff',
    '/hdroff/',
    echo().url,
    oneVersion({
      global_headers: { 'x-global': 'g' },
      global_headers_disabled: true,
      global_response_headers: { 'x-resp': 'r' },
      global_response_headers_disabled: true,
    }),
  ),
  keyless(
    'hdrapp',
    '/hdrapp/',
    echo().url,
    oneVersion({
      global_headers: { 'x-set': 's' },
      global_headers_append: { 'x-list': 'b', 'x-new': 'n', 'x-set': 'more' },
      global_response_headers_append: { 'x-upstream': 'appended', 'x-fresh': 'f' },
    }),
  ),
];

const rows: ProxiedRow[] = [
  {
    name: 'headers: global add, replace and remove',
    path: '/hdr/a',
    headers: { 'x-replaced': 'by-client', 'x-drop-me': '1', 'x-kept': 'k' },
    status: 200,
    upstreamHeaders: { 'x-global': 'g', 'x-replaced': 'by-gateway', 'x-drop-me': undefined, 'x-kept': 'k' },
    responseHeaders: { 'x-resp': 'r', 'x-upstream': undefined },
  },
  {
    name: 'headers: an endpoint after the global ones',
    path: '/hdr/users/1',
    status: 200,
    upstreamHeaders: { 'x-global': undefined, 'x-users': 'yes' },
    responseHeaders: { 'x-resp': undefined, 'x-upstream': 'rewritten' },
  },
  {
    name: "headers: another method is not the endpoint's",
    method: 'DELETE',
    path: '/hdr/users/1',
    status: 200,
    upstreamHeaders: { 'x-global': 'g', 'x-users': undefined },
  },
  {
    name: 'headers: a disabled entry',
    path: '/hdr/off',
    status: 200,
    upstreamHeaders: { 'x-off': undefined },
  },
  {
    name: 'headers: disabled global headers',
    path: '/hdroff/a',
    status: 200,
    upstreamHeaders: { 'x-global': undefined },
    responseHeaders: { 'x-resp': undefined, 'x-upstream': 'echo' },
  },
  {
    name: "headers: appended to the client's value, set when it has none, after a set",
    path: '/hdrapp/a',
    headers: { 'x-list': 'a' },
    status: 200,
    upstreamHeaders: { 'x-list': 'a,b', 'x-new': 'n', 'x-set': 's,more' },
    // Two lines of x-upstream (the upstream's, then the gateway's): one header to the client.
    responseHeaders: { 'x-upstream': 'echo, appended', 'x-fresh': 'f' },
  },
];

describeProxiedTable('headers', apis, rows);
