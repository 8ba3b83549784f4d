/**
 * A version's `expires` through a real gateway: past, 403 and no expiry header; ahead, proxied
 * with `X-Svc-Api-Expires`. Runs against the files and Redis stores with the fast path on and
 * off; on the fast path every row must be served by it.
 */
import { useEcho } from '../../testing/echo.ts';
import { keyless, oneVersion } from '../../testing/harness.ts';
import { describeProxiedTable, type ProxiedRow } from '../../testing/tables.ts';

const EXPIRED = 'Api Version has expired, please check documentation or contact administrator';

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless('expired', '/expired/', echo().url, oneVersion({ expires: '2020-01-31 12:00' }, 'v1')),
  keyless('expiring', '/expiring/', echo().url, oneVersion({ expires: '2999-12-31 23:59' })),
];

const rows: ProxiedRow[] = [
  {
    name: 'expires: past',
    path: '/expired/x',
    status: 403,
    error: EXPIRED,
    responseHeaders: { 'x-svc-api-expires': undefined },
  },
  {
    name: 'expires: ahead',
    path: '/expiring/x',
    status: 200,
    responseHeaders: { 'x-svc-api-expires': 'Tue, 31 Dec 2999 23:59:00 GMT' },
  },
];

describeProxiedTable('version expiry', apis, rows);
