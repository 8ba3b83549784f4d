/**
 * `POST /svc/explain` on a request whose upstream is another API of the gateway (an internal
 * target, `svc://<api>/...`, as a Gateway API dispatcher writes it): the explanation follows the
 * hop as the real request does, so its answer is the real one. The next API's own chain (its
 * authentication) is explained, the hop is a step naming both APIs, `hops` names the next API,
 * and loops and missing targets are answered as the real request is answered.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyed, keyless, oneVersion, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

interface Step {
  middleware: string;
  stage: string;
  decision: string;
  status?: number;
  message?: string;
  details: Record<string, unknown>;
  api_id?: string;
}
interface Match {
  api_id: string;
  name: string;
  listen_path: string;
}
interface Explanation {
  matched: Match | null;
  steps: Step[];
  hops?: { from: string; target: string; method: string; path: string; matched: Match }[];
  session?: { key_id: string };
  answer: { status: number; body: string; proxied_to?: string };
}

describe('explain follows internal targets', () => {
  let echo: Echo;
  let gw: InProcessGateway;
  let key = '';
  before(async () => {
    echo = await startEcho('echo');
    gw = await startGateway();
    // The internal API the dispatcher hands every request to: its own token auth, the whole path kept.
    await gw.addApi(
      keyed('int-auth', '/whole', echo.url, {
        name: 'ns/edge ns/shop rules[1] with SvcRoutePolicy ns/shop-auth',
        internal: true,
        use_standard_auth: true,
      }),
    );
    // A dispatcher as the Gateway API translation writes it (`^/?(.*)$` to
    // `svc://<api><its listen path>/$1`: the whole path, read by the API as a client's).
    await gw.addApi(
      keyless(
        'dispatch',
        '/dispatch',
        echo.url,
        oneVersion({
          extended_paths: {
            url_rewrites: [{ path: '/', match_pattern: '^/?(.*)$', rewrite_to: 'svc://int-auth/whole/$1' }],
          },
        }),
      ),
    );
    // One handing on what follows its listen path alone (`svc://<api>/$1`): the API matches it
    // after its listen path and sends it upstream without it (no strip), as the reference does.
    await gw.addApi(
      keyless(
        'dispatch-rel',
        '/dispatch-rel',
        echo.url,
        oneVersion({
          extended_paths: {
            url_rewrites: [{ path: '/', match_pattern: '^/?(.*)$', rewrite_to: 'svc://int-auth/$1' }],
          },
        }),
      ),
    );
    await gw.addApi(keyless('loop-a', '/loop-a/', 'svc://loop-b/'));
    await gw.addApi(keyless('loop-b', '/loop-b/', 'svc://loop-a/', { internal: true }));
    await gw.addApi(keyless('loop-self', '/loop-self/', 'svc://loop-self/again'));
    await gw.addApi(keyless('to-missing', '/to-missing/', 'svc://nowhere/x'));
    await gw.reload();
    const res = await gw.admin('POST', '/svc/keys', {
      access_rights: { 'int-auth': { api_id: 'int-auth', versions: ['Default'] } },
    });
    assert.equal(res.status, 200, res.text);
    key = (res.json as { key: string }).key;
  });
  after(async () => {
    await stopAll(gw, echo);
  });

  const explain = async (path: string, headers: Record<string, string> = {}): Promise<Explanation> => {
    const res = await gw.admin('POST', '/svc/explain', { method: 'GET', url: path, headers });
    assert.equal(res.status, 200, res.text);
    return res.json as Explanation;
  };

  test('a refusal in the internal API: 401 as the real request, auth-token of that API named', async () => {
    const x = await explain('/dispatch/x');
    const real = await gw.request({ fresh: true, path: '/dispatch/x' });
    assert.equal(real.status, 401);
    assert.equal(x.answer.status, real.status);
    assert.equal(x.answer.body, real.text);
    assert.deepEqual(JSON.parse(x.answer.body), { error: 'Authorization field missing' });
    assert.equal(x.answer.proxied_to, undefined);
    // The API the client's request matched stays `matched`; the internal API is the hop's.
    assert.equal(x.matched?.api_id, 'dispatch');
    assert.deepEqual(
      (x.hops ?? []).map((h) => [h.from, h.target, h.method, h.path, h.matched.api_id, h.matched.name]),
      [
        [
          'dispatch',
          'GET svc://int-auth/whole/x',
          'GET',
          '/whole/x',
          'int-auth',
          'ns/edge ns/shop rules[1] with SvcRoutePolicy ns/shop-auth',
        ],
      ],
    );
    const hop = x.steps.findIndex((s) => s.middleware === 'internal-target');
    assert.ok(hop >= 0, JSON.stringify(x.steps));
    const step = x.steps[hop];
    assert.ok(step);
    assert.equal(step.decision, 'passed');
    assert.equal(step.api_id, 'dispatch');
    assert.deepEqual(step.details.to, {
      api_id: 'int-auth',
      name: 'ns/edge ns/shop rules[1] with SvcRoutePolicy ns/shop-auth',
    });
    // Every step before the hop is the dispatcher's; the refusal after it is the internal API's.
    assert.ok(x.steps.slice(0, hop).every((s) => s.api_id === 'dispatch'));
    const refused = x.steps.filter((s) => s.decision !== 'passed');
    assert.deepEqual(
      refused.map((s) => [s.middleware, s.status, s.message, s.api_id]),
      [['auth-token', 401, 'Authorization field missing', 'int-auth']],
    );
    assert.ok(x.steps.findIndex((s) => s.decision !== 'passed') > hop);
  });

  test("a pass: proxied to the internal API's upstream, with its session, as the real request goes", async () => {
    const x = await explain('/dispatch/x?q=1', { authorization: key });
    const real = await gw.request({ fresh: true, path: '/dispatch/x?q=1', headers: { authorization: key } });
    assert.equal(real.status, 200, real.text);
    assert.equal((real.json as Echoed).path, '/whole/x');
    assert.equal(x.answer.status, 200);
    assert.equal(x.answer.proxied_to, `GET ${echo.url}/whole/x?q=1`);
    assert.equal(x.hops?.[0]?.path, '/whole/x?q=1');
    assert.ok(
      x.steps.every((s) => s.decision === 'passed'),
      JSON.stringify(x.steps),
    );
    const auth = x.steps.find((s) => s.middleware === 'auth-token');
    assert.equal(auth?.api_id, 'int-auth');
    assert.ok(x.session !== undefined && x.session.key_id !== '', 'the internal API authenticated the key');
  });

  test("a request with nothing after the dispatcher's listen path: the internal API sees its listen path", async () => {
    const x = await explain('/dispatch', { authorization: key });
    const real = await gw.request({ fresh: true, path: '/dispatch', headers: { authorization: key } });
    assert.equal((real.json as Echoed).path, '/whole');
    assert.equal(x.hops?.[0]?.path, '/whole');
    assert.equal(x.answer.proxied_to, `GET ${echo.url}/whole`);
  });

  test("a path handed on without the API's listen path: matched after it, sent upstream without it", async () => {
    const x = await explain('/dispatch-rel/x?q=1', { authorization: key });
    const real = await gw.request({
      fresh: true,
      path: '/dispatch-rel/x?q=1',
      headers: { authorization: key },
    });
    assert.equal(real.status, 200, real.text);
    assert.equal((real.json as Echoed).path, '/x');
    assert.deepEqual(
      (x.hops ?? []).map((h) => [h.target, h.path]),
      [['GET svc://int-auth/x?q=1', '/whole/x?q=1']],
    );
    assert.equal(x.answer.proxied_to, `GET ${echo.url}/x?q=1`);
    const bare = await explain('/dispatch-rel', { authorization: key });
    const realBare = await gw.request({
      fresh: true,
      path: '/dispatch-rel',
      headers: { authorization: key },
    });
    assert.equal((realBare.json as Echoed).path, '/');
    assert.equal(bare.hops?.[0]?.path, '/whole');
    assert.equal(bare.answer.proxied_to, `GET ${echo.url}/`);
  });

  for (const [path, status] of [
    ['/loop-a/x', 508],
    ['/loop-self/x', 508],
    ['/to-missing/x', 502],
  ] as const) {
    test(`${path}: ${String(status)} with the real request's message, the refusing hop a step`, async () => {
      const x = await explain(path);
      const real = await gw.request({ fresh: true, path });
      assert.equal(real.status, status, real.text);
      assert.equal(x.answer.status, status);
      assert.equal(x.answer.body, real.text);
      const last = x.steps.at(-1);
      assert.equal(last?.middleware, 'internal-target');
      assert.equal(last.decision, 'refused');
      assert.equal(last.status, status);
    });
  }

  test('the hop bound is the real one: 16 APIs, then 508', async () => {
    const x = await explain('/loop-self/x');
    // loop-self to itself 15 times (16 APIs), the 16th hop refused.
    assert.equal(x.hops?.length, 15);
    assert.ok((x.hops ?? []).every((h) => h.from === 'loop-self' && h.matched.api_id === 'loop-self'));
    assert.match((JSON.parse(x.answer.body) as { error: string }).error, /\(loop-self( -> loop-self){16}\)$/);
  });
});
