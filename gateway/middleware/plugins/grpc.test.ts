/**
 * gRPC plugins (`custom_middleware.driver: grpc`) against a plugin server written here with
 * @grpc/grpc-js from the protocol's .proto files, as a plugin server for the reference gateway is
 * written: a `pre` hook whose header and query changes the upstream sees, one that rewrites the
 * URL and the method, hooks that read and replace the request body (`raw_body`, or `body` alone),
 * `response` hooks that change the upstream's status, headers and body, an `auth_check` that
 * accepts with a session whose rate limit is enforced or refuses through `return_overrides`, a
 * `post` hook that sees the session, `return_overrides` that answer instead of the upstream, a
 * plugin server that fails a call, and one that is down: each failure is a 500 with an error ID.
 * Each table runs against the files store and the Redis store, with the fast path on and off;
 * the gRPC routes are served by node:http either way (the plugin server is sent the body).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server as HttpServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { freePort, waitFor } from '../../../lib/testing/wait.ts';
import { startEcho, type Echo, type Echoed } from '../../testing/echo.ts';
import { keyed, keyless, startGateway, useGateway } from '../../testing/harness.ts';
import { describeEachSetup, fastPathOn, provision, testRows, type Row } from '../../testing/tables.ts';
import { coprocessPackage, type CoprocessObject } from '../../plugins/coprocess/dispatcher.ts';
import { listenLocal } from '../../testing/servers.ts';

type Handler = (o: CoprocessObject) => CoprocessObject | Error;

const overrides = (
  code: number,
  error: string,
  headers: Record<string, string> = {},
  body = '',
): NonNullable<CoprocessObject['request']>['return_overrides'] => ({
  response_code: code,
  response_error: error,
  headers,
  override_error: false,
  response_body: body,
});

/** The hooks of the plugin server, by name. */
const HOOKS: Record<string, Handler> = {
  AddHeader: (o) => {
    if (o.request === null) return new Error('no request');
    o.request.set_headers = { 'x-from-pre': 'HelloFromPre', 'x-hook-type': o.hook_type };
    o.request.delete_headers = ['x-drop'];
    o.request.add_params = { added: '1' };
    o.request.delete_params = ['secret'];
    return o;
  },
  Refuse: (o) => {
    if (o.request === null) return new Error('no request');
    o.request.return_overrides = overrides(403, 'Denied by plugin', { 'x-why': 'policy' });
    return o;
  },
  ShortCircuit: (o) => {
    if (o.request === null) return new Error('no request');
    o.request.return_overrides = overrides(
      200,
      '',
      { 'content-type': 'text/plain', 'x-answered-by': 'plugin' },
      `answered for ${o.spec.api_id ?? ''}`,
    );
    return o;
  },
  Fail: () => new Error('the plugin broke'),
  Auth: (o) => {
    if (o.request === null) return new Error('no request');
    // By its name as the reference's Go net/http gives it.
    const token = o.request.headers.Authorization ?? '';
    if (token.startsWith('good-')) {
      o.session = {
        rate: 2,
        per: 60,
        expires: 0,
        quota_max: 0,
        quota_renews: 0,
        quota_remaining: 0,
        quota_renewal_rate: 0,
        access_rights: {
          'g-auth': { api_id: 'g-auth', api_name: 'g-auth', versions: ['Default'], allowed_urls: [] },
        },
        org_id: '',
        is_inactive: false,
        apply_policy_id: '',
        metadata: { tier: 'gold' },
        tags: [],
        alias: 'grpc-user',
        apply_policies: [],
        id_extractor_deadline: 0,
      };
      o.metadata = { token };
      return o;
    }
    if (token === 'no-session') return o;
    o.request.return_overrides = overrides(401, 'Not authorised by plugin');
    return o;
  },
  Rewrite: (o) => {
    if (o.request === null) return new Error('no request');
    o.request.url = `/g-rw/rewritten?was=${encodeURIComponent(o.request.url)}&method=${o.request.method}`;
    o.request.method = 'put';
    o.request.add_params = { added: '1' };
    return o;
  },
  BadUrl: (o) => {
    if (o.request === null) return new Error('no request');
    o.request.url = 'http://elsewhere/x';
    return o;
  },
  Body: (o) => {
    if (o.request === null) return new Error('no request');
    // Both forms came: the text and the bytes.
    const text = `${o.request.raw_body.toString().toUpperCase()}|text:${o.request.body}`;
    o.request.raw_body = Buffer.from(text);
    return o;
  },
  BodyText: (o) => {
    if (o.request === null) return new Error('no request');
    o.request.body = `replaced:${o.request.body}`;
    return o;
  },
  RawOnly: (o) => {
    if (o.request === null) return new Error('no request');
    o.request.set_headers = {
      'x-body-text': `[${o.request.body}]`,
      'x-raw-len': String(o.request.raw_body.length),
    };
    return o;
  },
  Respond: (o) => {
    const r = o.response;
    if (r === null) return new Error('no response');
    const echoed = JSON.parse(r.raw_body.toString()) as { path: string; method: string };
    r.status_code = 201;
    r.headers = {
      ...r.headers,
      'X-Response-Hook': `${o.hook_type}:${o.request?.method ?? ''}:${o.spec.APIID ?? ''}`,
    };
    r.raw_body = Buffer.from(
      `hooked ${echoed.method} ${echoed.path} (upstream said ${r.headers['X-Upstream'] ?? ''})`,
    );
    return o;
  },
  RespondText: (o) => {
    const r = o.response;
    if (r === null) return new Error('no response');
    r.body = `text:${String(r.status_code)}`;
    r.multivalue_headers = [...r.multivalue_headers, { key: 'X-Multi', values: ['a', 'b'] }];
    return o;
  },
  RespondSeen: (o) => {
    const r = o.response;
    if (r === null) return new Error('no response');
    r.headers = { ...r.headers, 'X-Seen': r.body };
    return o;
  },
  RespondUpper: (o) => {
    const r = o.response;
    if (r === null) return new Error('no response');
    r.raw_body = Buffer.from(r.raw_body.toString().toUpperCase());
    return o;
  },
  RespondNothing: (o) => {
    o.response = null;
    return o;
  },
  Post: (o) => {
    if (o.request === null) return new Error('no request');
    o.request.set_headers = {
      'x-from-post': `${o.hook_type}:${o.session?.alias ?? 'none'}:${o.session?.metadata.tier ?? ''}`,
    };
    return o;
  },
};

/** An event's payload as the reference's `cp_dynamic_handler` sends it. */
interface DispatchedEvent {
  message: {
    Type: string;
    Meta: { Message: string; Path: string; Origin: string; Key: string };
    TimeStamp: string;
  };
  handler_name: string;
  spec: { APIID: string; OrgID: string };
}
/** The events the plugin server was sent (`DispatchEvent`). */
const events: DispatchedEvent[] = [];

/** The body of the gzip upstream, before compression. */
const GZ_BODY = '{"hello":"gz"}';
/** An upstream whose answers are gzip-compressed. */
let gz: HttpServer;
let gzUrl: string;

let server: grpc.Server;
let serverPort: number;
let echo: Echo;
before(async () => {
  echo = await startEcho('echo');
  const zipped = gzipSync(GZ_BODY);
  gz = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(zipped);
  });
  gzUrl = await listenLocal(gz);
  server = new grpc.Server();
  const Dispatcher = (await coprocessPackage()).Dispatcher as grpc.ServiceClientConstructor;
  server.addService(Dispatcher.service, {
    Dispatch: (
      call: grpc.ServerUnaryCall<CoprocessObject, CoprocessObject>,
      cb: grpc.sendUnaryData<CoprocessObject>,
    ) => {
      const hook = HOOKS[call.request.hook_name];
      const out = hook === undefined ? new Error(`no hook ${call.request.hook_name}`) : hook(call.request);
      if (out instanceof Error) cb({ code: grpc.status.INTERNAL, details: out.message }, null);
      else cb(null, out);
    },
    DispatchEvent: (
      call: grpc.ServerUnaryCall<{ payload: string }, object>,
      cb: grpc.sendUnaryData<object>,
    ) => {
      events.push(JSON.parse(call.request.payload) as DispatchedEvent);
      cb(null, {});
    },
  });
  serverPort = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
      if (err === null) resolve(port);
      else reject(err);
    });
  });
});
after(async () => {
  await new Promise<void>((resolve) => {
    server.tryShutdown(() => {
      resolve();
    });
  });
  await echo.close();
  await new Promise((resolve) => gz.close(resolve));
});

const grpcHooks = (hooks: Record<string, unknown>): Record<string, unknown> => ({
  custom_middleware: { driver: 'grpc', ...hooks },
});
const named = (name: string): { name: string; path: string } => ({ name, path: '' });

const apis = (): Record<string, unknown>[] => [
  keyless('g-rw', '/g-rw/', echo.url, grpcHooks({ pre: [named('Rewrite')] }), { strip_listen_path: true }),
  keyless('g-badurl', '/g-badurl/', echo.url, grpcHooks({ pre: [named('BadUrl')] })),
  keyless('g-body', '/g-body/', echo.url, grpcHooks({ pre: [named('BodyText')], post: [named('Body')] })),
  keyless('g-raw', '/g-raw/', echo.url, grpcHooks({ pre: [{ ...named('RawOnly'), raw_body_only: true }] })),
  keyless(
    'g-resp',
    '/g-resp/',
    echo.url,
    grpcHooks({ pre: [named('Rewrite')], response: [named('Respond')] }),
    { strip_listen_path: true },
  ),
  keyless('g-resp2', '/g-resp2/', echo.url, grpcHooks({ response: [named('RespondText')] })),
  keyless('g-resp-none', '/g-resp-none/', echo.url, grpcHooks({ response: [named('RespondNothing')] })),
  keyless('g-gz-keep', '/g-gz-keep/', gzUrl, grpcHooks({ response: [named('RespondSeen')] })),
  keyless('g-gz-change', '/g-gz-change/', gzUrl, grpcHooks({ response: [named('RespondUpper')] })),
  keyless('g-pre', '/g-pre/', echo.url, grpcHooks({ pre: [named('AddHeader')] })),
  keyless('g-refuse', '/g-refuse/', echo.url, grpcHooks({ pre: [named('Refuse')] })),
  keyless('g-short', '/g-short/', echo.url, grpcHooks({ pre: [named('ShortCircuit')] })),
  keyless('g-fail', '/g-fail/', echo.url, grpcHooks({ pre: [named('Fail')] })),
  // As the reference's auth sample writes it: not keyless, coprocess auth on, the hook by name.
  // Its auth failures go to the plugin server's event handler.
  keyed('g-ev', '/g-ev/', echo.url, {
    enable_coprocess_auth: true,
    ...grpcHooks({ auth_check: named('Auth') }),
    event_handlers: {
      events: {
        AuthFailure: [{ handler_name: 'cp_dynamic_handler', handler_meta: { name: 'OnAuthFailure' } }],
      },
    },
  }),
  keyed('g-auth', '/g-auth/', echo.url, {
    enable_coprocess_auth: true,
    ...grpcHooks({ auth_check: named('Auth'), post: [named('Post')] }),
  }),
];

const INTERNAL = /^Internal error \(ID [0-9a-f-]{36}\)$/;

const rows = (index: number): Row[] => [
  {
    name: 'a pre hook sets and removes headers and query parameters the upstream sees',
    path: '/g-pre/x?keep=1&secret=s',
    headers: { 'x-drop': 'gone' },
    nodeHttp: true,
    status: 200,
    upstreamHeaders: { 'x-from-pre': 'HelloFromPre', 'x-hook-type': 'Pre', 'x-drop': undefined },
  },
  {
    name: 'return_overrides with an error code refuse with its message and headers',
    path: '/g-refuse/x',
    nodeHttp: true,
    status: 403,
    error: 'Denied by plugin',
    responseHeaders: { 'x-why': 'policy' },
  },
  {
    name: 'return_overrides with a success code answer instead of the upstream',
    path: '/g-short/x',
    nodeHttp: true,
    status: 200,
    text: 'answered for g-short',
    responseHeaders: { 'x-answered-by': 'plugin' },
  },
  {
    name: 'a call the plugin server fails is a 500',
    path: '/g-fail/x',
    nodeHttp: true,
    status: 500,
    error: INTERNAL,
  },
  {
    name: 'auth_check accepts; the post hook sees the session',
    path: '/g-auth/x',
    headers: { authorization: `good-${String(index)}-a` },
    nodeHttp: true,
    status: 200,
    upstreamHeaders: { 'x-from-post': 'Post:grpc-user:gold' },
  },
  {
    name: 'auth_check refuses through return_overrides',
    path: '/g-auth/x',
    headers: { authorization: 'bad' },
    nodeHttp: true,
    status: 401,
    error: 'Not authorised by plugin',
  },
  {
    name: 'auth_check without a session is refused',
    path: '/g-auth/x',
    headers: { authorization: 'no-session' },
    nodeHttp: true,
    status: 403,
    error: 'Key not authorised',
  },
  {
    name: 'a pre hook rewrites the URL (path and query) and the method the upstream sees',
    path: '/g-rw/x?orig=1',
    nodeHttp: true,
    status: 200,
    upstreamMethod: 'PUT',
  },
  {
    name: 'a hook that answers a URL that is no path is a 500',
    path: '/g-badurl/x',
    nodeHttp: true,
    status: 500,
    error: INTERNAL,
  },
  {
    name: 'response hooks change the status, headers and body the client gets',
    path: '/g-resp/x',
    nodeHttp: true,
    status: 201,
    // Not under this API's listen path: sent as it is.
    text: 'hooked PUT /g-rw/rewritten (upstream said echo)',
    responseHeaders: { 'x-response-hook': 'Response:PUT:g-resp', 'x-upstream': 'echo' },
  },
  {
    name: 'a response hook that changes body only (text) and adds a header of several values',
    path: '/g-resp2/status/202',
    nodeHttp: true,
    status: 202,
    text: 'text:202',
    responseHeaders: { 'x-multi': 'a, b', 'content-length': '8' },
  },
  {
    name: 'a response hook is sent a compressed body decoded; left unchanged, it goes out compressed',
    path: '/g-gz-keep/x',
    nodeHttp: true,
    status: 200,
    responseHeaders: {
      'x-seen': GZ_BODY,
      'content-encoding': 'gzip',
      'content-length': String(gzipSync(GZ_BODY).length),
    },
  },
  {
    name: 'a compressed body a response hook changes goes out as the hook wrote it',
    path: '/g-gz-change/x',
    nodeHttp: true,
    status: 200,
    text: GZ_BODY.toUpperCase(),
    responseHeaders: { 'content-encoding': undefined, 'content-length': String(GZ_BODY.length) },
  },
  {
    name: 'a response hook that answers without a response is a 500',
    path: '/g-resp-none/x',
    nodeHttp: true,
    status: 500,
    error: INTERNAL,
  },
];

describeEachSetup(
  'grpc plugins',
  () => ({ argv: ['--coprocess-grpc-server', `tcp://127.0.0.1:${String(serverPort)}`] }),
  ({ gw, index }) => {
    before(async () => {
      await provision(gw(), apis());
    });
    testRows(gw, rows(index), fastPathOn(index));

    test('the query the upstream got', async () => {
      const res = await gw().request({ path: '/g-pre/x?keep=1&secret=s' });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.fromEntries(new URLSearchParams((res.json as { query: string }).query)), {
        keep: '1',
        added: '1',
      });
    });

    test('the rewritten URL: the path, the query the hook wrote with its added parameter', async () => {
      const res = await gw().request({ path: '/g-rw/x?orig=1' });
      assert.equal(res.status, 200, res.text);
      const echoed = res.json as Echoed;
      assert.equal(echoed.path, '/rewritten');
      assert.deepEqual(Object.fromEntries(new URLSearchParams(echoed.query)), {
        was: '/g-rw/x?orig=1',
        method: 'GET',
        added: '1',
      });
    });

    test('hooks get the request body and what they change of it goes upstream', async () => {
      const res = await gw().request({ method: 'POST', path: '/g-body/x', body: 'hello' });
      assert.equal(res.status, 200, res.text);
      // pre changed the text (`body`) only; post got that as bytes and text, and changed the bytes.
      assert.equal((res.json as Echoed).body, 'REPLACED:HELLO|text:replaced:hello');
      assert.equal((res.json as Echoed).headers['content-length'], '34');
    });

    test('raw_body_only: the hook gets the bytes, not the text', async () => {
      const res = await gw().request({ method: 'POST', path: '/g-raw/x', body: 'abc' });
      assert.equal(res.status, 200, res.text);
      assert.equal((res.json as Echoed).headers['x-body-text'], '[]');
      assert.equal((res.json as Echoed).headers['x-raw-len'], '3');
      assert.equal((res.json as Echoed).body, 'abc', 'the body unchanged');
    });

    test('cp_dynamic_handler: an event goes to the plugin server, as the reference sends it', async () => {
      const path = `/g-ev/${String(index)}`;
      const res = await gw().request({ path, headers: { authorization: 'bad' } });
      assert.equal(res.status, 401, res.text);
      const got = await waitFor('the AuthFailure event at the plugin server', () =>
        events.find((e) => e.message.Meta.Path === path),
      );
      assert.equal(got.handler_name, 'OnAuthFailure');
      assert.equal(got.message.Type, 'AuthFailure');
      assert.deepEqual(got.spec, { APIID: 'g-ev', OrgID: '' });
      assert.equal(got.message.Meta.Origin, '127.0.0.1');
      assert.ok(!Number.isNaN(Date.parse(got.message.TimeStamp)), got.message.TimeStamp);
    });

    test('the session auth_check returned has its rate limit enforced', async () => {
      const token = `good-${String(index)}-rate`;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push((await gw().request({ path: '/g-auth/r', headers: { authorization: token } })).status);
      }
      assert.deepEqual(statuses, [200, 200, 429]);
    });
  },
);

describe('grpc plugins: enable_coprocess_auth without the gRPC auth_check', () => {
  const gw = useGateway(() => ({
    argv: ['--coprocess-grpc-server', `tcp://127.0.0.1:${String(serverPort)}`],
  }));

  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      'a JavaScript auth_check',
      { driver: 'svc', auth_check: { name: 'check', path: 'check.ts' } },
      /enable_coprocess_auth.*served by a gRPC plugin server only/,
    ],
    ['no plugins', {}, /enable_coprocess_auth.*served by a gRPC plugin server only/],
    [
      'driver grpc without an auth_check',
      { driver: 'grpc', pre: [named('AddHeader')] },
      /enable_coprocess_auth.*set custom_middleware\.auth_check\.name/,
    ],
  ];
  test('cp_dynamic_handler without the name of its handler: refused at write with a 400 naming the field', async () => {
    const res = await gw().admin(
      'POST',
      '/svc/apis',
      keyless('c-ev', '/c-ev/', echo.url, {
        event_handlers: {
          events: { AuthFailure: [{ handler_name: 'cp_dynamic_handler', handler_meta: {} }] },
        },
      }),
    );
    assert.equal(res.status, 400, res.text);
    assert.match(res.text, /event_handlers\.events\.AuthFailure\[0\]\.handler_meta\.name/);
    assert.equal((await gw().admin('GET', '/svc/apis/c-ev')).status, 404, 'nothing was stored');
  });

  for (const [name, custom_middleware, message] of cases) {
    test(`${name}: refused at write with a 400 naming the field`, async () => {
      const res = await gw().admin(
        'POST',
        '/svc/apis',
        keyed('c-auth', '/c-auth/', echo.url, { enable_coprocess_auth: true, custom_middleware }),
      );
      assert.equal(res.status, 400, res.text);
      assert.match(res.text, message);
      assert.equal((await gw().admin('GET', '/svc/apis/c-auth')).status, 404, 'nothing was stored');
    });
  }
});

describe('grpc plugins: the plugin server is down', () => {
  for (const fastPath of [true, false]) {
    test(`fails closed with a 500 (fast path ${fastPath ? 'on' : 'off'})`, async () => {
      const dead = await freePort();
      const gw = await startGateway({
        argv: [
          `--fast-path=${String(fastPath)}`,
          '--coprocess-grpc-server',
          `tcp://127.0.0.1:${String(dead)}`,
          '--plugin-timeout-ms',
          '2000',
        ],
      });
      try {
        await provision(gw, [
          keyless('d-pre', '/d-pre/', echo.url, grpcHooks({ pre: [named('AddHeader')] })),
          keyed('d-auth', '/d-auth/', echo.url, grpcHooks({ auth_check: named('Auth') })),
          keyless('d-plain', '/d-plain/', echo.url),
        ]);
        for (const path of ['/d-pre/x', '/d-auth/x']) {
          const res = await gw.request({ path, headers: { authorization: 'good-x' } });
          assert.equal(res.status, 500, res.text);
          assert.match(String((res.json as { error?: unknown }).error), INTERNAL);
        }
        assert.equal((await gw.request({ path: '/d-plain/x' })).status, 200, 'the gateway goes on serving');
      } finally {
        await gw.stop();
      }
    });
  }
});
