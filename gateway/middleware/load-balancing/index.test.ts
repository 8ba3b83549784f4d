/**
 * `proxy.target_list` with `enable_load_balancing` (round robin over real upstream servers, the
 * counter shared by the requests of the process) and `check_host_against_uptime_tests` with
 * `uptime_tests` (a checker per API; an upstream whose check fails leaves the rotation and comes
 * back when it passes again: the tests stop and restart a real server on its port). The checker
 * closes with its route, and lives on while a reload keeps the route. Each table runs against the
 * files and Redis stores with the fast path on and off; every request is served by the fast path
 * when it is on.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fastPathStats } from '../../server/fast-path/index.ts';
import { openCheckers, type UptimeChecker } from './index.ts';
import { keyless } from '../../testing/harness.ts';
import { describeEachSetup, fastPathOn } from '../../testing/tables.ts';

/** An upstream that can be stopped and started again on the same port. */
interface Upstream {
  name: string;
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function upstream(name: string): Promise<Upstream> {
  let server: Server | undefined;
  let port = 0;
  const u: Upstream = {
    name,
    url: '',
    start: async () => {
      if (server !== undefined) return;
      const s = createServer((req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': name });
        res.end(JSON.stringify({ upstream: name, path: req.url }));
      });
      s.keepAliveTimeout = 100;
      await new Promise<void>((resolve, fail) => {
        s.once('error', fail);
        s.listen(port, '127.0.0.1', resolve);
      });
      port = (s.address() as AddressInfo).port;
      u.url = `http://127.0.0.1:${String(port)}`;
      server = s;
    },
    stop: async () => {
      const s = server;
      server = undefined;
      if (s === undefined) return;
      await new Promise<void>((resolve) => {
        s.close(() => {
          resolve();
        });
        s.closeAllConnections();
      });
    },
  };
  await u.start();
  return u;
}

let a: Upstream;
let b: Upstream;
let c: Upstream;
let flaky: Upstream;
let steady: Upstream;
before(async () => {
  [a, b, c, flaky, steady] = (await Promise.all(['a', 'b', 'c', 'flaky', 'steady'].map(upstream))) as [
    Upstream,
    Upstream,
    Upstream,
    Upstream,
    Upstream,
  ];
});
after(async () => {
  for (const u of [a, b, c, flaky, steady]) await u.stop();
});

const balanced = (
  id: string,
  targets: string[],
  extra: Record<string, unknown> = {},
  proxy: Record<string, unknown> = {},
): Record<string, unknown> =>
  keyless(id, `/${id}/`, '', extra, {
    strip_listen_path: true,
    enable_load_balancing: true,
    target_list: targets,
    ...proxy,
  });

const checked = (): Record<string, unknown> =>
  balanced(
    'up',
    [flaky.url, `${steady.url}/base`],
    {
      uptime_tests: {
        check_list: [
          { url: `${flaky.url}/health` },
          { url: `${steady.url}/health`, method: 'GET', timeout: 500 },
        ],
        config: { recheck_wait: 1 },
      },
    },
    { check_host_against_uptime_tests: true },
  );

const isClosed = (c: UptimeChecker): boolean => c.closed;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `checker` has run `n` more rounds. */
async function rounds(checker: UptimeChecker, n: number): Promise<void> {
  const target = checker.rounds + n;
  const deadline = Date.now() + 10_000;
  while (checker.rounds < target) {
    if (Date.now() > deadline) throw new Error('the uptime checker did not run');
    await sleep(50);
  }
}

describeEachSetup(
  'load balancing and uptime tests',
  () => ({}),
  ({ gw, index }) => {
    const fastPath = fastPathOn(index);
    let checker: UptimeChecker | undefined;
    before(async () => {
      await Promise.all([flaky.start(), steady.start()]);
      const known = new Set(openCheckers);
      await gw().addApi(balanced('lb', [a.url, b.url, c.url.replace('http://', '')]));
      await gw().addApi(checked());
      await gw().addApi(balanced('off', [a.url, b.url], {}));
      await gw().reload();
      checker = [...openCheckers].find((x) => !known.has(x));
      assert.ok(checker !== undefined, 'a checker was opened');
    });

    /** Requests `path`; returns the upstream that answered (or the status). */
    async function hit(path: string): Promise<string> {
      const before = fastPathStats.requests;
      const res = await gw().request({ fresh: true, method: 'GET', path });
      assert.equal(fastPathStats.requests - before, fastPath ? 1 : 0, 'the entrance that served it');
      if (res.status !== 200) return `${String(res.status)} ${res.text}`;
      return `${String(res.headers['x-upstream'])} ${(res.json as { path: string }).path}`;
    }

    test('round robin over target_list, a target without scheme meaning http', async () => {
      const got: string[] = [];
      for (let i = 0; i < 6; i++) got.push(await hit(`/lb/n${String(i)}`));
      const first = ['a', 'b', 'c'].indexOf(got[0]?.split(' ')[0] ?? '');
      assert.ok(first >= 0, got.join());
      const want = Array.from(
        { length: 6 },
        (_, i) => `${['a', 'b', 'c'][(first + i) % 3] ?? ''} /n${String(i)}`,
      );
      assert.deepEqual(got, want);
    });

    test('enable_load_balancing with target_url empty: the list serves', async () => {
      const got = new Set([await hit('/off/x'), await hit('/off/x')]);
      assert.deepEqual([...got].sort(), ['a /x', 'b /x']);
    });

    test('a host failing its check leaves the rotation and comes back', async () => {
      assert.ok(checker !== undefined);
      await rounds(checker, 1);
      const both = new Set([await hit('/up/p'), await hit('/up/p')]);
      assert.deepEqual([...both].sort(), ['flaky /p', 'steady /base/p']);
      await flaky.stop();
      await rounds(checker, 2);
      for (let i = 0; i < 4; i++) assert.equal(await hit('/up/p'), 'steady /base/p');
      await flaky.start();
      await rounds(checker, 2);
      const back = new Set([await hit('/up/p'), await hit('/up/p')]);
      assert.deepEqual([...back].sort(), ['flaky /p', 'steady /base/p']);
    });

    test('every host down: 503', async () => {
      assert.ok(checker !== undefined);
      await Promise.all([flaky.stop(), steady.stop()]);
      try {
        await rounds(checker, 2);
        assert.equal(await hit('/up/p'), '503 {"error":"All upstream hosts are down"}');
      } finally {
        await Promise.all([flaky.start(), steady.start()]);
      }
      await rounds(checker, 2);
      assert.match(await hit('/up/p'), /^(flaky|steady) /);
    });

    test('a reload keeps an unchanged route and its checker; a change closes it', async () => {
      assert.ok(checker !== undefined);
      await gw().reload();
      assert.equal(checker.closed, false);
      assert.ok(openCheckers.has(checker));
      const known = new Set(openCheckers);
      const res = await gw().admin('PUT', '/svc/apis/up', { ...checked(), name: 'up, renamed' });
      assert.equal(res.status, 200, res.text);
      await gw().reload();
      // The old route is closed once its requests are done.
      const deadline = Date.now() + 5000;
      while (!isClosed(checker) && Date.now() < deadline) await sleep(20);
      assert.equal(checker.closed, true, 'the old checker is closed');
      const fresh = [...openCheckers].filter((x) => !known.has(x));
      assert.equal(fresh.length, 1, 'the new route has its own checker');
      checker = fresh[0];
    });
  },
);
