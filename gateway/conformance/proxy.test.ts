/**
 * Proxying, as tables: routing (domains, longest listen path), stripping, inactive and keyed
 * APIs, headers, HTTPS both ways, API ports, and upstream failures. Each case is a request in,
 * and the status, body and headers out (for proxied requests, what the echo upstream received).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { selfSignedCert } from '../testing/certs.ts';
import { send } from '../testing/client.ts';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyless, startGateway, startTlsGateway, type InProcessGateway } from '../testing/harness.ts';
import { fastPathStats } from '../server/fast-path/index.ts';
import { freePort } from '../../lib/testing/wait.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { provision } from '../testing/tables.ts';

interface Case {
  name: string;
  method?: string;
  path: string;
  host?: string;
  headers?: Record<string, string>;
  body?: string;
  /** `own`: the HTTP API port; `secure`: the HTTPS API port. */
  port?: 'own' | 'secure';
  status: number;
  /** The `error` of a JSON error body. */
  error?: string;
  /** Fields the upstream received. */
  echo?: Partial<Omit<Echoed, 'headers'>>;
  /** Headers the upstream received; undefined means absent. */
  upstreamHeaders?: Record<string, string | undefined>;
  /** Headers the client received; undefined means absent. */
  responseHeaders?: Record<string, string | undefined>;
}

const cases: Case[] = [
  {
    name: 'GET with a query',
    path: '/echo/x?a=1&b=2',
    status: 200,
    echo: { upstream: 'echo', method: 'GET', path: '/echo/x', query: 'a=1&b=2' },
  },
  {
    name: 'POST with a body',
    method: 'POST',
    path: '/echo/items',
    headers: { 'content-type': 'application/json' },
    body: '{"k":1}',
    status: 200,
    echo: { method: 'POST', path: '/echo/items', body: '{"k":1}' },
    upstreamHeaders: { 'content-type': 'application/json', 'content-length': '7' },
  },
  { name: 'PUT', method: 'PUT', path: '/echo/1', body: 'x', status: 200, echo: { method: 'PUT', body: 'x' } },
  {
    name: 'PATCH',
    method: 'PATCH',
    path: '/echo/1',
    body: 'y',
    status: 200,
    echo: { method: 'PATCH', body: 'y' },
  },
  {
    name: 'DELETE',
    method: 'DELETE',
    path: '/echo/1',
    status: 200,
    echo: { method: 'DELETE', path: '/echo/1' },
  },
  {
    name: 'upstream status passes through',
    path: '/echo/status/418',
    status: 418,
    echo: { path: '/echo/status/418' },
  },
  {
    name: 'listen path stripped, target path kept',
    path: '/strip/one/two',
    status: 200,
    echo: { path: '/base/one/two' },
  },
  { name: 'stripped to the target path', path: '/strip', status: 200, echo: { path: '/base' } },
  {
    name: "stripped to the target path: the client's trailing slash kept, the target's dropped",
    path: '/strip-slash/',
    status: 200,
    echo: { path: '/base/' },
  },
  {
    name: 'target without its trailing slash by default',
    path: '/strip-slash?q=1',
    status: 200,
    echo: { path: '/base', query: 'q=1' },
  },
  {
    name: 'disable_strip_slash: the target path as written, its trailing slash kept',
    path: '/keep-slash?q=1',
    status: 200,
    echo: { path: '/base/', query: 'q=1' },
  },
  {
    name: "disable_strip_slash: the client's trailing slash alone, the target path as written",
    path: '/keep-slash/',
    status: 200,
    echo: { path: '/base/' },
  },
  {
    name: 'disable_strip_slash: a target without a trailing slash gets none',
    path: '/keep-bare/',
    status: 200,
    echo: { path: '/base' },
  },
  {
    name: 'disable_strip_slash: a longer path joined as without it',
    path: '/keep-slash/a/b/',
    status: 200,
    echo: { path: '/base/a/b/' },
  },
  {
    name: 'dot segments removed before routing',
    path: '/echo/../strip/z',
    status: 200,
    echo: { path: '/base/z' },
  },
  { name: 'exact domain', path: '/d/x', host: 'api.example.com', status: 200, echo: { path: '/exact/x' } },
  {
    name: 'exact domain, any case, with port',
    path: '/d/x',
    host: 'API.Example.COM:8080',
    status: 200,
    echo: { path: '/exact/x' },
  },
  { name: 'wildcard domain', path: '/d/x', host: 'shop.example.com', status: 200, echo: { path: '/wild/x' } },
  { name: 'no domain', path: '/d/x', host: 'other.org', status: 200, echo: { path: '/none/x' } },
  {
    name: 'wildcard domain, any depth below it',
    path: '/d/x',
    host: 'a.b.example.org',
    status: 200,
    echo: { path: '/wild-org/x' },
  },
  {
    name: 'one-label wildcard (domain_wildcard_one_label): one label below',
    path: '/d/x',
    host: 'A.Single.test',
    status: 200,
    echo: { path: '/single/x' },
  },
  {
    name: 'one-label wildcard: a deeper name is not its own, the next tier serves',
    path: '/d/x',
    host: 'a.b.single.test',
    status: 200,
    echo: { path: '/none/x' },
  },
  {
    name: 'one-label wildcard: the bare suffix is not its own',
    path: '/d/x',
    host: 'single.test',
    status: 200,
    echo: { path: '/none/x' },
  },
  {
    name: 'one-label and any-depth wildcards of one name: one label takes the one-label API',
    path: '/d/x',
    host: 'a.both.test',
    status: 200,
    echo: { path: '/both-one/x' },
  },
  {
    name: 'one-label and any-depth wildcards of one name: deeper takes the any-depth API',
    path: '/d/x',
    host: 'a.b.both.test',
    status: 200,
    echo: { path: '/both-deep/x' },
  },
  { name: 'longest listen path', path: '/p/q/r', status: 200, echo: { path: '/long/r' } },
  { name: 'shorter listen path', path: '/p/x', status: 200, echo: { path: '/short/x' } },
  { name: 'listen paths match whole segments', path: '/pq', status: 404, error: 'Not Found' },
  {
    name: 'an exact listen path (listen_path_exact) serves its path alone',
    path: '/p/exact',
    status: 200,
    echo: { path: '/exact-only/p/exact' },
  },
  {
    name: 'an exact listen path, without case',
    path: '/P/Exact',
    status: 200,
    echo: { path: '/exact-only/P/Exact' },
  },
  {
    name: 'a case-sensitive exact listen path serves its path as written',
    path: '/c/Two',
    status: 200,
    echo: { path: '/cased-exact/c/Two' },
  },
  {
    name: 'a case-sensitive exact listen path: another case goes to the next route',
    path: '/c/two',
    status: 200,
    echo: { path: '/cased-any/two' },
  },
  {
    name: 'a case-sensitive prefix listen path serves the paths under it as written',
    path: '/c/One/x',
    status: 200,
    echo: { path: '/cased-prefix/x' },
  },
  {
    name: 'a case-sensitive prefix listen path: another case goes to the next route',
    path: '/c/one/x',
    status: 200,
    echo: { path: '/cased-any/one/x' },
  },
  {
    name: 'under an exact listen path: the next route serves',
    path: '/p/exact/more',
    status: 200,
    echo: { path: '/short/exact/more' },
  },
  {
    name: 'listen paths match without case; the rest of the path is kept as sent',
    path: '/P/Q/Rest',
    status: 200,
    echo: { path: '/long/Rest' },
  },
  { name: 'listen path in capitals, stripped', path: '/STRIP/One', status: 200, echo: { path: '/base/One' } },
  { name: 'inactive API is not served', path: '/inactive/x', status: 404, error: 'Not Found' },
  { name: 'no API', path: '/nothing', status: 404, error: 'Not Found' },
  {
    name: 'keyed API without credentials',
    path: '/keyed/x',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'keyed API with an unknown token',
    path: '/keyed/x',
    headers: { authorization: 'Bearer abc' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'upstream refuses connections',
    path: '/dead/x',
    status: 502,
    error: 'There was a problem proxying the request',
  },
  {
    name: 'upstream too slow',
    path: '/slow/hang',
    status: 504,
    error: 'Upstream service reached hard timeout.',
  },
  {
    name: 'target without scheme (cluster service style)',
    path: '/bare/x',
    status: 200,
    echo: { path: '/x' },
  },
  {
    name: 'https upstream',
    path: '/tls-up/x',
    status: 200,
    echo: { upstream: 'tls-echo', path: '/tls-up/x' },
  },
  {
    name: 'https upstream with an untrusted certificate',
    path: '/tls-verify/x',
    status: 502,
    error: 'There was a problem proxying the request',
  },
  { name: 'API on its own port', port: 'own', path: '/y', status: 200, echo: { path: '/own/y' } },
  { name: 'that API is not on the gateway port', path: '/y', status: 404, error: 'Not Found' },
  {
    name: 'HTTPS API port',
    port: 'secure',
    path: '/z',
    host: 'secure.test',
    status: 200,
    echo: { path: '/secure/z' },
    upstreamHeaders: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'secure.test' },
  },
  {
    name: 'forwarded headers replaced when not trusted',
    path: '/echo/h',
    host: 'gw.test',
    headers: { 'x-forwarded-for': '1.2.3.4', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.test' },
    status: 200,
    upstreamHeaders: {
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'gw.test',
    },
  },
  {
    name: 'hop-by-hop request headers dropped, others kept',
    path: '/echo/h',
    headers: {
      connection: 'keep-alive, x-drop-me',
      'x-drop-me': '1',
      'keep-alive': 'timeout=5',
      te: 'trailers',
      'proxy-authorization': 'Basic eDp5',
      'x-keep-me': 'yes',
    },
    status: 200,
    upstreamHeaders: {
      'x-drop-me': undefined,
      te: undefined,
      'proxy-authorization': undefined,
      'keep-alive': undefined,
      'x-keep-me': 'yes',
    },
  },
  {
    name: 'hop-by-hop response headers dropped',
    path: '/echo/hop',
    status: 200,
    responseHeaders: { 'x-up-drop': undefined, 'x-up-keep': 'reaches the client', 'x-upstream': 'echo' },
  },
];

// The same table on the fast path (the default) and on node:http alone.
for (const fastPath of [true, false]) {
  describe(`proxy (fast path ${fastPath ? 'on' : 'off'})`, () => {
    let echo: Echo;
    let tlsEcho: Echo;
    let gw: InProcessGateway;
    let ownPort = 0;
    let securePort = 0;

    before(async () => {
      const cert = selfSignedCert();
      echo = await startEcho('echo');
      tlsEcho = await startEcho('tls-echo', cert);
      const dead = await freePort();
      ownPort = await freePort();
      securePort = await freePort();
      gw = await startTlsGateway([`--fast-path=${String(fastPath)}`, '--upstream-timeout-ms', '300'], cert);
      const e = echo.url;
      const strip = { strip_listen_path: true };
      const apis = [
        keyless('echo', '/echo/', e),
        keyless('strip', '/strip/', `${e}/base`, {}, strip),
        keyless('strip-slash', '/strip-slash/', `${e}/base/`, {}, strip),
        keyless('keep-slash', '/keep-slash/', `${e}/base/`, {}, { ...strip, disable_strip_slash: true }),
        keyless('keep-bare', '/keep-bare/', `${e}/base`, {}, { ...strip, disable_strip_slash: true }),
        keyless('exact', '/d/', `${e}/exact`, { domain: 'api.example.com' }, strip),
        keyless('wild', '/d/', `${e}/wild`, { domain: '*.example.com' }, strip),
        keyless('none', '/d/', `${e}/none`, {}, strip),
        keyless('wild-org', '/d/', `${e}/wild-org`, { domain: '*.example.org' }, strip),
        keyless(
          'single',
          '/d/',
          `${e}/single`,
          { domain: '*.single.test', domain_wildcard_one_label: true },
          strip,
        ),
        keyless(
          'both-one',
          '/d/',
          `${e}/both-one`,
          { domain: '*.both.test', domain_wildcard_one_label: true },
          strip,
        ),
        keyless('both-deep', '/d/', `${e}/both-deep`, { domain: '*.both.test' }, strip),
        keyless('short', '/p/', `${e}/short`, {}, strip),
        keyless('long', '/p/q/', `${e}/long`, {}, strip),
        keyless('exact-only', '/p/exact', `${e}/exact-only`, {}, { listen_path_exact: true }),
        keyless('cased-any', '/c/', `${e}/cased-any`, {}, strip),
        keyless(
          'cased-exact',
          '/c/Two',
          `${e}/cased-exact`,
          {},
          { listen_path_exact: true, listen_path_case_sensitive: true },
        ),
        keyless(
          'cased-prefix',
          '/c/One',
          `${e}/cased-prefix`,
          {},
          { ...strip, listen_path_case_sensitive: true },
        ),
        keyless('inactive', '/inactive/', e, { active: false }),
        keyless('keyed', '/keyed/', e, { use_keyless: false }),
        keyless('dead', '/dead/', `http://127.0.0.1:${dead}`),
        keyless('slow', '/slow/', e),
        keyless('bare', '/bare/', `localhost:${echo.port}`, {}, strip),
        keyless('tls-up', '/tls-up/', tlsEcho.url, {}, { transport: { ssl_insecure_skip_verify: true } }),
        keyless('tls-verify', '/tls-verify/', tlsEcho.url),
        keyless('own', '/', `${e}/own`, { listen_port: ownPort }, strip),
        keyless('secure', '/', `${e}/secure`, { listen_port: securePort, protocol: 'https' }, strip),
      ];
      await provision(gw, apis);
    });
    after(async () => {
      await stopAll(gw, echo, tlsEcho);
    });

    for (const c of cases) {
      test(c.name, async () => {
        const port = c.port === 'own' ? ownPort : c.port === 'secure' ? securePort : gw.port;
        // APIs with an http upstream take the fast path (when on), keyed ones too, on HTTP and
        // HTTPS ports alike; a fresh connection each, since one handed to node:http stays there.
        const fast = gw.config.fast_path && !c.path.startsWith('/tls-') && c.status !== 404;
        const served = fastPathStats.requests;
        const res = await send({
          fresh: true,
          port,
          method: c.method ?? 'GET',
          path: c.path,
          headers: { ...(c.host === undefined ? {} : { host: c.host }), ...c.headers },
          ...(c.body === undefined ? {} : { body: c.body }),
          tls: c.port === 'secure',
        });
        assert.equal(res.status, c.status, res.text);
        assert.equal(fastPathStats.requests - served, fast ? 1 : 0, 'served by the fast path');
        if (c.error !== undefined) {
          assert.deepEqual(res.json, { error: c.error });
          assert.equal(res.headers['content-type'], 'application/json');
        }
        const got = res.json as Echoed | undefined;
        if (c.echo !== undefined) {
          assert.ok(got, res.text);
          const picked = Object.fromEntries(Object.keys(c.echo).map((k) => [k, got[k as keyof Echoed]]));
          assert.deepEqual(picked, c.echo);
        }
        for (const [k, v] of Object.entries(c.upstreamHeaders ?? {}))
          assert.equal(got?.headers[k], v, `upstream ${k}`);
        for (const [k, v] of Object.entries(c.responseHeaders ?? {}))
          assert.equal(res.headers[k], v, `client ${k}`);
      });
    }

    test('POST /svc/explain says the upstream path and query the request would go to', async () => {
      for (const [url, want] of [
        ['/keep-slash?q=1', '/base/?q=1'],
        ['/strip-slash', '/base'],
        ['/strip/one/two', '/base/one/two'],
      ] as const) {
        const res = await gw.admin('POST', '/svc/explain', { method: 'GET', url });
        assert.equal(res.status, 200, res.text);
        const answer = (res.json as { answer?: { proxied_to?: string } }).answer;
        assert.equal(answer?.proxied_to, `GET http://127.0.0.1:${String(echo.port)}${want}`, url);
      }
    });

    test('the upstream gets the target host, not the client one', async () => {
      const res = await send({ port: gw.port, path: '/echo/h', headers: { host: 'gw.test' } });
      assert.equal((res.json as Echoed).headers.host, `127.0.0.1:${echo.port}`);
    });

    test('HEAD: headers, no body', async () => {
      const res = await send({ port: gw.port, method: 'HEAD', path: '/echo/x' });
      assert.equal(res.status, 200);
      assert.equal(res.text, '');
    });

    test('a 1 MiB body goes up and comes back intact', async () => {
      const body = Buffer.alloc(1024 * 1024, 'abcdefghij');
      const res = await send({ port: gw.port, method: 'POST', path: '/echo/big', body });
      const echoed = (res.json as Echoed).body;
      assert.equal(
        createHash('sha256').update(echoed).digest('hex'),
        createHash('sha256').update(body).digest('hex'),
      );
    });

    test('upstream connections are pooled and kept alive', async () => {
      const before = echo.connections();
      for (let i = 0; i < 20; i++) assert.equal((await send({ port: gw.port, path: '/echo/k' })).status, 200);
      assert.ok(
        echo.connections() - before <= 2,
        `${echo.connections() - before} new upstream connections for 20 requests`,
      );
    });

    test('response body streams: the first chunk arrives before the upstream has finished', async () => {
      const chunks: string[] = [];
      const done = new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: gw.port, path: '/echo/stream' }, (res) => {
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            chunks.push(c);
            if (chunks.length === 1) {
              assert.equal(echo.held(), 1, 'the upstream is still holding the response');
              echo.release();
            }
          });
          res.on('end', () => {
            resolve(res.statusCode ?? 0);
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(await done, 200);
      assert.deepEqual(chunks, ['first\n', 'second\n']);
    });

    test('request body streams: the upstream gets the first chunk before the client has finished', async () => {
      const res = await new Promise<string>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: gw.port,
            method: 'POST',
            path: '/echo/upload',
            headers: { 'transfer-encoding': 'chunked' },
          },
          (r) => {
            let text = '';
            r.setEncoding('utf8');
            r.on('data', (c: string) => (text += c));
            r.on('end', () => {
              resolve(text);
            });
          },
        );
        req.on('error', reject);
        req.write('part1');
        void echo.firstChunk.then((first) => {
          assert.equal(first, 'part1');
          req.end('part2');
        });
      });
      assert.equal(res, 'chunks:2');
    });
  });
}

describe('proxy with trusted forwarded headers', () => {
  test('X-Forwarded-* from the client are kept and extended', async () => {
    const echo = await startEcho('echo');
    const gw = await startGateway({ argv: ['--trust-forwarded-headers'] });
    try {
      await gw.addApi(keyless('echo', '/', echo.url));
      await gw.reload();
      const res = await send({
        port: gw.port,
        path: '/x',
        headers: {
          host: 'inner.test',
          'x-forwarded-for': '1.2.3.4',
          'x-forwarded-proto': 'https',
          'x-forwarded-host': 'outer.test',
        },
      });
      const h = (res.json as Echoed).headers;
      assert.deepEqual(
        [h['x-forwarded-for'], h['x-forwarded-proto'], h['x-forwarded-host']],
        ['1.2.3.4, 127.0.0.1', 'https', 'outer.test'],
      );
    } finally {
      await gw.stop();
      await echo.close();
    }
  });
});
