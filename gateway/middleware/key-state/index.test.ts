/**
 * The state of a found key as a table (GATEWAY-BEHAVIOUR §2): inactive (403), expired (401), one
 * that expires later. Each row is a request in, and the status and the `error`. Runs against the
 * files and Redis stores, with the fast path on and off.
 */
import { keyed } from '../../testing/harness.ts';
import { accessTo, describeAuthTable, type AuthRow } from '../../testing/auth-rows.ts';
import { provision } from '../../testing/tables.ts';

const past = Math.floor(Date.now() / 1000) - 3600;
const future = Math.floor(Date.now() / 1000) + 3600;

const rows: AuthRow[] = [
  {
    name: 'key: inactive',
    path: '/tok/x',
    headers: { authorization: 'key-inactive' },
    status: 403,
    error: 'Key is inactive, please renew',
  },
  {
    name: 'key: expired',
    path: '/tok/x',
    headers: { authorization: 'key-expired' },
    status: 401,
    error: 'Key has expired, please renew',
  },
  { name: 'key: expires later', path: '/tok/x', headers: { authorization: 'key-later' }, status: 200 },
];

describeAuthTable(
  'key state',
  (gw, upstream) =>
    provision(gw, [keyed('tok', '/tok/', upstream)], {
      'key-inactive': { is_inactive: true, access_rights: accessTo('tok') },
      'key-expired': { expires: past, access_rights: accessTo('tok') },
      'key-later': { expires: future, access_rights: accessTo('tok') },
    }),
  rows,
);
