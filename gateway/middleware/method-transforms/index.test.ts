/**
 * `method_transforms` as a table: the endpoint's request goes upstream with the new method,
 * another endpoint keeps its own. Runs against the files and Redis stores with the fast path on
 * and off; on the fast path every row must be served by it.
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
      extended_paths: { method_transforms: [{ path: '/convert', method: 'GET', to_method: 'POST' }] },
    }),
  ),
];

const rows: ProxiedRow[] = [
  { name: 'method_transforms: GET sent as POST', path: '/hdr/convert', status: 200, upstreamMethod: 'POST' },
  {
    name: 'method_transforms: another endpoint keeps its method',
    path: '/hdr/a',
    status: 200,
    upstreamMethod: 'GET',
  },
];

describeProxiedTable('method transforms', apis, rows);
