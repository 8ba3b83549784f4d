/**
 * Response caching (`cache_options`, `extended_paths.cache`, `advance_cache_config`) as a table:
 * request in; status, body (which upstream call answered) and headers out. The upstream counts
 * its calls, so a hit is the earlier call's answer with `X-Svc-Cached-Response: 1`. Runs with
 * the files store (memory cache) and the Redis store (cache in Redis), fast path on and off; on
 * the fast path every row is served by it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { type InProcessGateway, keyed, keyless, oneVersion, startGateway } from '../../testing/harness.ts';
import { useRedis } from '../../testing/redis-server.ts';
import { sendRow } from '../../testing/tables.ts';
import { stopAll } from '../../../lib/testing/teardown.ts';
import { closeServer, listenLocal } from '../../testing/servers.ts';

/** An upstream that answers `<call number> <method> <path>` and what the query asks for. */
async function startCounter(): Promise<{ url: string; close: () => Promise<void> }> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    calls++;
    const url = new URL(req.url ?? '/', 'http://x');
    const status = Number(url.searchParams.get('status') ?? '200');
    const headers: Record<string, string> = { 'content-type': 'text/plain', 'x-up': 'yes' };
    if (url.searchParams.has('cookie')) headers['set-cookie'] = 'a=1';
    if (url.searchParams.has('action')) headers['x-tyk-cache-action-set'] = '1';
    const ttl = url.searchParams.get('ttl');
    if (ttl !== null) headers['x-ttl'] = ttl;
    const body = `${String(calls)} ${req.method ?? ''} ${url.pathname} ${req.headers.authorization ?? '-'}`;
    if (url.searchParams.has('chunked')) {
      res.writeHead(status, headers);
      res.write(body.slice(0, 2));
      res.end(body.slice(2));
      return;
    }
    res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return { url: await listenLocal(server), close: () => closeServer(server) };
}

const version = (extended: Record<string, unknown>): Record<string, unknown> =>
  oneVersion({ extended_paths: extended });

interface Row {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  status: number;
  /** The body: the upstream's answer of call `n` (`<n> ...`), or an exact text. */
  body?: RegExp | string;
  /** Whether the answer came from the cache. */
  cached: boolean;
  error?: string;
  /** Moves the clock forward by this many seconds first. */
  advance?: number;
  /** The Content-Length header expected. */
  length?: string;
}

const A = { authorization: 'cache-a' };
const B = { authorization: 'cache-b' };

const rows: Row[] = [
  // cache_all_safe_requests on a keyless API.
  {
    name: 'all: first GET goes upstream',
    path: '/all/x',
    status: 200,
    body: /^1 GET \/all\/x -$/,
    cached: false,
  },
  {
    name: 'all: the same GET is a hit',
    path: '/all/x',
    status: 200,
    body: /^1 GET \/all\/x -$/,
    cached: true,
  },
  {
    name: 'all: another query is another entry',
    path: '/all/x?q=1',
    status: 200,
    body: /^2 /,
    cached: false,
  },
  {
    name: 'all: POST is never cached',
    method: 'POST',
    path: '/all/x',
    status: 200,
    body: /^3 POST/,
    cached: false,
  },
  {
    name: 'all: POST again goes upstream',
    method: 'POST',
    path: '/all/x',
    status: 200,
    body: /^4 POST/,
    cached: false,
  },
  {
    name: 'all: a chunked answer is stored',
    path: '/all/c?chunked=1',
    status: 200,
    body: /^5 GET \/all\/c/,
    cached: false,
  },
  {
    name: 'all: and served decoded',
    path: '/all/c?chunked=1',
    status: 200,
    body: /^5 GET \/all\/c/,
    cached: true,
  },
  {
    name: 'all: a status outside cache_response_codes',
    path: '/all/e?status=500',
    status: 500,
    body: /^6 /,
    cached: false,
  },
  { name: 'all: is not stored', path: '/all/e?status=500', status: 500, body: /^7 /, cached: false },
  {
    name: 'all: Set-Cookie answers are not stored',
    path: '/all/k?cookie=1',
    status: 200,
    body: /^8 /,
    cached: false,
  },
  {
    name: 'all: so they go upstream again',
    path: '/all/k?cookie=1',
    status: 200,
    body: /^9 /,
    cached: false,
  },
  {
    name: 'all: still a hit after 9 s',
    path: '/all/x',
    advance: 9,
    status: 200,
    body: /^1 GET/,
    cached: true,
  },
  {
    name: 'all: expired after cache_timeout (10 s)',
    path: '/all/x',
    advance: 2,
    status: 200,
    body: /^10 /,
    cached: false,
  },
  // cache_by_headers: the header's value joins the key.
  {
    name: 'by header: first',
    path: '/all/h',
    headers: { 'x-tenant': 'a' },
    status: 200,
    body: /^11 /,
    cached: false,
  },
  {
    name: 'by header: another value',
    path: '/all/h',
    headers: { 'x-tenant': 'b' },
    status: 200,
    body: /^12 /,
    cached: false,
  },
  {
    name: 'by header: the first value hits',
    path: '/all/h',
    headers: { 'x-tenant': 'a' },
    status: 200,
    body: /^11 /,
    cached: true,
  },
  // The `cache` list and advance_cache_config on a keyed API: entries per key.
  {
    name: 'keyed: a hit is authenticated first',
    path: '/keyed/list',
    status: 401,
    error: 'Authorization field missing',
    cached: false,
  },
  {
    name: 'keyed: key A fills its entry',
    path: '/keyed/list',
    headers: A,
    status: 200,
    body: /^13 GET \/keyed\/list cache-a$/,
    cached: false,
  },
  {
    name: 'keyed: key A hits',
    path: '/keyed/list',
    headers: A,
    status: 200,
    body: /^13 GET \/keyed\/list cache-a$/,
    cached: true,
  },
  {
    name: "keyed: key B never gets A's entry",
    path: '/keyed/list',
    headers: B,
    status: 200,
    body: /^14 GET \/keyed\/list cache-b$/,
    cached: false,
  },
  {
    name: 'keyed: key B hits its own',
    path: '/keyed/list',
    headers: B,
    status: 200,
    body: /^14 GET \/keyed\/list cache-b$/,
    cached: true,
  },
  {
    name: 'keyed: a hit still counts against the rate limit',
    path: '/keyed/list',
    headers: A,
    status: 429,
    error: 'Rate Limit Exceeded',
    cached: false,
  },
  {
    name: 'keyed: a path outside the lists is not cached',
    path: '/keyed/other',
    headers: B,
    status: 200,
    body: /^15 /,
    cached: false,
  },
  {
    name: 'keyed: not cached again',
    path: '/keyed/other',
    headers: B,
    status: 200,
    body: /^16 /,
    cached: false,
  },
  {
    name: 'advance: a 201 is in its cache_response_codes',
    path: '/keyed/adv?status=201',
    headers: B,
    status: 201,
    body: /^17 /,
    cached: false,
  },
  {
    name: 'advance: hit',
    path: '/keyed/adv?status=201',
    headers: B,
    status: 201,
    body: /^17 /,
    cached: true,
  },
  { name: 'advance: a 200 is not', path: '/keyed/adv', headers: B, status: 200, body: /^18 /, cached: false },
  {
    name: 'advance: its timeout (3 s) passed',
    path: '/keyed/adv?status=201',
    headers: B,
    advance: 4,
    status: 201,
    body: /^19 /,
    cached: false,
  },
  // enable_upstream_cache_control: the upstream decides.
  {
    name: 'upstream control: no action header, not stored',
    path: '/up/a',
    status: 200,
    body: /^20 /,
    cached: false,
  },
  { name: 'upstream control: so upstream again', path: '/up/a', status: 200, body: /^21 /, cached: false },
  {
    name: 'upstream control: action header, stored for its TTL',
    path: '/up/b?action=1&ttl=30',
    status: 200,
    body: /^22 /,
    cached: false,
  },
  {
    name: 'upstream control: hit past cache_timeout',
    path: '/up/b?action=1&ttl=30',
    advance: 20,
    status: 200,
    body: /^22 /,
    cached: true,
  },
  {
    name: 'upstream control: gone past its TTL',
    path: '/up/b?action=1&ttl=30',
    advance: 11,
    status: 200,
    body: /^23 /,
    cached: false,
  },
  // HEAD is a safe method, cached as the reference caches it (GET, HEAD and OPTIONS), in entries
  // of its own: the upstream's status, headers and Content-Length, without a body.
  {
    name: 'all: a HEAD goes upstream first',
    method: 'HEAD',
    path: '/all/head',
    status: 200,
    body: '',
    length: String('24 HEAD /all/head -'.length),
    cached: false,
  },
  {
    name: "all: the same HEAD is a hit, with the upstream's Content-Length",
    method: 'HEAD',
    path: '/all/head',
    status: 200,
    body: '',
    length: String('24 HEAD /all/head -'.length),
    cached: true,
  },
  {
    name: 'all: a GET of that path is an entry of its own',
    path: '/all/head',
    status: 200,
    body: /^25 GET \/all\/head -$/,
    cached: false,
  },
  {
    name: 'all: and the HEAD entry still answers HEAD',
    method: 'HEAD',
    path: '/all/head',
    status: 200,
    body: '',
    length: String('24 HEAD /all/head -'.length),
    cached: true,
  },
  {
    name: 'all: OPTIONS is cached too',
    method: 'OPTIONS',
    path: '/all/opt',
    status: 200,
    body: /^26 OPTIONS \/all\/opt -$/,
    cached: false,
  },
  {
    name: 'all: OPTIONS hit',
    method: 'OPTIONS',
    path: '/all/opt',
    status: 200,
    body: /^26 OPTIONS \/all\/opt -$/,
    cached: true,
  },
];

const redis = useRedis();

const SETUPS = [
  { name: 'files store, fast path on', redis: false, fastPath: true },
  { name: 'files store, fast path off', redis: false, fastPath: false },
  { name: 'redis store, fast path on', redis: true, fastPath: true },
  { name: 'redis store, fast path off', redis: true, fastPath: false },
];

SETUPS.forEach((setup, index) => {
  describe(`response cache: ${setup.name}`, () => {
    let gw: InProcessGateway | undefined;
    let up: { url: string; close: () => Promise<void> } | undefined;
    const clock = { t: Date.parse('2030-01-01T00:00:00Z') };
    before(async () => {
      up = await startCounter();
      const argv = setup.fastPath ? [] : ['--fast-path=false'];
      if (setup.redis) {
        argv.push('--store', redis().url, '--redis-key-prefix', `cache-${String(index)}:`);
      }
      gw = await startGateway({ argv, now: () => clock.t });
      const url = up.url;
      await gw.addApi(
        keyless('all', '/all/', url, {
          cache_options: {
            enable_cache: true,
            cache_all_safe_requests: true,
            cache_timeout: 10,
            cache_response_codes: [200],
            cache_by_headers: ['X-Tenant'],
          },
        }),
      );
      await gw.addApi(
        keyed('keyed', '/keyed/', url, {
          cache_options: { enable_cache: true, cache_timeout: 60 },
          ...version({
            cache: ['/list'],
            advance_cache_config: [{ path: '/adv', method: 'GET', cache_response_codes: [201], timeout: 3 }],
          }),
        }),
      );
      await gw.addApi(
        keyless('up', '/up/', url, {
          cache_options: {
            enable_cache: true,
            cache_timeout: 5,
            enable_upstream_cache_control: true,
            cache_control_ttl_header: 'X-TTL',
          },
          ...version({ cache: ['/a', '/b'] }),
        }),
      );
      for (const [key, rate] of [
        ['cache-a', 2],
        ['cache-b', 100],
      ] as const) {
        const res = await gw.admin('POST', `/svc/keys/${key}`, {
          rate,
          per: 60,
          access_rights: { keyed: { api_id: 'keyed', versions: ['Default'] } },
        });
        assert.equal(res.status, 200, res.text);
      }
      await gw.reload();
    });
    after(async () => {
      await stopAll(gw, up);
    });
    for (const row of rows) {
      test(`${row.name}: ${String(row.status)}`, async () => {
        if (gw === undefined) throw new Error('the gateway did not start');
        if (row.advance !== undefined) clock.t += row.advance * 1000;
        // The row's body is the answer's: the request has none.
        const { res, served } = await sendRow(gw, { ...row, body: undefined });
        assert.equal(res.status, row.status, res.text);
        if (row.error !== undefined) assert.deepEqual(res.json, { error: row.error });
        if (row.body instanceof RegExp) assert.match(res.text, row.body);
        else if (row.body !== undefined) assert.equal(res.text, row.body);
        assert.equal(res.headers['x-svc-cached-response'], row.cached ? '1' : undefined);
        if (row.length !== undefined) assert.equal(res.headers['content-length'], row.length);
        if (row.cached) {
          assert.equal(res.headers['content-type'], 'text/plain');
          assert.equal(res.headers['x-up'], 'yes');
        }
        // The Redis write after a miss is not awaited by the request: let it land.
        if (setup.redis && !row.cached) await new Promise((r) => setTimeout(r, 30));
        assert.equal(served, setup.fastPath ? 1 : 0, 'the entrance that served it');
      });
    }
  });
});
