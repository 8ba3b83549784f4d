/**
 * Basic authentication as a table (GATEWAY-BEHAVIOUR §2, §3): none (with `WWW-Authenticate`),
 * valid, the scheme in any case, a wrong password, an unknown user, a token's key, malformed
 * headers, a user of another organisation, a custom header, credentials in the body. Each row is
 * a request in, and the status, the `error`, the headers out and what the upstream received. Runs
 * against the files and Redis stores, with the fast path on and off.
 */
import { keyed } from '../../testing/harness.ts';
import { accessTo, describeAuthTable, type AuthRow } from '../../testing/auth-rows.ts';
import { provision } from '../../testing/tables.ts';
import { basicAuth } from '../../testing/client.ts';

const rows: AuthRow[] = [
  {
    name: 'basic: none',
    path: '/basic/x',
    status: 401,
    error: 'Authorization field missing',
    responseHeaders: { 'www-authenticate': 'Basic realm="basic API"' },
  },
  {
    name: 'basic: valid',
    path: '/basic/x',
    headers: { authorization: basicAuth('alice', 's3cret:x') },
    status: 200,
  },
  {
    name: 'basic: scheme in any case',
    path: '/basic/x',
    headers: { authorization: `bAsIc ${Buffer.from('alice:s3cret:x').toString('base64')}` },
    status: 200,
  },
  {
    name: 'basic: wrong password',
    path: '/basic/x',
    headers: { authorization: basicAuth('alice', 'wrong') },
    status: 401,
    error: 'User not authorised',
    responseHeaders: { 'www-authenticate': 'Basic realm="basic API"' },
  },
  {
    name: 'basic: unknown user',
    path: '/basic/x',
    headers: { authorization: basicAuth('mallory', 's3cret:x') },
    status: 401,
    error: 'User not authorised',
  },
  {
    name: 'basic: a token is not a user',
    path: '/basic/x',
    headers: { authorization: basicAuth('key-one', '') },
    status: 401,
    error: 'User not authorised',
  },
  {
    name: 'basic: not base64',
    path: '/basic/x',
    headers: { authorization: 'Basic !!!' },
    status: 400,
    error: 'Attempted access with malformed header, header not in basic auth format',
  },
  {
    name: 'basic: no colon',
    path: '/basic/x',
    headers: { authorization: `Basic ${Buffer.from('alice').toString('base64')}` },
    status: 400,
    error: 'Attempted access with malformed header, header not in basic auth format',
  },
  {
    name: 'basic: a bare token',
    path: '/basic/x',
    headers: { authorization: 'alice' },
    status: 400,
    error: 'Attempted access with malformed header, header not in basic auth format',
  },
  {
    name: 'basic: user of another organisation',
    path: '/basic/x',
    headers: { authorization: basicAuth('bob', 'pw') },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'basic: custom header',
    path: '/basichdr/x',
    headers: { 'x-user': basicAuth('alice', 's3cret:x') },
    status: 200,
  },
  {
    name: 'basic: credentials in the body',
    method: 'POST',
    path: '/basicbody/x',
    body: '<user>alice</user><pass>s3cret:x</pass>',
    status: 200,
    upstreamBody: '<user>alice</user><pass>s3cret:x</pass>',
  },
  {
    name: 'basic: wrong password in the body',
    method: 'POST',
    path: '/basicbody/x',
    body: '<user>alice</user><pass>no</pass>',
    status: 401,
    error: 'User not authorised',
  },
  {
    name: 'basic: body without credentials',
    method: 'POST',
    path: '/basicbody/x',
    body: 'nothing',
    status: 401,
    error: 'Authorization field missing',
  },
];

describeAuthTable(
  'basic authentication',
  (gw, upstream) =>
    provision(
      gw,
      [
        keyed('basic', '/basic/', upstream, { use_basic_auth: true, org_id: 'acme' }),
        keyed('basichdr', '/basichdr/', upstream, {
          use_basic_auth: true,
          org_id: 'acme',
          auth_configs: { basic: { auth_header_name: 'X-User' } },
        }),
        keyed('basicbody', '/basicbody/', upstream, {
          use_basic_auth: true,
          org_id: 'acme',
          basic_auth: {
            extract_from_body: true,
            body_user_regexp: '<user>(.*)</user>',
            body_password_regexp: '<pass>(.*)</pass>',
          },
        }),
      ],
      {
        // A token's key (auth-token's table): its name is no user.
        'key-one': { access_rights: accessTo('tok', 'hdr', 'tokq', 'org') },
        alice: {
          org_id: 'acme',
          basic_auth_data: { password: 's3cret:x' },
          access_rights: accessTo('basic', 'basichdr', 'basicbody'),
        },
        bob: { org_id: 'other', basic_auth_data: { password: 'pw' }, access_rights: accessTo('basic') },
      },
    ),
  rows,
);
