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
  assert.equal(
    loadOperatorConfig([], base).SVC_GATEWAY_API_ADDRESSES,
    'shared',
    'Gateways share the gateway',
  );
  assert.equal(loadOperatorConfig([], base).SVC_GATEWAY_API_PORT_RANGE, '20000-20999');
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
  {
    name: 'per-gateway addresses need the gateway Service',
    env: { ...base, SVC_GATEWAY_API_ADDRESSES: 'per-gateway' },
    want: [
      "environment variable SVC_GATEWAY_API_GATEWAY_SERVICE: Required value: per-gateway addresses lead each Gateway's Service to the endpoints of the gateway's Service (namespace/name)",
    ],
  },
  {
    name: "per-gateway addresses: a port range holding the gateway's own ports is refused",
    env: {
      ...base,
      SVC_GATEWAY_API_ADDRESSES: 'per-gateway',
      SVC_GATEWAY_API_GATEWAY_SERVICE: 'svc/svc-gateway',
      SVC_GATEWAY_API_PORT_RANGE: '8000-8500',
    },
    want: [
      'environment variable SVC_GATEWAY_API_PORT_RANGE: Invalid value: "8000-8500": holds SVC_HTTP_INGRESS_PORT (8080), a port of the gateway\'s own',
      'environment variable SVC_GATEWAY_API_PORT_RANGE: Invalid value: "8000-8500": holds SVC_HTTPS_INGRESS_PORT (8443), a port of the gateway\'s own',
      'environment variable SVC_GATEWAY_API_PORT_RANGE: Invalid value: "8000-8500": holds the port of SVC_URL (8080), a port of the gateway\'s own',
    ],
  },
  {
    name: 'per-gateway addresses: a reversed port range is refused',
    env: {
      ...base,
      SVC_GATEWAY_API_ADDRESSES: 'per-gateway',
      SVC_GATEWAY_API_GATEWAY_SERVICE: 'svc/svc-gateway',
      SVC_GATEWAY_API_PORT_RANGE: '21000-20000',
    },
    want: [
      'environment variable SVC_GATEWAY_API_PORT_RANGE: Invalid value: "21000-20000": first-last, with 1 <= first <= last <= 65535',
    ],
  },
  {
    name: 'per-gateway addresses with the gateway Service and the default range are fine',
    env: {
      ...base,
      SVC_GATEWAY_API_ADDRESSES: 'per-gateway',
      SVC_GATEWAY_API_GATEWAY_SERVICE: 'svc/svc-gateway',
    },
    want: [],
  },
];

for (const c of cases) {
  test(`operator config: ${c.name}`, () => {
    assert.deepEqual(problems(c.env), c.want);
  });
}
