/**
 * gRPC plugins against a plugin server built from Go modules (tools/grpcplugin: grpc-go, the
 * protocol's .proto files compiled at its start), as a plugin server for the reference gateway is
 * written: its `pre` hook sets a header the upstream sees, its `auth_check` accepts its tokens
 * with a session whose rate limit the gateway enforces and gives other tokens no session; another
 * `pre` hook rewrites the URL and the method, a `post` hook the body, and a `response` hook the
 * status, headers and body the client gets. The API is written as the reference's auth_check
 * samples write it (`enable_coprocess_auth: true`, `driver: grpc`). `make deps` builds the server
 * (tools/build.sh); without it the suite fails.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEcho, type Echo, type Echoed } from '../../testing/echo.ts';
import { keyless, useGateway } from '../../testing/harness.ts';
import { provision } from '../../testing/tables.ts';
import {
  authCheckSample,
  pluginGatewayArgv,
  startGoPluginServer,
  type GoPluginServer,
} from '../../testing/grpcplugin.ts';
import { stopAll } from '../../../lib/testing/teardown.ts';

const TOKEN = 'go-plugin-token';
/** Another token it accepts, for the rate limit (a session's limit counts per token). */
const RATE_TOKEN = 'go-plugin-rate';
let plugin: GoPluginServer;
let echo: Echo;
before(async () => {
  echo = await startEcho('echo');
  plugin = await startGoPluginServer(['-tokens', `${TOKEN},${RATE_TOKEN}`, '-rate', '2', '-per', '60']);
});
after(async () => {
  await stopAll(plugin, echo);
});

/** The API as the reference's auth_check samples write it. */
const sample = (id: string): Record<string, unknown> =>
  authCheckSample(id, echo.url, { pre: [{ name: 'AddHeader', path: '' }] });

for (const fastPath of [true, false]) {
  describe(`a plugin server built with grpc-go (fast path ${fastPath ? 'on' : 'off'})`, () => {
    const gw = useGateway(
      () => ({ argv: pluginGatewayArgv(plugin, fastPath) }),
      async (g) => {
        await provision(g, [
          sample('go-auth'),
          sample('go-rate'),
          keyless(
            'go-rw',
            '/go-rw/',
            echo.url,
            {
              custom_middleware: {
                driver: 'grpc',
                pre: [{ name: 'Rewrite', path: '' }],
                post: [{ name: 'UpperBody', path: '' }],
                response: [{ name: 'GoResponse', path: '' }],
              },
            },
            { strip_listen_path: true },
          ),
        ]);
      },
    );

    test("its pre hook's header reaches the upstream; its auth_check accepts the token", async () => {
      const res = await gw().request({ path: '/go-auth/x', headers: { authorization: TOKEN } });
      assert.equal(res.status, 200, res.text);
      assert.equal((res.json as Echoed).headers['x-go-plugin'], 'Pre');
    });

    test('another token gets no session from it: 403', async () => {
      const res = await gw().request({ path: '/go-auth/x', headers: { authorization: 'wrong' } });
      assert.equal(res.status, 403, res.text);
      assert.equal((res.json as { error?: unknown }).error, 'Key not authorised');
    });

    test('no token: 403, the upstream is not reached', async () => {
      const res = await gw().request({ path: '/go-auth/x' });
      assert.equal(res.status, 403, res.text);
      assert.notEqual(res.headers['x-upstream'], 'echo');
    });

    test('its hooks rewrite the URL, the method and the body; its response hook the answer', async () => {
      const res = await gw().request({
        method: 'PUT',
        path: '/go-rw/rewrite-me?q=1',
        body: 'hello',
        fresh: true,
      });
      assert.equal(res.status, 203, res.text);
      assert.equal(res.headers['x-go-response'], 'Response');
      const m = /^go saw 200 (\{.*\})$/s.exec(res.text);
      assert.ok(m?.[1] !== undefined, res.text);
      const echoed = JSON.parse(m[1]) as Echoed;
      assert.equal(echoed.method, 'POST');
      assert.equal(echoed.path, '/go-rewritten');
      assert.equal(echoed.query, 'q=1');
      assert.equal(echoed.body, 'HELLO');
    });

    test('the rate limit of the session it returned is enforced (2 per 60 s)', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push(
          (await gw().request({ path: '/go-rate/x', headers: { authorization: RATE_TOKEN } })).status,
        );
      }
      assert.deepEqual(statuses, [200, 200, 429]);
    });
  });
}
