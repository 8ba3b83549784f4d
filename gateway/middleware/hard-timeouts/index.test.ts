/**
 * `hard_timeouts` as a table: past the timeout the gateway answers 504; a disabled entry and
 * another endpoint are proxied. Runs against the files and Redis stores with the fast path on and
 * off; on the fast path every row must be served by it.
 */
import { useEcho } from '../../testing/echo.ts';
import { keyless, oneVersion } from '../../testing/harness.ts';
import { describeTable, type Row } from '../../testing/tables.ts';

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless(
    'slow',
    '/slow/',
    echo().url,
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
    'slowms',
    '/slowms/',
    echo().url,
    oneVersion({ extended_paths: { hard_timeouts: [{ path: '/hang', method: 'GET', timeout: 0.3 }] } }),
  ),
];

const rows: Row[] = [
  // Hard timeouts.
  {
    name: 'hard_timeouts: past the timeout',
    path: '/slow/hang',
    status: 504,
    error: 'Upstream service reached hard timeout.',
  },
  { name: 'hard_timeouts: another endpoint', path: '/slow/other', status: 200 },
  {
    name: 'hard_timeouts: a fraction of a second (0.3)',
    path: '/slowms/hang',
    status: 504,
    error: 'Upstream service reached hard timeout.',
  },
];

describeTable('hard timeouts', apis, rows);
