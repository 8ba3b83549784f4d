import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiObject } from './api-definition.ts';
import { TEMPLATE_FINALIZER, isTemplate, reconcileTemplate } from './template.ts';
import { assertReady, baseDeps } from './testing.ts';

const template = (extra: Partial<ApiObject['metadata']> = {}): ApiObject => ({
  apiVersion: 'svc.svc.io/v1alpha1',
  kind: 'ApiDefinition',
  metadata: {
    name: 'auth',
    namespace: 'web',
    generation: 1,
    labels: { 'svc.io/template': 'true' },
    ...extra,
  },
  spec: { name: 'auth', proxy: { listen_path: '/', target_url: 'http://x' } },
});

test('template labels: svc.io/template and the reference\'s template, "true" only', () => {
  assert.equal(isTemplate({ metadata: { labels: { 'svc.io/template': 'true' } } }), true);
  assert.equal(isTemplate({ metadata: { labels: { template: 'true' } } }), true);
  assert.equal(isTemplate({ metadata: { labels: { template: 'false' } } }), false);
  assert.equal(isTemplate({ metadata: {} }), false);
});

test('a template gets its finalizer and Ready=True, reason Template, naming its users', async () => {
  const deps = {
    ...baseDeps<ApiObject>({}),
    read: () => Promise.resolve(template()),
    users: () => ['web/shop'],
  };
  await reconcileTemplate('web/auth', deps);
  assert.deepEqual(deps.objects.finalizers, [`+${TEMPLATE_FINALIZER}`]);
  assertReady(deps.objects.statuses.at(-1), {
    status: 'True',
    reason: 'Template',
    message: /used by Ingress web\/shop/,
  });
});

test('a template being deleted is held while an Ingress uses it, and released after', async () => {
  const obj = template({ deletionTimestamp: new Date(), finalizers: [TEMPLATE_FINALIZER] });
  let users = ['web/shop', 'web/cart'];
  const deps = { ...baseDeps<ApiObject>({}), read: () => Promise.resolve(obj), users: () => users };
  await reconcileTemplate('web/auth', deps);
  assert.deepEqual(deps.objects.finalizers, []);
  assertReady(deps.objects.statuses.at(-1), {
    status: 'False',
    reason: 'InUse',
    message: /still used by Ingress web\/shop, Ingress web\/cart/,
  });
  assert.match(deps.events.lines.join('\n'), /Warning InUse/);
  users = [];
  await reconcileTemplate('web/auth', deps);
  assert.deepEqual(deps.objects.finalizers, [`-${TEMPLATE_FINALIZER}`]);
});

test('a template being deleted while the cache names no Ingress: the API server is asked first', async () => {
  const obj = template({ deletionTimestamp: new Date(), finalizers: [TEMPLATE_FINALIZER] });
  // An Ingress created a moment ago: listed by the API server, not in the informer's cache yet.
  let fresh = ['web/new'];
  const asked: string[] = [];
  const deps = {
    ...baseDeps<ApiObject>({}),
    read: () => Promise.resolve(obj),
    users: () => [],
    freshUsers: (key: string) => {
      asked.push(key);
      return Promise.resolve(fresh);
    },
  };
  await reconcileTemplate('web/auth', deps);
  assert.deepEqual(asked, ['web/auth']);
  assert.deepEqual(deps.objects.finalizers, []);
  assertReady(deps.objects.statuses.at(-1), {
    status: 'False',
    reason: 'InUse',
    message: /still used by Ingress web\/new/,
  });
  fresh = [];
  await reconcileTemplate('web/auth', deps);
  assert.deepEqual(deps.objects.finalizers, [`-${TEMPLATE_FINALIZER}`]);
});

test('an ApiDefinition that is not a template is not touched', async () => {
  const obj = template({ labels: {} });
  const deps = { ...baseDeps<ApiObject>({}), read: () => Promise.resolve(obj), users: () => [] };
  await reconcileTemplate('web/auth', deps);
  assert.deepEqual(deps.objects.finalizers, []);
  assert.deepEqual(deps.objects.statuses, []);
});
