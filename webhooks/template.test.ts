import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateApiDefinition, validateApiDefinitionDelete } from './api-definition.validate.ts';
import { memoryLookups } from './memory-lookups.ts';
import { apiDefinition } from './testing.ts';

/** An ApiDefinition labelled as a template. */
function template(
  name: string,
  spec: Record<string, unknown>,
  label = 'svc.io/template',
): Record<string, unknown> {
  const obj = apiDefinition(name, spec);
  (obj.metadata as Record<string, unknown>).labels = { [label]: 'true' };
  return obj;
}

const ingress = (name: string, templateName: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: 'default', annotations: { 'svc.io/template': templateName }, ...extra },
  spec: {},
});

test('a template needs no listen path and no target (either label); any other error stays', async () => {
  for (const label of ['svc.io/template', 'template']) {
    const got = await validateApiDefinition(
      template('auth', { use_keyless: false, use_standard_auth: true, proxy: {} }, label),
      undefined,
      memoryLookups([]),
    );
    assert.deepEqual(got.errors, [], label);
  }
  const plain = await validateApiDefinition(
    apiDefinition('auth', { proxy: {} }),
    undefined,
    memoryLookups([]),
  );
  assert.deepEqual(
    plain.errors.map((e) => `${e.path} ${e.type}`).sort(),
    ['spec.proxy.listen_path Required', 'spec.proxy.target_url Required'],
    'not a template: both required',
  );
  const bad = await validateApiDefinition(
    template('auth', { use_standard_auth: true, proxy: {} }),
    undefined,
    memoryLookups([]),
  );
  assert.deepEqual(
    bad.errors.map((e) => e.path),
    ['spec.use_keyless'],
    'keyless with a token is still refused',
  );
});

test('a template claims no route: an API on its listen path is admitted', async () => {
  const tpl = template('auth', { proxy: { listen_path: '/orders/', target_url: 'http://t' } });
  const api = apiDefinition('orders', { proxy: { listen_path: '/orders/', target_url: 'http://o' } });
  assert.deepEqual((await validateApiDefinition(api, undefined, memoryLookups([tpl]))).errors, []);
});

test('listen_port: the same listen path on another port is another route; on the same port a conflict', async () => {
  const onPort = (name: string, port: number) =>
    apiDefinition(name, {
      protocol: 'http',
      listen_port: port,
      proxy: { listen_path: '/x/', target_url: 'http://o' },
    });
  const main = apiDefinition('main', { proxy: { listen_path: '/x/', target_url: 'http://o' } });
  assert.deepEqual(
    (await validateApiDefinition(onPort('a', 8080), undefined, memoryLookups([main]))).errors,
    [],
  );
  const clash = await validateApiDefinition(
    onPort('a', 8080),
    undefined,
    memoryLookups([main, onPort('b', 8080)]),
  );
  assert.equal(clash.errors[0]?.path, 'spec.proxy.listen_path');
  assert.match(
    clash.errors.map((e) => e.message).join('\n'),
    /on listen_port 8080 is already claimed by ApiDefinition default\/b/,
  );
});

test('deleting a template in use is refused, naming the Ingresses; unused, or used by Ingresses being deleted, admitted', async () => {
  const tpl = template('auth', { proxy: { listen_path: '/t/', target_url: 'http://t' } });
  const used = await validateApiDefinitionDelete(
    tpl,
    memoryLookups([ingress('shop', 'auth'), ingress('cart', 'auth'), ingress('other', 'not-auth')]),
  );
  assert.equal(used.errors.length, 1);
  assert.equal(used.errors[0]?.type, 'Forbidden');
  assert.match(
    used.errors.map((e) => e.message).join('\n'),
    /^template ApiDefinition default\/auth is still used by Ingress default\/cart, Ingress default\/shop: remove their svc.io\/template annotation/,
  );
  const going = await validateApiDefinitionDelete(
    tpl,
    memoryLookups([ingress('shop', 'auth', { deletionTimestamp: '2025-01-01T00:00:00Z' })]),
  );
  assert.deepEqual(going.errors, []);
  assert.deepEqual((await validateApiDefinitionDelete(tpl, memoryLookups([]))).errors, []);
  // Not a template: Ingresses naming it don't hold it (it is not theirs to use).
  const plain = apiDefinition('auth', { proxy: { listen_path: '/t/', target_url: 'http://t' } });
  assert.deepEqual(
    (await validateApiDefinitionDelete(plain, memoryLookups([ingress('shop', 'auth')]))).errors,
    [],
  );
});

test('an SvcOasApiDefinition template in use: its delete refused too', async () => {
  const { validateSvcOasApiDefinitionDelete } = await import('./oas-api-definition.validate.ts');
  const { oasApi } = await import('./testing.ts');
  const tpl = oasApi('petstore', 'petstore-oas');
  (tpl.metadata as Record<string, unknown>).labels = { template: 'true' };
  const got = await validateSvcOasApiDefinitionDelete(tpl, memoryLookups([ingress('shop', 'petstore')]));
  assert.match(
    got.errors.map((e) => e.message).join('\n'),
    /^template SvcOasApiDefinition default\/petstore is still used by Ingress default\/shop/,
  );
  assert.deepEqual((await validateSvcOasApiDefinitionDelete(tpl, memoryLookups([]))).errors, []);
});
