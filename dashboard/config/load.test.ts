import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../lib/config.ts';
import { loadDashboardConfig } from './load.ts';

const SECRET = '0123456789abcdef-secret';

function problems(argv: string[], env: Record<string, string> = {}): readonly string[] {
  try {
    loadDashboardConfig({ argv, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return assert.fail('expected a ConfigError');
}

test('config: defaults, with the admin secret from the environment', () => {
  const cfg = loadDashboardConfig({ argv: [], env: { SVC_DB_ADMIN_SECRET: SECRET } });
  assert.deepEqual(
    { ...cfg },
    {
      admin_secret: SECRET,
      listen_address: '0.0.0.0',
      listen_port: 3000,
      storage: 'sqlite',
      data_dir: 'data',
      page_size: 10,
      streaming_enabled: false,
      allow_explicit_policy_id: false,
      enable_duplicate_slugs: false,
      api_writes_system_users_only: false,
      analytics_minute_retention_hours: 48,
      analytics_hour_retention_days: 90,
      analytics_detail_retention_hours: 24,
      analytics_detail_max_records: 1000,
      metrics_enabled: true,
      log_level: 'info',
      shutdown_timeout_ms: 10000,
    },
  );
  assert.ok(Object.isFrozen(cfg));
});

test('config: flags win over the environment', () => {
  const cfg = loadDashboardConfig({
    argv: [
      '--admin-secret',
      SECRET,
      '--storage',
      'postgres',
      '--postgres-url',
      'postgres://u@h/db',
      '--streaming-enabled',
    ],
    env: { SVC_DB_STORAGE: 'sqlite', SVC_DB_STREAMING_ENABLED: 'false' },
  });
  assert.equal(cfg.storage, 'postgres');
  assert.equal(cfg.streaming_enabled, true);
});

const refused: { name: string; argv: string[]; env?: Record<string, string>; problem: RegExp }[] = [
  {
    name: 'no admin secret (there is no default)',
    argv: [],
    problem: /^admin_secret: required .*no default secret.*--admin-secret.*SVC_DB_ADMIN_SECRET/,
  },
  {
    name: 'a short admin secret',
    argv: ['--admin-secret', 'short'],
    problem: /^flag --admin-secret: too short: use at least 16/,
  },
  {
    name: 'postgres without its URL',
    argv: ['--admin-secret', SECRET, '--storage', 'postgres'],
    problem: /^postgres_url: required when storage is postgres/,
  },
  {
    name: 'an unknown storage',
    argv: ['--admin-secret', SECRET],
    env: { SVC_DB_STORAGE: 'mongo' },
    problem: /^environment variable SVC_DB_STORAGE: /,
  },
  {
    name: 'a URL that is not PostgreSQL',
    argv: ['--admin-secret', SECRET, '--postgres-url', 'mysql://x'],
    problem: /^flag --postgres-url: /,
  },
  {
    name: 'an unknown flag',
    argv: ['--admin-secret', SECRET, '--secret', 'x'],
    problem: /^flag --secret: unknown/,
  },
  {
    name: 'a page size of 0',
    argv: ['--admin-secret', SECRET, '--page-size', '0'],
    problem: /^flag --page-size: /,
  },
];

for (const c of refused) {
  test(`config: refuses ${c.name}`, () => {
    const found = problems(c.argv, c.env);
    assert.ok(
      found.some((p) => c.problem.test(p)),
      found.join('\n'),
    );
  });
}
