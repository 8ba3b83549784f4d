/**
 * Endpoint features answered or bounded by the gateway itself, as tables (request in; status,
 * body, headers out): `CORS` (the preflight answered by the gateway or passed through, the
 * headers of actual answers), mock responses (`mock_response`, the `reply` actions of `ignored`
 * and `white_list`), `hard_timeouts` (504), `circuit_breakers` (503 while open, back after
 * `return_to_service_after`, on an injected clock) and `validate_json` (422 with the first
 * error). Each table runs against the files and Redis stores with the fast path on and off; on
 * the fast path every row must be served by it, except the routes that read the body
 * (`validate_json`), which node:http serves.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { after } from 'node:test';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyed, keyless, oneVersion } from '../testing/harness.ts';
import {
  assertAnswer,
  describeEachSetup,
  fastPathOn,
  provision,
  sendRow,
  SETUPS,
  type Expected,
} from '../testing/tables.ts';

interface Row extends Expected {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** The exact body the client got. */
  text?: string;
  /** The method the echo upstream received (proxied rows). */
  upstreamMethod?: string;
  /** Moves the injected clock forward by this many seconds before the request. */
  advance?: number;
  /** Served by node:http even with the fast path on (the route reads bodies). */
  nodeHttp?: boolean;
}

const KEY = { authorization: 'ef-key' };
const APP = 'https://app.example.com';
const PREFLIGHT_VARY = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers';
const preflight = (origin: string, method: string, headers?: string): Record<string, string> => ({
  origin,
  'access-control-request-method': method,
  ...(headers === undefined ? {} : { 'access-control-request-headers': headers }),
});
const NO_CORS = {
  'access-control-allow-origin': undefined,
  'access-control-allow-methods': undefined,
  'access-control-allow-headers': undefined,
  'access-control-allow-credentials': undefined,
};
const userSchema = {
  $schema: 'http://json-schema.org/draft-04/schema#',
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' } },
};

let echo: Echo;
before(async () => {
  echo = await startEcho('echo');
});
after(async () => {
  await echo.close();
});

const apis = (): Record<string, unknown>[] => [
  keyed('cors', '/cors/', echo.url, {
    CORS: {
      enable: true,
      allowed_origins: [APP, 'https://*.example.org'],
      allowed_methods: ['GET', 'PUT'],
      allowed_headers: ['Authorization', 'X-Custom'],
      exposed_headers: ['X-Total', 'X-Page'],
      allow_credentials: true,
      max_age: 600,
      options_passthrough: false,
      debug: true,
    },
  }),
  keyless('corsany', '/corsany/', echo.url, { CORS: { enable: true, options_passthrough: true } }),
  keyless('corsoff', '/corsoff/', echo.url, { CORS: { enable: false, allowed_origins: [APP] } }),
  keyed('mock', '/mock/', echo.url, {
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
  keyless(
    'slow',
    '/slow/',
    echo.url,
    oneVersion({
      extended_paths: {
        hard_timeouts: [
          { path: '/hang', method: 'GET', timeout: 1 },
          { path: '/hang', method: 'POST', timeout: 1, disabled: true },
        ],
      },
    }),
  ),
  keyless(
    'breaker',
    '/breaker/',
    echo.url,
    oneVersion({
      extended_paths: {
        circuit_breakers: [
          {
            path: '/status',
            method: 'GET',
            threshold_percent: '0.5',
            samples: 2,
            return_to_service_after: 10,
          },
        ],
      },
    }),
  ),
  keyless(
    'valid',
    '/valid/',
    echo.url,
    oneVersion({
      extended_paths: {
        validate_json: [
          { path: '/users', method: 'POST', schema: userSchema },
          {
            path: '/b64',
            method: 'POST',
            schema_b64: Buffer.from(JSON.stringify(userSchema)).toString('base64'),
            error_response_code: 400,
          },
        ],
      },
    }),
  ),
];

const rows: Row[] = [
  // CORS, answered by the gateway (no key needed for a preflight).
  {
    name: 'cors: an allowed preflight is answered by the gateway',
    method: 'OPTIONS',
    path: '/cors/items',
    headers: preflight(APP, 'PUT', 'Authorization, X-Custom'),
    status: 204,
    text: '',
    responseHeaders: {
      'access-control-allow-origin': APP,
      'access-control-allow-methods': 'PUT',
      'access-control-allow-headers': 'authorization, x-custom',
      'access-control-allow-credentials': 'true',
      'access-control-max-age': '600',
      vary: PREFLIGHT_VARY,
      'content-length': undefined,
    },
  },
  {
    name: 'cors: a wildcard origin',
    method: 'OPTIONS',
    path: '/cors/items',
    headers: preflight('https://shop.example.org', 'GET'),
    status: 204,
    responseHeaders: {
      'access-control-allow-origin': 'https://shop.example.org',
      'access-control-allow-headers': undefined,
    },
  },
  {
    name: 'cors: a preflight from another origin gets no CORS headers',
    method: 'OPTIONS',
    path: '/cors/items',
    headers: preflight('https://evil.example.net', 'GET'),
    status: 204,
    responseHeaders: { ...NO_CORS, vary: PREFLIGHT_VARY },
  },
  {
    name: 'cors: a method not allowed',
    method: 'OPTIONS',
    path: '/cors/items',
    headers: preflight(APP, 'DELETE'),
    status: 204,
    responseHeaders: NO_CORS,
  },
  {
    name: 'cors: a header not allowed',
    method: 'OPTIONS',
    path: '/cors/items',
    headers: preflight(APP, 'GET', 'X-Other'),
    status: 204,
    responseHeaders: NO_CORS,
  },
  {
    name: 'cors: a refusal carries the CORS headers',
    path: '/cors/items',
    headers: { origin: APP },
    status: 401,
    error: 'Authorization field missing',
    responseHeaders: {
      'access-control-allow-origin': APP,
      'access-control-expose-headers': 'X-Total, X-Page',
      'access-control-allow-credentials': 'true',
      vary: 'Origin',
    },
  },
  {
    name: 'cors: an allowed request',
    path: '/cors/items',
    headers: { origin: APP, ...KEY },
    status: 200,
    responseHeaders: {
      'access-control-allow-origin': APP,
      'access-control-expose-headers': 'X-Total, X-Page',
    },
  },
  {
    name: 'cors: a request from another origin',
    path: '/cors/items',
    headers: { origin: 'https://evil.example.net', ...KEY },
    status: 200,
    responseHeaders: { ...NO_CORS, 'access-control-expose-headers': undefined, vary: 'Origin' },
  },
  {
    name: "cors: the upstream's Vary keeps its values, Origin once",
    path: '/corsany/vary',
    headers: { origin: APP },
    status: 200,
    responseHeaders: { 'access-control-allow-origin': '*', vary: 'Accept-Encoding, origin' },
  },
  {
    name: 'cors: a plain OPTIONS request (no preflight) goes through the chain',
    method: 'OPTIONS',
    path: '/cors/items',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'cors: options_passthrough sends the preflight upstream with the headers',
    method: 'OPTIONS',
    path: '/corsany/items',
    headers: preflight(APP, 'GET'),
    status: 200,
    upstreamMethod: 'OPTIONS',
    responseHeaders: { 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET' },
  },
  {
    name: 'cors: any origin',
    path: '/corsany/items',
    headers: { origin: 'https://anything.example' },
    status: 200,
    responseHeaders: { 'access-control-allow-origin': '*', 'access-control-allow-credentials': undefined },
  },
  {
    name: 'cors: enable false changes nothing',
    method: 'OPTIONS',
    path: '/corsoff/items',
    headers: preflight(APP, 'GET'),
    status: 200,
    upstreamMethod: 'OPTIONS',
    responseHeaders: { ...NO_CORS, vary: undefined },
  },
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
  // Hard timeouts.
  {
    name: 'hard_timeouts: past the timeout',
    path: '/slow/hang',
    status: 504,
    error: 'Upstream service reached hard timeout.',
  },
  { name: 'hard_timeouts: another endpoint', path: '/slow/other', status: 200 },
  // Circuit breakers: two failures of two samples open the breaker for 10 s.
  { name: 'circuit_breakers: a failure', path: '/breaker/status/500', status: 500 },
  { name: 'circuit_breakers: another opens it', path: '/breaker/status/502', status: 502 },
  {
    name: 'circuit_breakers: open',
    path: '/breaker/status/200',
    status: 503,
    error: 'Service temporarily unavailable.',
  },
  { name: 'circuit_breakers: other endpoints are served', path: '/breaker/other', status: 200 },
  {
    name: 'circuit_breakers: still open after 9 s',
    path: '/breaker/status/200',
    advance: 9,
    status: 503,
    error: 'Service temporarily unavailable.',
  },
  {
    name: 'circuit_breakers: a failed trial opens it again',
    path: '/breaker/status/500',
    advance: 2,
    status: 500,
  },
  { name: 'circuit_breakers: open again', path: '/breaker/status/200', status: 503 },
  { name: 'circuit_breakers: a good trial closes it', path: '/breaker/status/204', advance: 11, status: 204 },
  { name: 'circuit_breakers: closed', path: '/breaker/status/200', status: 200 },
  // JSON Schema validation (the route reads bodies: node:http).
  {
    name: 'validate_json: a valid body',
    method: 'POST',
    path: '/valid/users',
    body: '{"name":"ada"}',
    status: 200,
    nodeHttp: true,
  },
  {
    name: 'validate_json: a wrong type',
    method: 'POST',
    path: '/valid/users',
    body: '{"name":1}',
    status: 422,
    error: '/name: must be string',
    nodeHttp: true,
  },
  {
    name: 'validate_json: a missing property',
    method: 'POST',
    path: '/valid/users',
    body: '{}',
    status: 422,
    error: "payload: must have required property 'name'",
    nodeHttp: true,
  },
  {
    name: 'validate_json: not JSON',
    method: 'POST',
    path: '/valid/users',
    body: 'name=ada',
    status: 422,
    error: 'payload: the body is not JSON',
    nodeHttp: true,
  },
  {
    name: 'validate_json: schema_b64 and error_response_code',
    method: 'POST',
    path: '/valid/b64',
    body: '[]',
    status: 400,
    error: 'payload: must be object',
    nodeHttp: true,
  },
  { name: 'validate_json: another method', path: '/valid/users', status: 200, nodeHttp: true },
];

const clocks = SETUPS.map(() => ({ t: Date.parse('2030-01-01T00:00:00Z') }));

describeEachSetup(
  'endpoint features answered by the gateway',
  (index) => ({ now: () => clocks[index]?.t ?? Date.now() }),
  ({ gw, index }) => {
    before(async () => {
      await provision(gw(), apis(), {
        'ef-key': {
          access_rights: {
            cors: { api_id: 'cors', versions: ['Default'] },
            mock: { api_id: 'mock', versions: ['Default'] },
          },
        },
      });
    });
    const fastPath = fastPathOn(index);
    const clock = clocks[index] ?? { t: 0 };
    for (const row of rows) {
      test(`${row.name}: ${String(row.status)}`, async () => {
        if (row.advance !== undefined) clock.t += row.advance * 1000;
        const { res, served } = await sendRow(gw(), row);
        assertAnswer(res, row);
        if (row.text !== undefined) assert.equal(res.text, row.text);
        if (row.upstreamMethod !== undefined) assert.equal((res.json as Echoed).method, row.upstreamMethod);
        assert.equal(served, fastPath && row.nodeHttp !== true ? 1 : 0, 'the entrance that served it');
      });
    }
  },
);
