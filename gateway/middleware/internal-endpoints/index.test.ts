import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatewayApiDefinition, VersionInfo } from '../../../schemas/generated/models.ts';
import { fastPathServes } from '../../routes/compile.ts';
import { compileInternalEndpoints, internalEndpoints } from './index.ts';

const version = (internal: NonNullable<VersionInfo['extended_paths']>['internal']): VersionInfo => ({
  name: 'Default',
  extended_paths: { internal },
});

const api = (v: VersionInfo): GatewayApiDefinition => ({
  name: 'a',
  proxy: { listen_path: '/a/', target_url: 'http://u' },
  version_data: { not_versioned: true, versions: { Default: v } },
});

test('compileInternalEndpoints: empty and disabled entries compile to nothing (the middleware is left out)', () => {
  assert.equal(compileInternalEndpoints(version([])), undefined);
  assert.equal(compileInternalEndpoints(version([{ path: '/x', disabled: true }])), undefined);
  assert.equal(internalEndpoints.enabled(api(version([{ path: '/x', disabled: true }])), {} as never), false);
});

test('compileInternalEndpoints: the method of an entry, or every method without one', () => {
  const list = compileInternalEndpoints(version([{ path: '/a', method: 'GET' }, { path: '/b' }]));
  assert.deepEqual(
    list?.map((e) => [...e.endpoint.methods]),
    [['GET'], []],
  );
});

test('internal endpoints compile to a synchronous step: the route stays on the fast path', async () => {
  const a = api(version([{ path: '/x', method: 'GET' }]));
  assert.equal(internalEndpoints.enabled(a, {} as never), true);
  const made = await internalEndpoints.create(a, {} as never);
  assert.ok(typeof made !== 'function' && 'before' in made);
  assert.equal(internalEndpoints.readsBody, undefined);
  assert.equal(
    fastPathServes(
      { target: { origin: 'http://u', host: 'u', basePath: '', baseQuery: '' } },
      { readsBody: false },
    ),
    true,
  );
});
