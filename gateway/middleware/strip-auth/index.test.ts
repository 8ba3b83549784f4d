/**
 * `strip_auth_data` as a table: the token authentication read from the query parameter, the
 * cookie or the header is removed before the request is proxied, the rest of the query and
 * cookies kept. Each row is a request in, and the status and what the upstream received. Runs
 * against the files and Redis stores, with the fast path on and off.
 */
import { accessTo, describeAuthTable, tokenInQueryAndCookie, type AuthRow } from '../../testing/auth-rows.ts';
import { provision } from '../../testing/tables.ts';

const rows: AuthRow[] = [
  {
    name: 'token: query parameter, stripped',
    path: '/tokq/x?a=1&api_key=key-one&b=2',
    status: 200,
    upstreamQuery: 'a=1&b=2',
  },
  {
    name: 'token: cookie, stripped',
    path: '/tokq/x',
    headers: { cookie: 'theme=dark; session=key-one' },
    status: 200,
    upstreamHeaders: { cookie: 'theme=dark' },
  },
  {
    name: 'token: header, stripped',
    path: '/tokq/x',
    headers: { authorization: 'key-one' },
    status: 200,
    upstreamHeaders: { authorization: undefined },
  },
];

describeAuthTable(
  'strip auth data',
  (gw, upstream) =>
    provision(gw, [tokenInQueryAndCookie(upstream)], {
      'key-one': { access_rights: accessTo('tok', 'hdr', 'tokq', 'org') },
    }),
  rows,
);
