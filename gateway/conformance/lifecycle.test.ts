/**
 * The middleware lifecycle: `create` may be asynchronous and hold resources; a reload keeps the
 * compiled route of an unchanged API; a route table that has been swapped out closes what its
 * replaced routes hold once its in-flight requests have finished; a middleware that fails to
 * compile leaves its API out of the table and every other API loads.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { waitFor } from '../../lib/testing/wait.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { chain } from '../routes/chain.ts';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyed, keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const events: string[] = [];

/** Opens a "resource" per API asynchronously; refuses to compile for APIs tagged `boom`. */
const tracker: GatewayMiddleware = {
  name: 'tracker',
  enabled: (api) => api.tags?.includes('tracked') === true || api.tags?.includes('boom') === true,
  create: async (api) => {
    await new Promise((resolve) => setImmediate(resolve));
    if (api.tags?.includes('boom') === true) throw new Error('cannot open the resource');
    const generation = events.filter((e) => e.startsWith('open')).length + 1;
    events.push(`open ${generation}`);
    return {
      handle: async (ctx, next) => {
        ctx.responseHeaders['x-generation'] = String(generation);
        await next();
        return undefined;
      },
      close: () => {
        events.push(`close ${generation}`);
      },
    };
  },
};

/** Changes a stored API, so that the next reload compiles it again (an unchanged one is kept). */
async function updateApi(gw: InProcessGateway, def: Record<string, unknown>): Promise<void> {
  const res = await gw.admin('PUT', `/svc/apis/${String(def.api_id)}`, def);
  assert.equal(res.status, 200, res.text);
}

describe('middleware lifecycle', () => {
  let echo: Echo;
  let gw: InProcessGateway;
  before(async () => {
    echo = await startEcho('echo');
    gw = await startGateway({ chain: [tracker, ...chain], argv: ['--fast-path=false'] });
  });
  after(async () => {
    await stopAll(gw, echo);
  });

  test('the old table closes its middleware after its last request, not before', async () => {
    await gw.addApi(keyless('t', '/t/', echo.url, { tags: ['tracked'] }));
    await gw.reload();
    assert.deepEqual(events, ['open 1']);
    await gw.reload();
    assert.deepEqual(events, ['open 1'], 'an unchanged API keeps its compiled middleware across reloads');
    assert.equal((await gw.request({ path: '/t/x' })).headers['x-generation'], '1');
    const held = gw.request({ path: '/t/hold' });
    await waitFor('the request to be held upstream', () => (echo.held() === 1 ? true : undefined));
    await updateApi(gw, keyless('t', '/t/', echo.url, { tags: ['tracked', 'v2'] }));
    await gw.reload();
    assert.deepEqual(
      events,
      ['open 1', 'open 2'],
      'the new table is open; the old one still serves a request',
    );
    const fresh = await gw.request({ path: '/t/x' });
    assert.equal(fresh.headers['x-generation'], '2');
    echo.release();
    const res = await held;
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-generation'], '1', 'the held request finished on its own table');
    await waitFor('the old table to close', () => (events.includes('close 1') ? true : undefined));
    assert.ok(!events.includes('close 2'));
  });

  test('a middleware that fails to compile leaves its API out; the others load', async () => {
    await gw.addApi(keyless('boom', '/boom/', echo.url, { tags: ['boom'] }));
    await gw.addApi(keyless('fine', '/fine/', echo.url));
    const res = await gw.admin('GET', '/svc/reload');
    assert.equal(res.status, 200);
    assert.match((res.json as { message: string }).message, /left out: API boom: cannot open the resource/);
    assert.equal((await gw.request({ path: '/boom/x' })).status, 404);
    assert.equal(((await gw.request({ path: '/fine/x' })).json as Echoed).upstream, 'echo');
    assert.equal((await gw.request({ path: '/t/x' })).status, 200);
  });
});

describe('a throttled request whose client goes away', () => {
  test('is released at once: its table retires without waiting for the throttle interval', async () => {
    const echo = await startEcho('echo');
    const gw = await startGateway({ chain: [tracker, ...chain] });
    try {
      await gw.addApi(keyed('thr', '/thr/', echo.url, { tags: ['tracked'] }));
      await gw.reload();
      const key = await gw.admin('POST', '/svc/keys/thr-key', {
        rate: 1,
        per: 60,
        throttle_interval: 30,
        throttle_retry_limit: 5,
        access_rights: { thr: { api_id: 'thr', versions: ['Default'] } },
      });
      assert.equal(key.status, 200, key.text);
      assert.equal((await gw.request({ path: '/thr/x', headers: { authorization: 'thr-key' } })).status, 200);
      const opened = events.filter((e) => e.startsWith('open')).length;
      // The second request waits (throttled, 30 s); its client gives up after 200 ms.
      const aborted = new Promise<void>((resolve) => {
        const req = request({
          host: '127.0.0.1',
          port: gw.port,
          path: '/thr/x',
          headers: { authorization: 'thr-key' },
        });
        req.on('error', () => {
          resolve();
        });
        req.end();
        setTimeout(() => {
          req.destroy();
        }, 200);
      });
      await aborted;
      await updateApi(gw, keyed('thr', '/thr/', echo.url, { tags: ['tracked', 'v2'] }));
      await gw.reload();
      await waitFor(
        'the old table to close',
        () => (events.includes(`close ${opened}`) ? true : undefined),
        5_000,
      );
    } finally {
      await gw.stop();
      await echo.close();
    }
  });
});
