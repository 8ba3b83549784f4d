/**
 * Many APIs on one gateway (issue 33 item 4): routing over a table large enough to be matched
 * through its path index keeps longest-prefix and host precedence, and a reload that changes one
 * API among many keeps the others' compiled routes (an unchanged API keeps serving, during and
 * after the reload), serves the changed one's new version and 404s a removed one. Both entrances:
 * the fast path on and off.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../lib/testing/wait.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { chain } from '../routes/chain.ts';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const COUNT = 60;
const id = (i: number): string => `m${String(i).padStart(2, '0')}`;

for (const fastPath of [true, false]) {
  describe(`many APIs, fast path ${fastPath ? 'on' : 'off'}`, () => {
    /** The compiles of each API, by ID, and the compile generation each route answers with. */
    const compiles = new Map<string, number>();
    const counter: GatewayMiddleware = {
      name: 'compile-counter',
      enabled: () => true,
      create: (api) => {
        const id = api.api_id ?? '';
        const n = (compiles.get(id) ?? 0) + 1;
        compiles.set(id, n);
        return {
          handle: async (ctx, next) => {
            ctx.responseHeaders['x-compiled'] = String(n);
            await next();
            return undefined;
          },
        };
      },
    };
    let one: Echo;
    let two: Echo;
    let gw: InProcessGateway;
    before(async () => {
      one = await startEcho('one');
      two = await startEcho('two');
      gw = await startGateway({ chain: [counter, ...chain], argv: [`--fast-path=${String(fastPath)}`] });
      for (let i = 0; i < COUNT; i++) await gw.addApi(keyless(id(i), `/svc-${String(i)}/`, one.url));
      // Longest prefix: an API under another one's listen path.
      await gw.addApi(keyless('deep', '/svc-1/deep/', two.url));
      // Host precedence: an API with a domain on another one's listen path.
      await gw.addApi(keyless('hosted', '/svc-2/', two.url, { domain: 'api.example.com' }));
      await gw.reload();
    });
    after(async () => {
      await stopAll(gw, one, two);
    });

    const upstreamOf = async (path: string, host?: string): Promise<string | number> => {
      const res = await gw.request({ path, ...(host === undefined ? {} : { headers: { host } }) });
      return res.status === 200 ? (res.json as Echoed).upstream : res.status;
    };

    test('longest prefix and host precedence hold among many APIs', async () => {
      assert.equal(await upstreamOf('/svc-1/deep/x'), 'two');
      assert.equal(await upstreamOf('/SVC-1/Deep'), 'two');
      assert.equal(await upstreamOf('/svc-1/deeper'), 'one', 'whole segments only');
      assert.equal(await upstreamOf('/svc-1/x'), 'one');
      assert.equal(await upstreamOf('/svc-2/x', 'api.example.com'), 'two');
      assert.equal(await upstreamOf('/svc-2/x', 'other.example.com'), 'one');
      assert.equal(await upstreamOf(`/svc-${String(COUNT - 1)}/x`), 'one');
      assert.equal(await upstreamOf(`/svc-${String(COUNT)}/x`), 404);
    });

    test('a reload changing one API keeps the others compiled; the changed one serves its new version; a removed one 404s', async () => {
      const before = new Map(compiles);
      // A request on an unchanged API is running while the reload happens.
      const held = gw.request({ path: '/svc-5/hold' });
      await waitFor('the request to be held upstream', () => (one.held() === 1 ? true : undefined));
      const changed = await gw.admin('PUT', `/svc/apis/${id(10)}`, keyless(id(10), '/svc-10/', two.url));
      assert.equal(changed.status, 200, changed.text);
      const removed = await gw.admin('DELETE', `/svc/apis/${id(20)}`);
      assert.equal(removed.status, 200, removed.text);
      await gw.reload();
      assert.equal(await upstreamOf('/svc-5/x'), 'one', 'an unchanged API serves during the reload');
      one.release();
      const res = await held;
      assert.equal(res.status, 200);
      assert.equal((res.json as Echoed).upstream, 'one');

      assert.equal(await upstreamOf('/svc-10/x'), 'two', 'the changed API serves its new version');
      assert.equal(await upstreamOf('/svc-20/x'), 404, 'the removed API is gone');
      assert.equal(await upstreamOf('/svc-1/deep/x'), 'two');
      assert.equal(await upstreamOf('/svc-2/x', 'api.example.com'), 'two');
      // Only the changed API was compiled again; every other route is the one compiled before.
      const again = [...compiles].filter(([api, n]) => n !== before.get(api)).map(([api]) => api);
      assert.deepEqual(again, [id(10)]);
      const served = await gw.request({ path: '/svc-5/x' });
      assert.equal(served.headers['x-compiled'], String(before.get(id(5))));
      assert.equal((await gw.request({ path: '/svc-10/x' })).headers['x-compiled'], '2');
    });
  });
}
