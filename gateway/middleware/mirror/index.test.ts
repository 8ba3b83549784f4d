/**
 * `proxy.mirror_targets` through a real listener, against the files and Redis stores with the
 * fast path on and off (a mirrored API reads bodies: node:http serves it in every setup): the
 * mirror gets the request as it goes upstream (rewritten path, query, changed headers, body) and
 * the client gets the upstream's answer; a mirror that never answers, or cannot be reached,
 * neither delays nor fails the request; a body without a length is proxied, not mirrored.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { fastPathStats } from '../../server/fast-path/index.ts';
import { useEcho, type Echoed } from '../../testing/echo.ts';
import { keyless, oneVersion } from '../../testing/harness.ts';
import { describeEachSetup, provision } from '../../testing/tables.ts';
import { closeServer, listenLocal } from '../../testing/servers.ts';

const echo = useEcho();

/** What a mirror got. */
interface Copy {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let copies: Copy[] = [];
let waiting: ((c: Copy) => void)[] = [];
let mirror: http.Server;
let mirrorUrl: string;
/** A mirror that reads requests and never answers. */
let silent: http.Server;
let silentUrl: string;
/** A port nothing listens on. */
let deadUrl: string;

before(async () => {
  mirror = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const copy = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      copies.push(copy);
      for (const w of waiting) w(copy);
      waiting = [];
      res.writeHead(500).end('the mirror answers 500: ignored');
    });
  });
  mirrorUrl = await listenLocal(mirror);
  silent = http.createServer((req) => {
    req.resume();
  });
  silentUrl = await listenLocal(silent);
  const dead = http.createServer();
  deadUrl = await listenLocal(dead);
  await closeServer(dead);
});

after(async () => {
  for (const s of [mirror, silent]) await closeServer(s);
});

/** The next copy the mirror gets (or one it already got for `url`). */
function copyOf(url: string): Promise<Copy> {
  const seen = copies.find((c) => c.url === url);
  if (seen !== undefined) return Promise.resolve(seen);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`no mirror copy of ${url}`));
    }, 5000);
    waiting.push((c) => {
      if (c.url !== url) return;
      clearTimeout(timer);
      resolve(c);
    });
  });
}

const apis = (): Record<string, unknown>[] => [
  keyless('mirrored', '/m/', `${echo().url}/up`, oneVersion({ global_headers: { 'x-set': 'by-gateway' } }), {
    strip_listen_path: true,
    mirror_targets: [`${mirrorUrl}/copy`],
  }),
  keyless('slow-mirrors', '/s/', echo().url, {}, { mirror_targets: [silentUrl, deadUrl, mirrorUrl] }),
  keyless('never', '/never/', echo().url, {}, { mirror_targets: [`${mirrorUrl}/never`], mirror_percent: 0 }),
  keyless('half', '/half/', echo().url, {}, { mirror_targets: [`${mirrorUrl}/half`], mirror_percent: 50 }),
];

describeEachSetup(
  'request mirroring',
  () => ({}),
  ({ gw }) => {
    before(async () => {
      copies = [];
      await provision(gw(), apis());
    });

    test('the mirror gets the request as it goes upstream; the client gets the upstream answer', async () => {
      const before = fastPathStats.requests;
      const res = await gw().request({
        fresh: true,
        method: 'GET',
        path: '/m/items/1?q=2',
        headers: { 'x-client': 'c1' },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(fastPathStats.requests - before, 0, 'a mirrored API is served by node:http');
      const got = res.json as Echoed;
      assert.equal(got.path, '/up/items/1');
      const copy = await copyOf('/copy/items/1?q=2');
      assert.equal(copy.method, 'GET');
      assert.equal(copy.headers['x-client'], 'c1');
      assert.equal(copy.headers['x-set'], 'by-gateway', 'after the header changes');
      assert.equal(copy.headers.host, new URL(mirrorUrl).host, "the mirror's own host");
      assert.equal(copy.body, '');
    });

    test('a body with a length is copied, and still reaches the upstream', async () => {
      const res = await gw().request({
        fresh: true,
        method: 'POST',
        path: '/m/orders',
        headers: { 'content-type': 'application/json' },
        body: '{"n":1}',
      });
      assert.equal(res.status, 200, res.text);
      assert.equal((res.json as Echoed).body, '{"n":1}');
      const copy = await copyOf('/copy/orders');
      assert.equal(copy.method, 'POST');
      assert.equal(copy.body, '{"n":1}');
      assert.equal(copy.headers['content-length'], '7');
    });

    test('a mirror that never answers or cannot be reached neither delays nor fails the request', async () => {
      const started = Date.now();
      const res = await gw().request({ fresh: true, method: 'GET', path: '/s/fast' });
      assert.equal(res.status, 200, res.text);
      assert.equal((res.json as Echoed).path, '/s/fast');
      assert.ok(Date.now() - started < 2000, `answered in ${String(Date.now() - started)} ms`);
      // The third mirror, which answers, got its copy all the same.
      await copyOf('/s/fast');
    });

    test('mirror_percent: 0 mirrors nothing; 50 about half of the requests', async () => {
      for (let i = 0; i < 100; i++) {
        const never = await gw().request({ method: 'GET', path: `/never/${String(i)}` });
        assert.equal(never.status, 200);
        const half = await gw().request({ method: 'GET', path: `/half/${String(i)}` });
        assert.equal(half.status, 200);
      }
      // A request sent after them all is mirrored last (one keep-alive connection, in order).
      await gw().request({ fresh: true, method: 'GET', path: '/m/last' });
      await copyOf('/copy/last');
      assert.equal(copies.filter((c) => c.url.startsWith('/never/')).length, 0);
      const halves = copies.filter((c) => c.url.startsWith('/half/')).length;
      // Binomial(100, 0.5): outside 25..75 about once in 3e6 runs.
      assert.ok(halves >= 25 && halves <= 75, `${String(halves)} of 100 mirrored`);
    });

    test('a body without a length is proxied and not mirrored', async () => {
      const port = gw().port;
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, method: 'POST', path: '/m/chunked', agent: false },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => {
              resolve({ status: res.statusCode ?? 0, body });
            });
          },
        );
        req.on('error', reject);
        req.write('part-1;');
        req.end('part-2');
      });
      assert.equal(answer.status, 200);
      assert.equal((JSON.parse(answer.body) as Echoed).body, 'part-1;part-2');
      // A later request's copy arrives; the chunked one never did.
      await gw().request({ fresh: true, method: 'GET', path: '/m/after' });
      await copyOf('/copy/after');
      assert.equal(
        copies.some((c) => c.url === '/copy/chunked'),
        false,
      );
    });
  },
);
