/**
 * The identity extractor of a gRPC plugin server's auth_check (`custom_middleware.id_extractor`)
 * on a real gateway, against the plugin server built from Go modules (tools/grpcplugin), the API
 * written as the reference's sample writes it (bdd/custom_resources/httpbin.keyless.grpc-auth:
 * the identity is the `Authorization` header's value). The server's `MyAuthCheck` sets the
 * session's `id_extractor_deadline` (-extractor-ttl); the server's log counts its calls. While
 * the deadline is ahead, the same identity is served without the server being asked, with the
 * session's rate limit still counted; another identity, or a refused one, asks it; a request
 * without an identity is refused 400 before it is asked; once the deadline has passed it is
 * asked again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { useEcho } from '../../testing/echo.ts';
import {
  authCheckSample,
  pluginGatewayArgv,
  startGoPluginServer,
  type GoPluginServer,
} from '../../testing/grpcplugin.ts';
import { keyless, startGateway, type InProcessGateway } from '../../testing/harness.ts';
import { provision } from '../../testing/tables.ts';
import { stopAll } from '../../../lib/testing/teardown.ts';

const AUTH = 'CustomKeyCheck MyAuthCheck';
const PRE = 'Pre AddHeader';

/** The sample's identity extractor: the whole value of the Authorization header. */
const HEADER_VALUE = {
  extract_from: 'header',
  extract_with: 'value',
  extractor_config: { header_name: 'Authorization' },
};

/** An API as the reference's auth_check sample writes it, with this extractor (none: none). */
const sample = (id: string, target: string, idExtractor?: Record<string, unknown>): Record<string, unknown> =>
  authCheckSample(id, target, idExtractor === undefined ? {} : { id_extractor: idExtractor });

const echo = useEcho();

/**
 * A gateway with the plugin server, and `settled`: every call made so far is in the server's log
 * (a call of the sentinel API's pre hook is, and the log is written in order).
 */
async function setUp(
  flags: string[],
  apis: Record<string, unknown>[],
  fastPath = false,
): Promise<{ gw: InProcessGateway; plugin: GoPluginServer; settled: () => Promise<void> }> {
  const plugin = await startGoPluginServer(flags);
  const gw = await startGateway({ argv: pluginGatewayArgv(plugin, fastPath) });
  await provision(gw, [
    ...apis,
    keyless('idx-sentinel', '/idx-sentinel/', echo().url, {
      custom_middleware: { driver: 'grpc', pre: [{ name: 'AddHeader', path: '' }] },
    }),
  ]);
  const settled = async (): Promise<void> => {
    const before = plugin.calls(PRE);
    const res = await gw.request({ path: '/idx-sentinel/x' });
    assert.equal(res.status, 200, res.text);
    while (plugin.calls(PRE) <= before) await sleep(10);
  };
  return { gw, plugin, settled };
}

for (const fastPath of [true, false]) {
  describe(`id_extractor with a plugin server built with grpc-go (fast path ${fastPath ? 'on' : 'off'})`, () => {
    let gw: InProcessGateway;
    let plugin: GoPluginServer;
    let settled: () => Promise<void>;
    before(async () => {
      ({ gw, plugin, settled } = await setUp(
        ['-tokens', 'id-one,id-two,id-rate', '-rate', '3', '-per', '60', '-extractor-ttl', '3600'],
        [
          sample('idx-header', echo().url, HEADER_VALUE),
          sample('idx-none', echo().url),
          // The identity a match in the body; the server still reads the token in Authorization.
          sample('idx-body', echo().url, {
            extract_from: 'body',
            extract_with: 'regex',
            extractor_config: { regex_expression: 'user-[0-9]+', regex_match_index: 1 },
          }),
        ],
        fastPath,
      ));
    });
    after(async () => {
      await stopAll(gw, plugin);
    });

    /** The server's auth_check calls during `run`. */
    const asked = async (run: () => Promise<void>): Promise<number> => {
      await settled();
      const before = plugin.calls(AUTH);
      await run();
      await settled();
      return plugin.calls(AUTH) - before;
    };
    const get = (path: string, authorization?: string, body?: string) =>
      gw.request({
        method: body === undefined ? 'GET' : 'POST',
        path,
        ...(body === undefined ? {} : { body }),
        headers: authorization === undefined ? {} : { authorization },
      });

    test('the same identity: asked once, then served from the session kept until its deadline', async () => {
      const n = await asked(async () => {
        for (let i = 0; i < 3; i++) {
          const res = await get('/idx-header/x', 'id-one');
          assert.equal(res.status, 200, res.text);
        }
      });
      assert.equal(n, 1);
      // Another identity is another session: asked for it.
      assert.equal(
        await asked(async () => {
          assert.equal((await get('/idx-header/x', 'id-two')).status, 200);
          assert.equal((await get('/idx-header/x', 'id-two')).status, 200);
        }),
        1,
      );
    });

    test('without an extractor the server is asked on every request', async () => {
      const n = await asked(async () => {
        for (let i = 0; i < 3; i++) assert.equal((await get('/idx-none/x', 'id-one')).status, 200);
      });
      assert.equal(n, 3);
    });

    test('a refused identity is not kept: asked each time, 403 each time', async () => {
      const n = await asked(async () => {
        for (let i = 0; i < 2; i++) {
          const res = await get('/idx-header/x', 'wrong');
          assert.equal(res.status, 403, res.text);
          assert.equal((res.json as { error?: unknown }).error, 'Key not authorised');
        }
      });
      assert.equal(n, 2);
    });

    test('no identity in the request: 400 Authorization field missing, the server not asked', async () => {
      const n = await asked(async () => {
        const res = await get('/idx-header/x');
        assert.equal(res.status, 400, res.text);
        assert.equal((res.json as { error?: unknown }).error, 'Authorization field missing');
      });
      assert.equal(n, 0);
    });

    test("the kept session's rate limit is still counted (3 per 60 s)", async () => {
      const statuses: number[] = [];
      const n = await asked(async () => {
        for (let i = 0; i < 4; i++) statuses.push((await get('/idx-header/x', 'id-rate')).status);
      });
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      assert.equal(n, 1);
    });

    test('the identity from the body by a regular expression (its second match)', async () => {
      const n = await asked(async () => {
        assert.equal((await get('/idx-body/x', 'id-one', 'from user-1 for user-7')).status, 200);
        // The same identity (user-7): its kept session, whatever the token says.
        assert.equal((await get('/idx-body/x', 'wrong', 'by user-2 for user-7')).status, 200);
      });
      assert.equal(n, 1);
      // Another identity (user-8) with a token the server refuses.
      assert.equal((await get('/idx-body/x', 'wrong', 'by user-2 for user-8')).status, 403);
      // One match only: no second match, no identity.
      const res = await get('/idx-body/x', 'id-one', 'from user-1');
      assert.equal(res.status, 400, res.text);
    });
  });
}

describe('id_extractor: once the deadline the server set has passed, it is asked again', () => {
  let gw: InProcessGateway;
  let plugin: GoPluginServer;
  let settled: () => Promise<void>;
  before(async () => {
    ({ gw, plugin, settled } = await setUp(
      ['-tokens', 'id-one', '-extractor-ttl', '1'],
      [sample('idx-short', echo().url, HEADER_VALUE)],
    ));
  });
  after(async () => {
    await stopAll(gw, plugin);
  });

  test('kept for its second, then asked again', async () => {
    await settled();
    const before = plugin.calls(AUTH);
    const first = Date.now();
    assert.equal(
      (await gw.request({ path: '/idx-short/x', headers: { authorization: 'id-one' } })).status,
      200,
    );
    // The deadline is a whole Unix second at most 1 s after the call: past it after 2 s.
    await sleep(Math.max(0, first + 2100 - Date.now()));
    assert.equal(
      (await gw.request({ path: '/idx-short/x', headers: { authorization: 'id-one' } })).status,
      200,
    );
    await settled();
    assert.equal(plugin.calls(AUTH) - before, 2);
  });
});
