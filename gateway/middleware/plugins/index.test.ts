/**
 * Plugins (`custom_middleware`, driver `svc`) as tables: the example plugin of examples/plugins
 * (custom authentication that allows and denies, a `pre` hook whose header the upstream sees, a
 * `post_key_auth` hook that reads the session, a `response` hook), and failing plugins: one that
 * throws and one that hangs get 500 with an error ID while the gateway goes on serving, a
 * refusal keeps its status and message, a result the gateway can't act on is a failure. Plugin
 * modules are copied into a plugin directory of the test. Each table runs against the files
 * store and the Redis store, with the fast path on and off.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile } from 'node:fs/promises';
import { pluginDirWith } from '../../testing/plugin-dir.ts';
import { join } from 'node:path';
import { startEcho, type Echo } from '../../testing/echo.ts';
import { keyed, keyless, type InProcessGateway } from '../../testing/harness.ts';
import { assertAnswer, describeEachSetup, type Expected } from '../../testing/tables.ts';

const EXAMPLE = join(import.meta.dirname, '..', '..', '..', 'examples', 'plugins', 'partner.ts');
const TIMEOUT_MS = 300;

/** Plugins that misbehave, as plain JavaScript. */
const FAULTY = `
export function boom() { throw new Error('boom'); }
export async function rejects() { throw new Error('rejected'); }
export function hang() { return new Promise(() => {}); }
export function framing() { return { setHeaders: { 'content-length': '1' } }; }
export function lineBreak() { return { setHeaders: { 'x-a': 'a\\r\\nx-b: b' } }; }
export function teapot() { return { refuse: { status: 418, message: 'No coffee here' } }; }
export function notAStatus() { return { refuse: { status: 200, message: 'ok?' } }; }
export function seen(req) {
  return { setHeaders: { 'x-seen-key': req.keyId ?? 'none', 'x-seen-path': req.path, 'x-seen-q': req.query.q ?? '' } };
}
export function noSession() { return { keyId: 'k' }; }
export const notAFunction = 1;
`;

let echo: Echo;
let pluginDir: string;
before(async () => {
  echo = await startEcho('echo');
  pluginDir = await pluginDirWith('svc-plugins-', { 'faulty.mjs': FAULTY });
  await copyFile(EXAMPLE, join(pluginDir, 'partner.ts'));
});
after(async () => {
  await echo.close();
});

const hook = (name: string, path = 'faulty.mjs'): { name: string; path: string } => ({ name, path });
const pre = (...names: string[]): Record<string, unknown> => ({
  custom_middleware: { driver: 'svc', pre: names.map((n) => hook(n)) },
});

async function provision(gw: InProcessGateway): Promise<void> {
  const apis = [
    keyed('partner', '/partner/', echo.url, {
      org_id: 'acme',
      base_identity_provided_by: 'custom_auth',
      config_data: { partners: { 'pk-1': { name: 'acme-partner', policy: 'partner-pol' } } },
      custom_middleware: {
        driver: 'svc',
        pre: [hook('tagRequest', 'partner.ts')],
        auth_check: hook('partnerKey', 'partner.ts'),
        post_key_auth: [hook('forwardPartner', 'partner.ts')],
        response: [hook('poweredBy', 'partner.ts')],
      },
    }),
    keyless('boom', '/boom/', echo.url, pre('boom')),
    keyless('rejects', '/rejects/', echo.url, pre('rejects')),
    keyless('hang', '/hang/', echo.url, pre('hang')),
    keyless('framing', '/framing/', echo.url, pre('framing')),
    keyless('linebreak', '/linebreak/', echo.url, pre('lineBreak')),
    keyless('teapot', '/teapot/', echo.url, pre('teapot')),
    keyless('notastatus', '/notastatus/', echo.url, pre('notAStatus')),
    keyed('seen', '/seen/', echo.url, {
      custom_middleware: { driver: 'svc', pre: [hook('seen')], post: [hook('seen')] },
    }),
    keyed('auth-boom', '/auth-boom/', echo.url, {
      custom_middleware: { driver: 'svc', auth_check: hook('boom') },
    }),
    keyed('auth-nosession', '/auth-nosession/', echo.url, {
      custom_middleware: { driver: 'svc', auth_check: hook('noSession') },
    }),
    keyless('plain', '/plain/', echo.url),
  ];
  for (const a of apis) await gw.addApi(a);
  const policy = {
    id: 'partner-pol',
    name: 'partners',
    state: 'active',
    quota_max: 3,
    quota_renewal_rate: 3600,
    access_rights: { partner: { api_id: 'partner', versions: ['Default'] } },
  };
  assert.equal((await gw.admin('POST', '/svc/policies', policy)).status, 200);
  const key = await gw.admin('POST', '/svc/keys/tok', {
    access_rights: { seen: { api_id: 'seen', versions: [] } },
  });
  assert.equal(key.status, 200, key.text);
  await gw.reload();
}

interface Case extends Expected {
  name: string;
  path: string;
  headers?: Record<string, string>;
}

const INTERNAL = /^Internal error \(ID [0-9a-f-]{36}\)$/;

const cases: Case[] = [
  {
    name: 'auth_check allows a partner; pre, post_key_auth and response hooks run',
    path: '/partner/x',
    headers: { 'x-partner-key': 'pk-1' },
    status: 200,
    responseHeaders: { 'x-powered-by': 'svc gateway plugins' },
    upstreamHeaders: {
      'x-request-tag': 'partner:GET',
      'x-partner': 'acme-partner',
      'x-partner-key': undefined,
    },
  },
  {
    name: 'auth_check denies with its status and message',
    path: '/partner/x',
    headers: { 'x-partner-key': 'wrong' },
    status: 401,
    error: 'Partner key missing or unknown',
    responseHeaders: { 'x-powered-by': undefined },
  },
  { name: 'a pre hook that throws', path: '/boom/x', status: 500, error: INTERNAL },
  { name: 'an async pre hook that rejects', path: '/rejects/x', status: 500, error: INTERNAL },
  { name: 'a pre hook that never answers', path: '/hang/x', status: 500, error: INTERNAL },
  { name: 'a hook that sets a framing header', path: '/framing/x', status: 500, error: INTERNAL },
  { name: 'a hook that sets a header with a line break', path: '/linebreak/x', status: 500, error: INTERNAL },
  { name: 'a hook that refuses', path: '/teapot/x', status: 418, error: 'No coffee here' },
  { name: 'a refusal with a status that is no error', path: '/notastatus/x', status: 500, error: INTERNAL },
  { name: 'an auth_check that throws', path: '/auth-boom/x', status: 500, error: INTERNAL },
  { name: 'an auth_check without a session', path: '/auth-nosession/x', status: 500, error: INTERNAL },
  {
    name: 'hooks see the request; after authentication, the key',
    path: '/seen/x?q=1',
    headers: { authorization: 'tok' },
    status: 200,
    // The post hook's header replaces the pre hook's; the key is its stored ID (printf tok | sha256sum).
    upstreamHeaders: {
      'x-seen-path': '/seen/x',
      'x-seen-q': '1',
      'x-seen-key': '1a7674eb4ee78df7e1ac439a93c3fa8e3c945784d4dec9fd8e3011738b2f1d62',
    },
  },
  { name: 'the gateway goes on serving', path: '/plain/x', status: 200 },
];

describeEachSetup(
  'plugins',
  () => ({ argv: ['--plugin-dir', pluginDir, '--plugin-timeout-ms', String(TIMEOUT_MS)] }),
  ({ gw }) => {
    before(async () => {
      await provision(gw());
    });

    for (const c of cases) {
      test(c.name, async () => {
        const started = performance.now();
        const res = await gw().request({
          path: c.path,
          ...(c.headers === undefined ? {} : { headers: c.headers }),
        });
        assertAnswer(res, c);
        if (c.path === '/hang/x') {
          assert.ok(performance.now() - started >= TIMEOUT_MS - 20, 'after the timeout');
        }
      });
    }

    test("the plugin's session keeps its quota across requests", async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push(
          (await gw().request({ path: '/partner/q', headers: { 'x-partner-key': 'pk-1' } })).status,
        );
      }
      // One request of the table counted too: a quota of 3.
      assert.deepEqual(statuses, [200, 200, 403, 403]);
    });

    test('a plugin path that leaves plugin_dir is refused when written', async () => {
      const res = await gw().admin(
        'POST',
        '/svc/apis',
        keyless('escape', '/escape/', echo.url, {
          custom_middleware: { driver: 'svc', pre: [hook('boom', '../faulty.mjs')] },
        }),
      );
      assert.equal(res.status, 400);
      assert.match(
        (res.json as { message: string }).message,
        /custom_middleware\.pre\[0\]\.path: Invalid value/,
      );
    });
  },
);
