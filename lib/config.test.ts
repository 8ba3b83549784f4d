import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonSchema } from '../schemas/json-schema.ts';
import { configSources, durationPattern, loadConfig, parseDuration, whereToSet } from './config.ts';
import { configProblems } from './testing/config.ts';

const schema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['secret'],
  properties: {
    secret: { type: 'string', minLength: 1, description: 'Secret.' },
    port: { type: 'integer', minimum: 0, maximum: 65535, default: 8080, description: 'Port.' },
    debug: { type: 'boolean', default: false, description: 'Debug.' },
  },
};
const sources = { secret: { env: 'T_SECRET' }, port: { env: 'T_PORT' }, debug: {} };

interface Cfg {
  secret: string;
  port: number;
  debug: boolean;
}

test('config: defaults filled, env coerced, flags win over env, result frozen', () => {
  const cfg = loadConfig<Cfg>({
    component: 't',
    schema,
    sources,
    env: { T_SECRET: 'from-env', T_PORT: '9000' },
    argv: ['--secret=from-flag', '--debug'],
  });
  assert.deepEqual({ ...cfg }, { secret: 'from-flag', port: 9000, debug: true });
  assert.ok(Object.isFrozen(cfg));
});

test('config: every problem is named with its source', () => {
  assert.deepEqual(
    configProblems(() =>
      loadConfig({ component: 't', schema, sources, env: { T_PORT: 'x' }, argv: ['--colour=red'] }),
    ),
    [
      'flag --colour: unknown (known: --config, --secret, --port, --debug)',
      'secret: Required value: add this field',
      'environment variable T_PORT: Invalid type: must be integer',
    ],
  );
});

test('config: file keys are checked strictly and named with the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cfg-'));
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'secret: s\nprot: 1\n');
  assert.deepEqual(
    configProblems(() => loadConfig({ component: 't', schema, sources, env: {}, argv: ['--config', file] })),
    [`prot in ${file}: unknown field: remove it, or check its spelling and nesting`],
  );
});

test('durations', () => {
  assert.deepEqual(['10h', '1h30m', '45s', '250ms', '1.5s', '10', 'h', '5d'].map(parseDuration), [
    36_000_000,
    5_400_000,
    45_000,
    250,
    1500,
    undefined,
    undefined,
    undefined,
  ]);
  assert.ok(new RegExp(durationPattern).test('1h30m'));
});

test('whereToSet names the flag, the environment variable and the file key a key has', () => {
  const sources = { both: { env: 'X_BOTH', flag: 'both' }, env_only: { env: 'X_ENV' } };
  assert.equal(
    whereToSet('both', sources),
    'set the flag --both, the environment variable X_BOTH, or `both` in the --config file',
  );
  assert.equal(
    whereToSet('env_only', sources),
    'set the environment variable X_ENV, or `env_only` in the --config file',
  );
  assert.equal(whereToSet('file_only', sources), 'set `file_only` in the --config file');
});

test('configSources: a variable and a flag of each key, in schema order, but where named', () => {
  const keys: JsonSchema = { type: 'object', properties: { data_dir: {}, healthPort: {}, host: {} } };
  const sources = configSources(keys, 'X_', { host: { flag: 'address' }, healthPort: { env: 'HEALTH' } });
  assert.deepEqual(sources, {
    data_dir: { env: 'X_DATA_DIR', flag: 'data-dir' },
    healthPort: { env: 'HEALTH', flag: 'health-port' },
    host: { env: 'X_HOST', flag: 'address' },
  });
  assert.deepEqual(Object.keys(sources), ['data_dir', 'healthPort', 'host']);
});
