/**
 * Auth tokens as a table (GATEWAY-BEHAVIOUR §2, §3): in the `Authorization` header (a `Bearer `
 * prefix in any case), a custom header, the query parameter and the cookie (case-sensitive
 * names; a later source wins); an unknown token, another case of a key, a basic-auth user's name;
 * a key of another organisation on an organisation's API. Each row is a request in, and the
 * status, the `error`, and what the upstream received. Runs against the files and Redis stores,
 * with the fast path on and off.
 */
import { keyed } from '../../testing/harness.ts';
import { accessTo, describeAuthTable, tokenInQueryAndCookie, type AuthRow } from '../../testing/auth-rows.ts';
import { provision } from '../../testing/tables.ts';

const rows: AuthRow[] = [
  // Auth token in the Authorization header (the default of a keyed API).
  { name: 'token: none', path: '/tok/x', status: 401, error: 'Authorization field missing' },
  {
    name: 'token: empty header',
    path: '/tok/x',
    headers: { authorization: '  ' },
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'token: unknown',
    path: '/tok/x',
    headers: { authorization: 'nope' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'token: valid',
    path: '/tok/x',
    headers: { authorization: 'key-one' },
    status: 200,
    upstreamHeaders: { authorization: 'key-one' },
  },
  { name: 'token: Bearer prefix', path: '/tok/x', headers: { authorization: 'Bearer key-one' }, status: 200 },
  {
    name: 'token: bearer prefix in any case',
    path: '/tok/x',
    headers: { authorization: 'BEARER key-one' },
    status: 200,
  },
  {
    name: 'token: another case of the key is another key',
    path: '/tok/x',
    headers: { authorization: 'KEY-ONE' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'token: a basic-auth user name is no token',
    path: '/tok/x',
    headers: { authorization: 'alice' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  // A custom header name, case-insensitive.
  { name: 'token: custom header', path: '/hdr/x', headers: { 'X-API-KEY': 'key-one' }, status: 200 },
  {
    name: 'token: Authorization is not the custom header',
    path: '/hdr/x',
    headers: { authorization: 'key-one' },
    status: 401,
    error: 'Authorization field missing',
  },
  // Query parameter and cookie (case-sensitive names); stripping them: strip-auth's table.
  {
    name: 'token: query parameter name is case-sensitive',
    path: '/tokq/x?API_KEY=key-one',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'token: cookie name is case-sensitive',
    path: '/tokq/x',
    headers: { cookie: 'Session=key-one' },
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'token: a later source wins (cookie over header)',
    path: '/tokq/x',
    headers: { authorization: 'nope', cookie: 'session=key-one' },
    status: 200,
  },
  // Organisations: a key of another organisation is unknown on an organisation's API.
  {
    name: 'org: key of no organisation on an organisation API',
    path: '/org/x',
    headers: { authorization: 'key-one' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'org: key of the organisation',
    path: '/org/x',
    headers: { authorization: 'key-org' },
    status: 200,
  },
];

describeAuthTable(
  'auth token',
  (gw, upstream) =>
    provision(
      gw,
      [
        keyed('tok', '/tok/', upstream),
        keyed('hdr', '/hdr/', upstream, { auth_configs: { authToken: { auth_header_name: 'X-Api-Key' } } }),
        tokenInQueryAndCookie(upstream),
        keyed('org', '/org/', upstream, { org_id: 'org1' }),
      ],
      {
        'key-one': { access_rights: accessTo('tok', 'hdr', 'tokq', 'org') },
        'key-org': { org_id: 'org1', access_rights: accessTo('org') },
        // A basic-auth user (basic-auth's table): its name is no token.
        alice: {
          org_id: 'acme',
          basic_auth_data: { password: 's3cret:x' },
          access_rights: accessTo('basic', 'basichdr', 'basicbody'),
        },
      },
    ),
  rows,
);
