import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { compileSizeLimits, limitFor } from './index.ts';

const api = (version: Record<string, unknown>, name = 'Default'): GatewayApiDefinition => ({
  name: 'a',
  proxy: { listen_path: '/a/', target_url: 'http://u' },
  version_data: { not_versioned: true, versions: { [name]: { name, ...version } } },
});

const cases: {
  name: string;
  api: GatewayApiDefinition;
  method: string;
  path: string;
  want: number | undefined;
}[] = [
  { name: 'the global limit', api: api({ global_size_limit: 5 }), method: 'POST', path: '/x', want: 5 },
  {
    name: 'the smaller of global and endpoint',
    api: api({
      global_size_limit: 5,
      extended_paths: { size_limits: [{ path: '/x', method: 'POST', size_limit: 9 }] },
    }),
    method: 'POST',
    path: '/x/1',
    want: 5,
  },
  {
    name: 'an endpoint of another method',
    api: api({ extended_paths: { size_limits: [{ path: '/x', method: 'PUT', size_limit: 2 }] } }),
    method: 'POST',
    path: '/x',
    want: undefined,
  },
  {
    name: 'a version found as the only one',
    api: api({ global_size_limit: 7 }, 'v1'),
    method: 'GET',
    path: '/',
    want: 7,
  },
];

for (const c of cases) {
  test(`limitFor: ${c.name}`, () => {
    const limits = compileSizeLimits(c.api);
    assert.equal(limits === undefined ? undefined : limitFor(limits, c.method, c.path), c.want);
  });
}

test('compileSizeLimits: nothing to compile without a limit, or with the limit disabled', () => {
  assert.equal(compileSizeLimits(api({})), undefined);
  assert.equal(compileSizeLimits(api({ global_size_limit: 3, global_size_limit_disabled: true })), undefined);
  assert.equal(compileSizeLimits(api({ global_size_limit: 0 })), undefined);
});
