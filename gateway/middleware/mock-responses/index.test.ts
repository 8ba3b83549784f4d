/**
 * Mock responses as a table (request in; status, body, headers out): `mock_response` (and a
 * disabled one), the `reply` actions of `white_list` (after authentication) and `ignored` (no key
 * needed). Runs against the files and Redis stores with the fast path on and off; on the fast
 * path every row must be served by it.
 */
import { useEcho } from '../../testing/echo.ts';
import { keyed, oneVersion } from '../../testing/harness.ts';
import { describeTable, type Row } from '../../testing/tables.ts';

const KEY = { authorization: 'ef-key' };

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyed('mock', '/mock/', echo().url, {
    ...oneVersion({
      global_response_headers: { 'x-version': 'Default' },
      extended_paths: {
        white_list: [
          {
            path: '/hello',
            method_actions: {
              GET: {
                action: 'reply',
                code: 201,
                data: 'hi',
                headers: { 'Content-Type': 'text/plain', 'X-Mock': '1' },
              },
            },
          },
          { path: '/teapot', method_actions: { GET: { action: 'no_action' } } },
          { path: '/real', method_actions: { GET: { action: 'no_action' } } },
        ],
        ignored: [
          {
            path: '/public',
            method_actions: {
              GET: {
                action: 'reply',
                code: 200,
                data: '{"ok":true}',
                headers: { 'content-type': 'application/json' },
              },
            },
          },
        ],
        mock_response: [
          {
            path: '/teapot',
            method: 'GET',
            code: 418,
            body: 'short and stout',
            headers: { 'x-mock': 'teapot' },
          },
          { path: '/real', method: 'GET', code: 500, body: 'never', disabled: true },
        ],
      },
    }),
  }),
];

const rows: Row[] = [
  // Mock responses.
  {
    name: 'mock: a white_list reply is authenticated first',
    path: '/mock/hello',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'mock: a white_list reply',
    path: '/mock/hello',
    headers: KEY,
    status: 201,
    text: 'hi',
    responseHeaders: { 'content-type': 'text/plain', 'x-mock': '1', 'x-version': 'Default' },
  },
  {
    name: 'mock: another method is outside the white list',
    method: 'POST',
    path: '/mock/hello',
    headers: KEY,
    status: 403,
    error: 'Requested endpoint is forbidden',
  },
  {
    name: 'mock: an ignored reply needs no key',
    path: '/mock/public',
    status: 200,
    text: '{"ok":true}',
    responseHeaders: { 'content-type': 'application/json' },
  },
  {
    name: 'mock: mock_response',
    path: '/mock/teapot',
    headers: KEY,
    status: 418,
    text: 'short and stout',
    responseHeaders: { 'x-mock': 'teapot', 'content-type': undefined },
  },
  { name: 'mock: a disabled mock_response', path: '/mock/real', headers: KEY, status: 200 },
];

describeTable('mock responses', apis, rows, {
  'ef-key': { access_rights: { mock: { api_id: 'mock', versions: ['Default'] } } },
});
