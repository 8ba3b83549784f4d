import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../lib/config.ts';
import { loadOperatorConfig, resyncPeriodMs, watchedNamespaces } from './config.ts';

const base = { SVC_MODE: 'ce', SVC_URL: 'http://gw:8080', SVC_ORG: 'org', SVC_AUTH: 'secret' };

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadOperatorConfig([], env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

test('operator config: defaults and parsing', () => {
  const cfg = loadOperatorConfig([], { ...base, WATCH_NAMESPACE: 'a,b', SVC_RESYNC_PERIOD: '1h30m' });
  assert.equal(cfg.SVC_TLS_INSECURE_SKIP_VERIFY, false);
  assert.equal(cfg.WATCH_INGRESS_CLASS, 'svc');
  assert.equal(cfg.SVC_HTTP_INGRESS_PORT, 8080);
  assert.equal(cfg.SVC_HTTPS_INGRESS_PORT, 8443);
  assert.deepEqual(watchedNamespaces(cfg), ['a', 'b']);
  assert.equal(resyncPeriodMs(cfg), 5_400_000);
  assert.equal(resyncPeriodMs(loadOperatorConfig([], base)), 36_000_000, 'default cache expiry is 10 hours');
  assert.deepEqual(watchedNamespaces(loadOperatorConfig([], base)), [], 'unset watches all');
});

const cases: { name: string; env: Record<string, string>; want: string[] }[] = [
  {
    name: 'nothing set names every required key at once',
    env: {},
    want: [
      'SVC_MODE: Required value: add this field',
      'SVC_URL: Required value: add this field',
      'SVC_ORG: Required value: add this field',
      'SVC_AUTH: Required value: add this field',
    ],
  },
  {
    name: 'bad values are named with their variable',
    env: {
      ...base,
      SVC_MODE: 'enterprise',
      SVC_URL: 'gw:8080',
      SVC_HTTP_INGRESS_PORT: 'eighty',
      WATCH_NAMESPACE: 'A,b',
    },
    want: [
      'environment variable SVC_MODE: Unsupported value: must be one of "ce", "pro"',
      'environment variable SVC_URL: Invalid value: must match ^https?://[^\\s/]+',
      'environment variable WATCH_NAMESPACE: Invalid value: must match ^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
      'environment variable SVC_HTTP_INGRESS_PORT: Invalid type: must be integer',
    ],
  },
  {
    name: 'pro needs a license key',
    env: { ...base, SVC_MODE: 'pro' },
    want: [
      'environment variable SVC_OPERATOR_LICENSEKEY: Required value: mode pro needs a license key (JWT form)',
    ],
  },
  {
    name: 'a license key must have JWT form',
    env: { ...base, SVC_MODE: 'pro', SVC_OPERATOR_LICENSEKEY: 'not-a-jwt' },
    want: [
      'environment variable SVC_OPERATOR_LICENSEKEY: Invalid value: must match ^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]*$',
    ],
  },
  {
    name: 'pro with a JWT-form key is fine',
    env: { ...base, SVC_MODE: 'pro', SVC_OPERATOR_LICENSEKEY: 'aaa.bbb.ccc' },
    want: [],
  },
  {
    name: 'a malformed resync period',
    env: { ...base, SVC_RESYNC_PERIOD: '10 hours' },
    want: ['environment variable SVC_RESYNC_PERIOD: Invalid value: must match ^(\\d+(\\.\\d+)?(ms|s|m|h))+$'],
  },
];

for (const c of cases) {
  test(`operator config: ${c.name}`, () => {
    assert.deepEqual(problems(c.env), c.want);
  });
}
