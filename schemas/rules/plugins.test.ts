import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ClassicApiInput } from './read.ts';
import type { FieldProblem } from './field-problem.ts';
import {
  customAuthHook,
  ottoSourceProblem,
  pluginHooksOf,
  pluginPathProblem,
  pluginProblems,
} from './plugins.ts';

const api = (custom_middleware: unknown): ClassicApiInput => ({
  name: 'a',
  proxy: { listen_path: '/a/', target_url: 'http://u' },
  custom_middleware,
});

const cases: { name: string; api: ClassicApiInput; want: Pick<FieldProblem, 'path' | 'type'>[] }[] = [
  { name: 'none', api: api(undefined), want: [] },
  {
    name: 'the empty shape of exported definitions asks for nothing',
    api: api({
      driver: '',
      pre: [],
      post: [],
      post_key_auth: [],
      response: [],
      auth_check: { name: '', path: '', require_session: false, raw_body_only: false },
    }),
    want: [],
  },
  {
    name: 'hooks of every point',
    api: api({
      driver: 'svc',
      pre: [{ name: 'a', path: 'a.ts' }],
      auth_check: { name: 'check', path: 'auth/check.mjs' },
      post_key_auth: [{ name: 'b', path: 'b.js' }],
      post: [{ name: 'c', path: 'c.mts' }],
      response: [{ name: 'd', path: 'd.ts' }],
    }),
    want: [],
  },
  {
    name: 'a hook needs its name and path',
    api: api({ driver: 'svc', pre: [{ name: 'a' }, { path: 'b.ts' }] }),
    want: [
      { path: 'custom_middleware.pre[0].path', type: 'Required' },
      { path: 'custom_middleware.pre[1].name', type: 'Required' },
    ],
  },
  {
    name: 'a disabled hook is not checked',
    api: api({ driver: 'svc', post: [{ name: 'a', disabled: true }] }),
    want: [],
  },
  {
    name: 'paths stay in plugin_dir and name modules',
    api: api({
      driver: 'svc',
      pre: [
        { name: 'a', path: '/etc/a.ts' },
        { name: 'a', path: '../a.ts' },
        { name: 'a', path: 'a.py' },
        { name: 'a-b', path: 'a.ts' },
      ],
    }),
    want: [
      { path: 'custom_middleware.pre[0].path', type: 'Invalid' },
      { path: 'custom_middleware.pre[1].path', type: 'Invalid' },
      { path: 'custom_middleware.pre[2].path', type: 'Invalid' },
      { path: 'custom_middleware.pre[3].name', type: 'Invalid' },
    ],
  },
  {
    name: 'hooks need the driver svc',
    api: api({ auth_check: { name: 'a', path: 'a.ts' } }),
    want: [{ path: 'custom_middleware.driver', type: 'Required' }],
  },
  {
    name: 'the drivers of other gateways are refused by name',
    api: api({ driver: 'python', pre: [{ name: 'a', path: 'a.js' }] }),
    want: [{ path: 'custom_middleware.driver', type: 'NotSupported' }],
  },
  {
    name: 'otto (TykJS) files: pre, post_key_auth and post run; auth_check and response are refused by name',
    api: api({
      driver: 'otto',
      pre: [
        { name: 'a', path: 'middleware/a.js' },
        { name: 'b', path: 'b.ts' },
        { name: 'c', path: '../c.js' },
        { name: 'd-e', path: 'd.py' },
      ],
      post_key_auth: [{ name: 'f', path: 'f.js' }],
      post: [{ name: 'g', path: 'g.js' }],
      auth_check: { name: 'h', path: 'h.js' },
      response: [{ name: 'i', path: 'i.js' }],
    }),
    want: [
      { path: 'custom_middleware.auth_check', type: 'NotSupported' },
      { path: 'custom_middleware.pre[1].path', type: 'Invalid' },
      { path: 'custom_middleware.pre[2].path', type: 'Invalid' },
      { path: 'custom_middleware.pre[3].name', type: 'Invalid' },
      { path: 'custom_middleware.pre[3].path', type: 'Invalid' },
      { path: 'custom_middleware.response[0]', type: 'NotSupported' },
    ],
  },
];

describe('pluginProblems', () => {
  for (const c of cases) {
    test(c.name, () => {
      assert.deepEqual(
        pluginProblems(c.api).map((p) => ({ path: p.path, type: p.type })),
        c.want,
      );
    });
  }
});

test('the hooks the gateway runs', () => {
  const def = api({
    driver: 'svc',
    pre: [
      { name: 'a', path: 'a.ts' },
      { name: 'b', path: 'b.ts', disabled: true },
      { name: 'c', path: 'c.ts' },
    ],
    auth_check: { name: 'check', path: 'check.ts' },
  });
  assert.deepEqual(
    pluginHooksOf(def, 'pre').map((h) => h.name),
    ['a', 'c'],
  );
  assert.deepEqual(pluginHooksOf(def, 'post'), []);
  assert.deepEqual(customAuthHook(def), { name: 'check', path: 'check.ts', raw_body_only: false });
  assert.equal(customAuthHook(api({ auth_check: { name: 'x', path: 'x.ts', disabled: true } })), undefined);
});

test('pluginPathProblem says what to write', () => {
  assert.equal(pluginPathProblem('auth/check.ts'), undefined);
  assert.match(pluginPathProblem('C:/x.ts') ?? '', /relative to the gateway's plugin_dir/);
  assert.match(pluginPathProblem('a//b.ts') ?? '', /stays inside/);
});

describe('enable_coprocess_auth', () => {
  const coprocess = (custom_middleware: unknown): ClassicApiInput => ({
    ...api(custom_middleware),
    use_keyless: false,
    enable_coprocess_auth: true,
  });
  const grpcCheck = { name: 'MyAuthCheck', path: '' };

  test("accepted with the gRPC plugin server's auth_check (the reference's auth_check samples)", () => {
    assert.deepEqual(pluginProblems(coprocess({ driver: 'grpc', auth_check: grpcCheck })), []);
  });

  test('refused by name with another driver, or none', () => {
    for (const cm of [
      { driver: 'python', auth_check: grpcCheck },
      { driver: 'svc', auth_check: { name: 'check', path: 'check.ts' } },
      undefined,
    ]) {
      const found = pluginProblems(coprocess(cm)).filter((p) => p.path === 'enable_coprocess_auth');
      assert.deepEqual(
        found.map((p) => p.type),
        ['NotSupported'],
        JSON.stringify(cm),
      );
      assert.match(
        found[0]?.message ?? '',
        /served by a gRPC plugin server only.*set custom_middleware\.driver to grpc/,
      );
    }
  });

  test('refused without an auth_check', () => {
    const found = pluginProblems(coprocess({ driver: 'grpc', pre: [{ name: 'AddHeader', path: '' }] }));
    assert.deepEqual(
      found.map((p) => [p.path, p.type]),
      [['enable_coprocess_auth', 'Invalid']],
    );
    assert.match(found[0]?.message ?? '', /set custom_middleware\.auth_check\.name/);
  });

  test('false asks for nothing', () => {
    assert.deepEqual(pluginProblems({ ...api(undefined), enable_coprocess_auth: false }), []);
  });
});

test("ottoSourceProblem names the reference's functions the otto driver does not provide", () => {
  assert.equal(ottoSourceProblem('var m = new TykJS.TykMiddleware.NewMiddleware({});'), undefined);
  assert.match(
    ottoSourceProblem('var r = TykMakeHttpRequest(JSON.stringify(req));') ?? '',
    /uses TykMakeHttpRequest/,
  );
  assert.match(ottoSourceProblem('TykGetKeyData(k, api)') ?? '', /uses TykGetKeyData/);
});
