/**
 * Otto (TykJS) middleware files (`custom_middleware.driver: otto`, gateway/plugins/otto.ts) on a
 * real gateway with an echo upstream, as tables: a `pre` middleware written as the reference's
 * samples are sets and deletes headers the upstream sees, a `ReturnOverrides.ResponseCode` of 403
 * answers the client, one below 400 is the answer itself (with its ResponseHeaders), `request.URL`
 * and the params change what the upstream gets, a `post_key_auth` middleware reads the key's
 * session (with `require_session`, the meta_data it changes is saved to the key, as the reference
 * saves it), a changed request.Body is what the upstream gets, and what can't be done (a status
 * that is no HTTP status) fails the request with 500 and a log naming it. What a load would refuse is
 * refused when written, 400 naming the field: otto `auth_check` and `response` hooks, a file that
 * calls `TykMakeHttpRequest`, a missing file, a file that does not parse, a name that is no
 * middleware of the file, and any otto hook on a gateway with `enable_jsvm` off; a file changed
 * after the write is checked again at the reload, which leaves its API out. Each table runs
 * against the files store and the Redis store, with the fast path on and off.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { pluginDirWith } from '../../testing/plugin-dir.ts';
import { join } from 'node:path';
import { recordingLogger } from '../../../lib/testing/log.ts';
import { startEcho, type Echo, type Echoed } from '../../testing/echo.ts';
import { keyed, keyless, useGateway, type GatewayClient } from '../../testing/harness.ts';
import { assertAnswer, describeEachSetup, type Expected } from '../../testing/tables.ts';

/** The middleware files, as a user migrating from the reference has them. */
const FILES: Record<string, string> = {
  'middleware/tag.js': `var tagRequest = new TykJS.TykMiddleware.NewMiddleware({});

tagRequest.NewProcessRequest(function (request, session, spec) {
  log("tagging " + request.Method + " " + request.URL);
  request.SetHeaders["X-Otto-Tag"] = spec.config_data.tag + ":" + request.Method;
  request.SetHeaders["X-Otto-B64"] = b64enc("svc") + "/" + b64dec("c3Zj");
  request.DeleteHeaders.push("X-Remove-Me");
  return tagRequest.ReturnData(request, {});
});

log("tag middleware loaded");
`,
  'middleware/deny.js': `var denyRequest = new TykJS.TykMiddleware.NewMiddleware({});
denyRequest.NewProcessRequest(function (request, session) {
  if (request.Headers["X-Let-Me-In"] === undefined) {
    request.ReturnOverrides.ResponseCode = 403;
    request.ReturnOverrides.ResponseError = "Forbidden by otto";
  }
  return denyRequest.ReturnData(request, {});
});
`,
  'middleware/user.js': `var forwardUser = new TykJS.TykMiddleware.NewMiddleware({});
forwardUser.NewProcessRequest(function (request, session) {
  request.SetHeaders["X-Otto-User"] = session.meta_data.user;
  return forwardUser.ReturnData(request, session.meta_data);
});
`,
  'middleware/visits.js': `var countVisits = new TykJS.TykMiddleware.NewMiddleware({});
countVisits.NewProcessRequest(function (request, session) {
  var meta = session.meta_data;
  meta.visits = (meta.visits || 0) + 1;
  request.SetHeaders["X-Otto-Visits"] = String(meta.visits);
  request.SetHeaders["X-Otto-User"] = meta.user;
  return countVisits.ReturnData(request, meta);
});
`,
  'middleware/answer.js': `var answerHere = new TykJS.TykMiddleware.NewMiddleware({});
answerHere.NewProcessRequest(function (request, session) {
  if (request.Params["teapot"] !== undefined) {
    request.ReturnOverrides.ResponseCode = 418;
    request.ReturnOverrides.OverrideError = true;
    request.ReturnOverrides.ResponseBody = "short and stout";
  } else if (request.Params["moved"] !== undefined) {
    request.ReturnOverrides.ResponseCode = 302;
    request.ReturnOverrides.ResponseHeaders = { "Location": "/elsewhere" };
  } else if (request.Params["unauthorised"] !== undefined) {
    request.ReturnOverrides.ResponseCode = 401;
    request.ReturnOverrides.ResponseError = "Sign in first";
    request.ReturnOverrides.ResponseHeaders = { "WWW-Authenticate": "Otto realm=svc" };
  } else {
    request.ReturnOverrides.ResponseCode = 200;
    request.ReturnOverrides.ResponseBody = JSON.stringify({ answered: "by otto", method: request.Method });
    request.ReturnOverrides.ResponseHeaders = { "Content-Type": "application/json", "X-Otto": "answered" };
  }
  return answerHere.ReturnData(request, {});
});
`,
  'middleware/params.js': `var editParams = new TykJS.TykMiddleware.NewMiddleware({});
editParams.NewProcessRequest(function (request, session) {
  request.DeleteParams.push("drop");
  request.AddParams["set"] = "by-otto";
  request.ExtendedParams["multi"] = ["a", "b"];
  return editParams.ReturnData(request, {});
});
`,
  'middleware/url.js': `var rewrite = new TykJS.TykMiddleware.NewMiddleware({});
rewrite.NewProcessRequest(function (request, session) {
  request.URL = "/url/rewritten/" + request.Method.toLowerCase() + "?from=otto";
  request.AddParams["then"] = "params";
  return rewrite.ReturnData(request, {});
});
`,
  'middleware/body.js': `var setBody = new TykJS.TykMiddleware.NewMiddleware({});
setBody.NewProcessRequest(function (request, session) {
  request.Body = "New Request body, was: " + request.Body;
  return setBody.ReturnData(request, {});
});
`,
  'middleware/bad-code.js': `var badCode = new TykJS.TykMiddleware.NewMiddleware({});
badCode.NewProcessRequest(function (request, session) {
  request.ReturnOverrides.ResponseCode = 42;
  return badCode.ReturnData(request, {});
});
`,
  'middleware/http.js': `var callOut = new TykJS.TykMiddleware.NewMiddleware({});
callOut.NewProcessRequest(function (request, session) {
  var r = TykMakeHttpRequest(JSON.stringify({ Method: "GET", Domain: "http://example.com", Resource: "/" }));
  return callOut.ReturnData(request, {});
});
`,
  'middleware/broken.js': `var broken = new TykJS.TykMiddleware.NewMiddleware({});
broken.NewProcessRequest(function (request, session) {
  return broken.ReturnData(request, {};
});
`,
};

let echo: Echo;
let pluginDir: string;
before(async () => {
  echo = await startEcho('echo');
  pluginDir = await pluginDirWith('svc-otto-', FILES);
});
after(async () => {
  await echo.close();
});

const hook = (name: string, file: string): { name: string; path: string } => ({
  name,
  path: `middleware/${file}`,
});
const otto = (stage: string, name: string, file: string): Record<string, unknown> => ({
  custom_middleware: { driver: 'otto', [stage]: [hook(name, file)] },
});

async function provision(gw: GatewayClient): Promise<void> {
  const apis = [
    keyless('tag', '/tag/', echo.url, {
      config_data: { tag: 'migrated' },
      ...otto('pre', 'tagRequest', 'tag.js'),
    }),
    keyless('deny', '/deny/', echo.url, otto('pre', 'denyRequest', 'deny.js')),
    keyed('user', '/user/', echo.url, otto('post_key_auth', 'forwardUser', 'user.js')),
    keyed('user-rs', '/user-rs/', echo.url, {
      custom_middleware: {
        driver: 'otto',
        post_key_auth: [{ ...hook('forwardUser', 'user.js'), require_session: true }],
      },
    }),
    keyed('visits', '/visits/', echo.url, {
      custom_middleware: {
        driver: 'otto',
        post: [{ ...hook('countVisits', 'visits.js'), require_session: true }],
      },
    }),
    keyless('body', '/body/', echo.url, otto('post', 'setBody', 'body.js')),
    keyless('bad-code', '/bad-code/', echo.url, otto('pre', 'badCode', 'bad-code.js')),
    keyless('answer', '/answer/', echo.url, otto('pre', 'answerHere', 'answer.js')),
    keyed('answer-key', '/answer-key/', echo.url, otto('post', 'answerHere', 'answer.js')),
    keyless('params', '/params/', echo.url, otto('pre', 'editParams', 'params.js')),
    keyless('url', '/url/', echo.url, otto('pre', 'rewrite', 'url.js'), { strip_listen_path: true }),
  ];
  for (const a of apis) await gw.addApi(a);
  const key = await gw.admin('POST', '/svc/keys/tok', {
    meta_data: { user: 'alice' },
    access_rights: {
      user: { api_id: 'user', versions: [] },
      'user-rs': { api_id: 'user-rs', versions: [] },
      visits: { api_id: 'visits', versions: [] },
      'answer-key': { api_id: 'answer-key', versions: [] },
    },
  });
  assert.equal(key.status, 200, key.text);
  await gw.reload();
}

interface Case extends Expected {
  name: string;
  path: string;
  headers?: Record<string, string>;
  /** The exact body the client got. */
  text?: string;
  /** The query the echo upstream received. */
  upstreamQuery?: string;
  /** The path the echo upstream received. */
  upstreamPath?: string;
  method?: string;
  body?: string;
  /** The body the echo upstream received. */
  upstreamBody?: string;
}

const INTERNAL = /^Internal error \(ID [0-9a-f-]{36}\)$/;

const cases: Case[] = [
  {
    name: 'a pre middleware sets and deletes headers the upstream sees',
    path: '/tag/x?q=1',
    headers: { 'x-remove-me': 'secret', 'x-kept': 'yes' },
    status: 200,
    upstreamHeaders: {
      'x-otto-tag': 'migrated:GET',
      'x-otto-b64': 'c3Zj/svc',
      'x-remove-me': undefined,
      'x-kept': 'yes',
    },
  },
  {
    name: 'ReturnOverrides.ResponseCode 403 answers the client with ResponseError',
    path: '/deny/x',
    status: 403,
    error: 'Forbidden by otto',
  },
  {
    name: 'without the override the request goes on',
    path: '/deny/x',
    headers: { 'x-let-me-in': '1' },
    status: 200,
  },
  {
    name: "a post_key_auth middleware reads the key's session",
    path: '/user/x',
    headers: { authorization: 'tok' },
    status: 200,
    upstreamHeaders: { 'x-otto-user': 'alice' },
  },
  {
    name: "a require_session middleware returning the session's meta_data unchanged",
    path: '/user-rs/x',
    headers: { authorization: 'tok' },
    status: 200,
    upstreamHeaders: { 'x-otto-user': 'alice' },
  },
  {
    name: 'authentication still comes first',
    path: '/user/x',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'a changed request.Body is the body the upstream gets',
    path: '/body/x',
    method: 'POST',
    body: 'the client body',
    status: 200,
    upstreamBody: 'New Request body, was: the client body',
  },
  {
    name: 'a ResponseCode that is no HTTP status is a failure, not ignored',
    path: '/bad-code/x',
    status: 500,
    error: INTERNAL,
  },
  {
    name: 'ResponseCode 200 answers without the upstream, with ResponseBody and ResponseHeaders',
    path: '/answer/x',
    status: 200,
    text: '{"answered":"by otto","method":"GET"}',
    responseHeaders: { 'content-type': 'application/json', 'x-otto': 'answered' },
  },
  {
    name: 'ResponseCode 302 with a Location header redirects',
    path: '/answer/x?moved=1',
    status: 302,
    text: '',
    responseHeaders: { location: '/elsewhere' },
  },
  {
    name: 'ResponseCode 418 with OverrideError answers with the body as it is',
    path: '/answer/x?teapot=1',
    status: 418,
    text: 'short and stout',
  },
  {
    name: 'ResponseCode 401 refuses with ResponseError, and its ResponseHeaders',
    path: '/answer/x?unauthorised=1',
    status: 401,
    error: 'Sign in first',
    responseHeaders: { 'www-authenticate': 'Otto realm=svc' },
  },
  {
    name: 'a post middleware answers after authentication',
    path: '/answer-key/x',
    headers: { authorization: 'tok' },
    status: 200,
    text: '{"answered":"by otto","method":"GET"}',
  },
  {
    name: 'a post middleware does not answer before authentication',
    path: '/answer-key/x',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'DeleteParams, AddParams and ExtendedParams change the query the upstream gets',
    path: '/params/x?drop=1&keep=2&set=old',
    status: 200,
    upstreamQuery: 'keep=2&set=by-otto&multi=a&multi=b',
  },
  {
    name: 'request.URL changes the path and query the upstream gets (the listen path stripped), then the params',
    path: '/url/x?dropped=1',
    status: 200,
    upstreamPath: '/rewritten/get',
    upstreamQuery: 'from=otto&then=params',
  },
];

/** What `POST /svc/apis` answers for `def`. */
async function write(
  gw: GatewayClient,
  def: Record<string, unknown>,
): Promise<{ status: number; message: string }> {
  const res = await gw.admin('POST', '/svc/apis', def);
  return { status: res.status, message: String((res.json as { message?: unknown } | undefined)?.message) };
}

/** Writes refused with 400, each naming its field. */
const refusals: { name: string; def: Record<string, unknown>; message: RegExp }[] = [
  {
    name: 'an otto auth_check hook',
    def: keyed('r-auth', '/r-auth/', 'http://127.0.0.1:1', {
      custom_middleware: { driver: 'otto', auth_check: hook('tagRequest', 'tag.js') },
    }),
    message: /custom_middleware\.auth_check: .*otto \(TykJS\) auth_check hook is not run by this gateway/,
  },
  {
    name: 'an otto response hook',
    def: keyless(
      'r-response',
      '/r-response/',
      'http://127.0.0.1:1',
      otto('response', 'tagRequest', 'tag.js'),
    ),
    message: /custom_middleware\.response\[0\]: .*otto \(TykJS\) response hook is not run by this gateway/,
  },
  {
    name: 'a file that calls TykMakeHttpRequest',
    def: keyless('r-http', '/r-http/', 'http://127.0.0.1:1', otto('pre', 'callOut', 'http.js')),
    message:
      /custom_middleware\.pre\[0\]\.path: middleware\/http\.js uses TykMakeHttpRequest, which svc's otto driver does not provide/,
  },
  {
    name: 'a file that is not there',
    def: keyless('r-missing', '/r-missing/', 'http://127.0.0.1:1', otto('post', 'tagRequest', 'missing.js')),
    message: /custom_middleware\.post\[0\]\.path: middleware\/missing\.js can't be read in plugin_dir/,
  },
  {
    name: 'a file that does not parse',
    def: keyless('r-broken', '/r-broken/', 'http://127.0.0.1:1', otto('pre', 'broken', 'broken.js')),
    message: /custom_middleware\.pre\[0\]\.path: middleware\/broken\.js failed to load: /,
  },
  {
    name: 'a name that is no middleware of the file',
    def: keyless('r-name', '/r-name/', 'http://127.0.0.1:1', otto('pre', 'notThere', 'tag.js')),
    message: /custom_middleware\.pre\[0\]\.name: middleware\/tag\.js has no middleware notThere/,
  },
  {
    name: 'a file that is not .js',
    def: keyless('r-ts', '/r-ts/', 'http://127.0.0.1:1', {
      custom_middleware: { driver: 'otto', pre: [{ name: 'tagRequest', path: 'middleware/tag.ts' }] },
    }),
    message: /custom_middleware\.pre\[0\]\.path: .*an otto \(TykJS\) middleware is a \.js file/,
  },
];

describeEachSetup(
  'otto middleware',
  () => ({ argv: ['--plugin-dir', pluginDir, '--enable-jsvm'] }),
  ({ gw }) => {
    before(async () => {
      await provision(gw());
    });

    for (const c of cases) {
      test(c.name, async () => {
        const res = await gw().request({
          path: c.path,
          ...(c.method === undefined ? {} : { method: c.method }),
          ...(c.body === undefined ? {} : { body: c.body }),
          ...(c.headers === undefined ? {} : { headers: c.headers }),
        });
        assertAnswer(res, c);
        if (c.text !== undefined) assert.equal(res.text, c.text);
        if (c.upstreamQuery !== undefined) assert.equal((res.json as Echoed).query, c.upstreamQuery);
        if (c.upstreamPath !== undefined) assert.equal((res.json as Echoed).path, c.upstreamPath);
        if (c.upstreamBody !== undefined) assert.equal((res.json as Echoed).body, c.upstreamBody);
      });
    }

    test("a require_session middleware that changes the session's meta_data has it saved to the key", async () => {
      const visit = async (): Promise<number> => {
        const res = await gw().request({ path: '/visits/x', headers: { authorization: 'tok' } });
        assert.equal(res.status, 200, res.text);
        const got = (res.json as Echoed).headers;
        assert.equal(got['x-otto-user'], 'alice');
        return Number(got['x-otto-visits']);
      };
      const first = await visit();
      assert.ok(first >= 1, String(first));
      // The next request (its session loaded again from the store) sees the saved value.
      assert.equal(await visit(), first + 1);
      const key = await gw().admin('GET', '/svc/keys/tok');
      assert.equal(key.status, 200, key.text);
      assert.deepEqual((key.json as { meta_data?: unknown }).meta_data, { user: 'alice', visits: first + 1 });
    });

    for (const r of refusals) {
      test(`refused when written: ${r.name}`, async () => {
        const res = await write(gw(), r.def);
        assert.equal(res.status, 400, res.message);
        assert.match(res.message, /^Validation of API Definition failed\. Reason: /);
        assert.match(res.message, r.message);
        // Nothing was stored.
        assert.equal((await gw().admin('GET', `/svc/apis/${String(r.def.api_id)}`)).status, 404);
      });
    }

    test('admitted when written: a middleware that answers itself (ResponseCode below 400, ResponseHeaders)', async () => {
      const def = keyless('w-answer', '/w-answer/', echo.url, otto('pre', 'answerHere', 'answer.js'));
      const res = await write(gw(), def);
      assert.equal(res.status, 200, res.message);
      const stored = await gw().admin('GET', '/svc/apis/w-answer');
      assert.equal(stored.status, 200, stored.text);
      assert.deepEqual((stored.json as Record<string, unknown>).custom_middleware, def.custom_middleware);
    });

    test('a PUT is checked as a POST', async () => {
      const res = await gw().admin('PUT', '/svc/apis/tag', {
        ...keyless('tag', '/tag/', echo.url, otto('pre', 'callOut', 'http.js')),
      });
      assert.equal(res.status, 400, res.text);
      assert.match(
        res.text,
        /custom_middleware\.pre\[0\]\.path: middleware\/http\.js uses TykMakeHttpRequest/,
      );
    });
  },
);

describe('otto middleware on a gateway with enable_jsvm off', () => {
  const gw = useGateway(() => ({ argv: ['--plugin-dir', pluginDir] }));

  test('refused when written, naming each hook', async () => {
    const res = await write(
      gw(),
      keyless('off', '/off/', echo.url, {
        custom_middleware: {
          driver: 'otto',
          pre: [hook('tagRequest', 'tag.js')],
          post: [hook('setBody', 'body.js')],
        },
      }),
    );
    assert.equal(res.status, 400, res.message);
    assert.match(res.message, /custom_middleware\.pre\[0\]: .*enable_jsvm is off on this gateway/);
    assert.match(res.message, /custom_middleware\.post\[0\]: .*enable_jsvm is off on this gateway/);
    assert.equal((await gw().admin('GET', '/svc/apis/off')).status, 404);
  });
});

describe('otto middleware logs', () => {
  const log = recordingLogger();
  const gw = useGateway(
    () => ({ argv: ['--plugin-dir', pluginDir, '--enable-jsvm'], log }),
    async (g) => {
      await g.addApi(
        keyless('tag', '/tag/', echo.url, {
          config_data: { tag: 't' },
          ...otto('pre', 'tagRequest', 'tag.js'),
        }),
      );
      await g.addApi(keyless('bad-code', '/bad-code/', echo.url, otto('pre', 'badCode', 'bad-code.js')));
      await g.reload();
    },
  );

  test("log() messages are logged with the middleware's name", async () => {
    assert.equal((await gw().request({ path: '/tag/a' })).status, 200);
    const line = log.lines.find(
      (l) => l.message === 'plugin log' && l.fields.message === 'tagging GET /tag/a',
    );
    assert.ok(line, JSON.stringify(log.lines.filter((l) => l.message === 'plugin log')));
    assert.equal(line.fields.plugin, 'middleware/tag.js#tagRequest');
  });

  test('a file changed after the write is checked again at the reload, which leaves its API out', async () => {
    await writeFile(join(pluginDir, 'middleware/later.js'), FILES['middleware/tag.js'] ?? '');
    await gw().addApi(
      keyless('later', '/later/', echo.url, {
        config_data: { tag: 't' },
        ...otto('pre', 'tagRequest', 'later.js'),
      }),
    );
    await gw().reload();
    assert.equal((await gw().request({ path: '/later/a' })).status, 200);
    await writeFile(
      join(pluginDir, 'middleware/later.js'),
      (FILES['middleware/tag.js'] ?? '').replace('log(', 'TykGetKeyData("k", "a"); log('),
    );
    const reload = await gw().admin('GET', '/svc/reload');
    assert.equal(reload.status, 200, reload.text);
    assert.match(
      reload.text,
      /API later: custom_middleware\.pre\[0\]\.path: middleware\/later\.js uses TykGetKeyData/,
    );
    assert.equal((await gw().request({ path: '/later/a' })).status, 404);
    assert.equal((await gw().request({ path: '/tag/a' })).status, 200);
  });

  test('a failure is logged naming what can not be done', async () => {
    const res = await gw().request({ path: '/bad-code/a' });
    assert.equal(res.status, 500);
    const line = log.lines.find(
      (l) => l.message === 'plugin failed' && l.fields.plugin === 'middleware/bad-code.js#badCode',
    );
    assert.ok(line);
    assert.match(String(line.fields.error), /request\.ReturnOverrides\.ResponseCode 42 is no HTTP status/);
  });
});
