/**
 * CORS as a table (request in; status, body, headers out): the preflight answered by the gateway
 * or passed through (`options_passthrough`), the headers of actual answers, a refusal with its
 * CORS headers, `enable: false`. Runs against the files and Redis stores with the fast path on
 * and off; on the fast path every row must be served by it.
 */
import { useEcho } from '../../testing/echo.ts';
import { keyed, keyless } from '../../testing/harness.ts';
import { describeTable, type Row } from '../../testing/tables.ts';

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

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyed('cors', '/cors/', echo().url, {
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
  keyless('corsany', '/corsany/', echo().url, { CORS: { enable: true, options_passthrough: true } }),
  keyless('corsoff', '/corsoff/', echo().url, { CORS: { enable: false, allowed_origins: [APP] } }),
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
];

describeTable('cors', apis, rows, {
  'ef-key': { access_rights: { cors: { api_id: 'cors', versions: ['Default'] } } },
});
