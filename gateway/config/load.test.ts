import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { configProblems } from '../../lib/testing/config.ts';
import { loadGatewayConfig, loadTls } from './load.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-gw-cfg-'));
const file = join(dir, 'gateway.yaml');
writeFileSync(file, 'secret: s\nlisten_prot: 1\nworkers: many\n');

test('config: defaults', () => {
  const cfg = loadGatewayConfig({ argv: ['--secret', 's'], env: {} });
  assert.deepEqual(
    { ...cfg },
    {
      secret: 's',
      listen_address: '0.0.0.0',
      listen_port: 8080,
      control_tls: false,
      store: 'files',
      data_dir: 'data',
      redis_key_prefix: 'svc-gw:',
      workers: availableParallelism(),
      upstream_connect_timeout_ms: 5000,
      upstream_timeout_ms: 30000,
      tls_handshake_timeout_ms: 10000,
      trust_forwarded_headers: false,
      fast_path: true,
      metrics_enabled: true,
      node_heartbeat_interval_ms: 5000,
      node_timeout_ms: 30000,
      log_level: 'info',
      shutdown_timeout_ms: 10000,
      rate_limit_headers: 'quota',
      limits_fail_open: false,
      enable_jsvm: false,
      plugin_timeout_ms: 1000,
      jwks_cache_ttl_s: 240,
      monitor_enable_trigger_monitors: false,
      monitor_global_trigger_limit: 0,
      monitor_user_keys: false,
      monitor_org_keys: false,
      policies_allow_explicit_policy_id: true,
      streaming_enabled: false,
      dashboard_orgs: '',
      dashboard_poll_interval_ms: 10000,
      analytics_enabled: true,
      analytics_sample_rate: 1,
      analytics_buffer_size: 10000,
      analytics_flush_interval_ms: 2000,
    },
  );
});

test('config: flags win over the environment, values are coerced', () => {
  const cfg = loadGatewayConfig({
    argv: [
      '--port=9000',
      '--store',
      'redis://127.0.0.1:6380/2',
      '--workers',
      '3',
      '--trust-forwarded-headers',
    ],
    env: { SVC_GW_SECRET: 'env-secret', SVC_GW_LISTEN_PORT: '7000', SVC_GW_CONTROL_PORT: '9001' },
  });
  assert.equal(cfg.secret, 'env-secret');
  assert.equal(cfg.listen_port, 9000);
  assert.equal(cfg.control_port, 9001);
  assert.equal(cfg.store, 'redis://127.0.0.1:6380/2');
  assert.equal(cfg.workers, 3);
  assert.equal(cfg.trust_forwarded_headers, true);
});

test('config: the fast path is on by default, off by flag or environment', () => {
  const base = { argv: ['--secret', 's'] };
  assert.equal(loadGatewayConfig({ ...base, env: {} }).fast_path, true);
  assert.equal(loadGatewayConfig({ argv: [...base.argv, '--fast-path=false'], env: {} }).fast_path, false);
  assert.equal(loadGatewayConfig({ ...base, env: { SVC_GW_FAST_PATH: 'false' } }).fast_path, false);
});

test('config: the JavaScript VM is off by default, on by flag, environment or config file', () => {
  const base = { argv: ['--secret', 's'] };
  const jsvmFile = join(dir, 'jsvm.yaml');
  writeFileSync(jsvmFile, 'secret: s\nenable_jsvm: true\n');
  assert.equal(loadGatewayConfig({ ...base, env: {} }).enable_jsvm, false);
  assert.equal(loadGatewayConfig({ argv: [...base.argv, '--enable-jsvm'], env: {} }).enable_jsvm, true);
  assert.equal(loadGatewayConfig({ ...base, env: { SVC_GW_ENABLE_JSVM: 'true' } }).enable_jsvm, true);
  assert.equal(loadGatewayConfig({ argv: ['--config', jsvmFile], env: {} }).enable_jsvm, true);
});

const refused: { name: string; argv: string[]; env?: Record<string, string>; want: string[] }[] = [
  {
    name: 'missing secret says where to set it',
    argv: [],
    want: [
      'secret: required (it protects the management API; the gateway does not start without it): set the flag --secret, the environment variable SVC_GW_SECRET, or `secret` in the --config file',
    ],
  },
  {
    name: 'empty secret',
    argv: ['--secret='],
    want: ['flag --secret: Invalid value: must NOT have fewer than 1 characters'],
  },
  {
    name: 'unknown flag is named',
    argv: ['--secret', 's', '--listen-port=1'],
    want: [
      'flag --listen-port: unknown (known: --config, --secret, --host, --port, --control-port, --control-tls, --https-port, --store, --data-dir, --redis-key-prefix, --workers, --upstream-connect-timeout-ms, --upstream-timeout-ms, --tls-handshake-timeout-ms, --tls-cert, --tls-key, --trust-forwarded-headers, --fast-path, --metrics-enabled, --node-heartbeat-interval-ms, --node-timeout-ms, --log-level, --shutdown-timeout-ms, --rate-limit-headers, --limits-fail-open, --plugin-dir, --enable-jsvm, --plugin-timeout-ms, --coprocess-grpc-server, --jwks-cache-ttl-s, --monitor-enable-trigger-monitors, --monitor-global-trigger-limit, --monitor-user-keys, --monitor-org-keys, --policies-allow-explicit-policy-id, --streaming-enabled, --analytics-enabled, --analytics-sample-rate, --analytics-buffer-size, --analytics-flush-interval-ms, --analytics-dashboard-url, --streaming-bento-path, --dashboard, --node-secret, --dashboard-orgs, --dashboard-poll-interval-ms)',
    ],
  },
  {
    name: 'mistyped values name their source',
    argv: ['--secret', 's', '--port', 'http', '--workers', '0'],
    env: { SVC_GW_LOG_LEVEL: 'loud' },
    want: [
      'flag --port: Invalid type: must be integer',
      'flag --workers: Invalid value: must be >= 1',
      'environment variable SVC_GW_LOG_LEVEL: Unsupported value: must be one of "error", "warn", "info", "debug"',
    ],
  },
  {
    name: 'store must be files or a Redis URL',
    argv: ['--secret', 's', '--store', 'memcached://x'],
    want: ['flag --store: Invalid value: must match ^(files|rediss?://.+)$'],
  },
  {
    name: 'unknown and mistyped keys in the file are named with the file',
    argv: ['--config', file],
    want: [
      `listen_prot in ${file}: unknown field: remove it, or check its spelling and nesting`,
      `workers in ${file}: Invalid type: must be integer`,
    ],
  },
  {
    name: 'TLS certificate without its key',
    argv: ['--secret', 's', '--tls-cert', '/x.pem'],
    want: ['tls_cert_file and tls_key_file: set both (--tls-cert and --tls-key) or neither'],
  },
  {
    name: 'management API over HTTPS without a port of its own',
    argv: ['--secret', 's', '--control-tls', '--tls-cert', '/x.pem', '--tls-key', '/x.key'],
    want: [
      'control_tls: serves the management API on its own port over HTTPS: set control_port (--control-port) and the certificate (--tls-cert and --tls-key)',
    ],
  },
  {
    name: 'management API over HTTPS without a certificate',
    argv: ['--secret', 's', '--control-port', '9001', '--control-tls'],
    want: [
      'control_tls: serves the management API on its own port over HTTPS: set control_port (--control-port) and the certificate (--tls-cert and --tls-key)',
    ],
  },
  {
    name: 'control port equal to the gateway port',
    argv: ['--secret', 's', '--port', '8080', '--control-port', '8080'],
    want: ['control_port: must differ from listen_port; leave it out to share the gateway port'],
  },
  {
    name: 'HTTPS port without a certificate',
    argv: ['--secret', 's', '--https-port', '8443'],
    want: ['https_port: an HTTPS port needs the certificate: set --tls-cert and --tls-key'],
  },
  {
    name: 'HTTPS port equal to the gateway port',
    argv: ['--secret', 's', '--https-port', '8080', '--tls-cert', '/x.pem', '--tls-key', '/x.key'],
    want: ['https_port: must differ from listen_port and control_port'],
  },
];

for (const c of refused) {
  test(`config refused: ${c.name}`, () => {
    assert.deepEqual(
      configProblems(() => loadGatewayConfig({ argv: c.argv, env: c.env ?? {} })),
      c.want,
    );
  });
}

test('config: unreadable TLS files are named', () => {
  const cfg = loadGatewayConfig({
    argv: ['--secret', 's', '--tls-cert', join(dir, 'nope.pem'), '--tls-key', join(dir, 'nope.key')],
    env: {},
  });
  const got = configProblems(() => loadTls(cfg));
  assert.equal(got.length, 2);
  assert.match(got[0] ?? '', /^tls_cert_file: cannot read .*nope\.pem: ENOENT/);
  assert.match(got[1] ?? '', /^tls_key_file: cannot read .*nope\.key: ENOENT/);
});

test('config: mode pro needs both the dashboard URL and the node secret', () => {
  assert.throws(
    () => loadGatewayConfig({ argv: ['--secret', 's', '--dashboard', 'http://dashboard:3000'] }),
    /dashboard_url and node_secret: mode pro needs both/,
  );
  const cfg = loadGatewayConfig({
    argv: ['--secret', 's'],
    env: {
      SVC_GW_DASHBOARD_URL: 'http://dashboard:3000',
      SVC_GW_NODE_SECRET: 'n',
      SVC_GW_DASHBOARD_ORGS: 'a,b',
    },
  });
  assert.equal(cfg.dashboard_url, 'http://dashboard:3000');
  assert.equal(cfg.node_secret, 'n');
  assert.equal(cfg.dashboard_orgs, 'a,b');
});

test('config: analytics_dashboard_url (mode ce) needs the node secret, and is refused in mode pro', () => {
  assert.throws(
    () =>
      loadGatewayConfig({ argv: ['--secret', 's', '--analytics-dashboard-url', 'http://dashboard:3000'] }),
    /node_secret: analytics_dashboard_url needs/,
  );
  assert.throws(
    () =>
      loadGatewayConfig({
        argv: ['--secret', 's', '--dashboard', 'http://d:3000', '--node-secret', 'n'],
        env: { SVC_GW_ANALYTICS_DASHBOARD_URL: 'http://d:3000' },
      }),
    /analytics_dashboard_url: mode pro sends analytics to dashboard_url/,
  );
  const cfg = loadGatewayConfig({
    argv: ['--secret', 's', '--analytics-dashboard-url', 'http://d:3000', '--node-secret', 'n'],
  });
  assert.equal(cfg.analytics_dashboard_url, 'http://d:3000');
  assert.equal(cfg.dashboard_url, undefined);
});
