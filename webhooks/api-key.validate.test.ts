import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateApiKey } from './api-key.validate.ts';
import { defaultApiKey } from './api-key.default.ts';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import { apiDefinition, securityPolicy } from './testing.ts';

const apiKey = (spec: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: 'svc.svc.io/v1alpha1',
  kind: 'ApiKey',
  metadata: { name: 'k', namespace: 'default' },
  spec,
});

const cases: {
  name: string;
  spec: Record<string, unknown>;
  cluster?: Record<string, unknown>[];
  errors?: FieldError[];
  warnings?: string[];
}[] = [
  {
    name: 'a token key with a policy that exists',
    spec: { type: 'token', policies: ['plan'], expiresAt: '2030-01-01T00:00:00Z' },
    cluster: [securityPolicy('plan')],
  },
  {
    name: 'a policy not created yet: admitted with a warning',
    spec: { policies: [{ name: 'later', namespace: 'other' }] },
    warnings: [
      'spec.policies[0]: SecurityPolicy other/later does not exist yet: the key is created once it does',
    ],
  },
  {
    name: 'accessRights in the SecurityPolicy form, the API existing',
    spec: {
      accessRights: [
        { name: 'orders', versions: ['Default'], allowed_urls: [{ url: '/get(.*)', methods: ['GET'] }] },
      ],
    },
    cluster: [apiDefinition('orders')],
  },
  {
    name: 'accessRights naming an API not created yet: admitted with a warning',
    spec: { accessRights: [{ name: 'later', kind: 'SvcOasApiDefinition' }] },
    warnings: [
      'spec.accessRights[0]: SvcOasApiDefinition default/later does not exist yet: the key covers it once it is created',
    ],
  },
  {
    name: 'accessRights naming an HTTPRoute not created yet, with a quota: admitted (the operator waits)',
    spec: {
      accessRights: [{ kind: 'HTTPRoute', name: 'shop', limit: { quota_max: 2, quota_renewal_rate: 60 } }],
    },
  },
  {
    name: 'accessRights naming an HTTPRoute with a version other than Default',
    spec: { accessRights: [{ kind: 'HTTPRoute', name: 'shop', versions: ['Default', 'v2'] }] },
    errors: [
      {
        path: 'spec.accessRights[0].versions',
        type: 'Invalid',
        message:
          'the APIs generated for an HTTPRoute have one version, "Default": write versions: ["Default"] or leave it out',
      },
    ],
  },
  {
    name: 'accessRights naming one API twice',
    spec: { accessRights: [{ name: 'orders' }, { name: 'orders', namespace: 'default' }] },
    cluster: [apiDefinition('orders')],
    errors: [
      {
        path: 'spec.accessRights[1]',
        type: 'Invalid',
        message: 'duplicates accessRights[0] (ApiDefinition default/orders): merge the two entries',
      },
    ],
  },
  {
    name: 'basic without a user name',
    spec: { type: 'basic' },
    errors: [
      { path: 'spec.username', type: 'Required', message: 'a basic key names its user: set username' },
    ],
  },
  {
    name: 'a user name on a token key',
    spec: { type: 'token', username: 'ann' },
    errors: [
      {
        path: 'spec.username',
        type: 'Forbidden',
        message: 'only basic keys have a user name; remove it, or set type: basic',
      },
    ],
  },
  {
    name: 'a certificate key bound by its Secret',
    spec: { type: 'certificate', certificateSecretRef: 'client-tls', policies: ['plan'] },
    cluster: [securityPolicy('plan')],
  },
  {
    name: 'a certificate key without its Secret, with a token Secret, rotate and an overlap',
    spec: { type: 'certificate', secretRef: { name: 'x' }, rotate: '1', rotation: { overlapSeconds: 5 } },
    errors: [
      {
        path: 'spec.certificateSecretRef',
        type: 'Required',
        message: 'a certificate key names the kubernetes.io/tls Secret of its client certificate',
      },
      {
        path: 'spec.rotate',
        type: 'Forbidden',
        message: 'a certificate key is rotated by putting a new certificate in its Secret; remove it',
      },
      {
        path: 'spec.rotation.overlapSeconds',
        type: 'Forbidden',
        message:
          'a certificate key is bound to one certificate at a time: a new one replaces the old at once; set 0',
      },
      {
        path: 'spec.secretRef',
        type: 'Forbidden',
        message:
          'a certificate key has no token: the certificate of certificateSecretRef is its credential; remove it',
      },
    ],
  },
  {
    name: 'an overlap on a basic user',
    spec: { type: 'basic', username: 'ann', rotation: { overlapSeconds: 60 } },
    errors: [
      {
        path: 'spec.rotation.overlapSeconds',
        type: 'Forbidden',
        message: 'a basic user has one password at a time: a new one replaces the old at once; set 0',
      },
    ],
  },
];

for (const c of cases) {
  test(`ApiKey: ${c.name}`, async () => {
    const v = await validateApiKey(apiKey(c.spec), undefined, memoryLookups(c.cluster ?? []));
    assert.deepEqual(v.errors, c.errors ?? []);
    assert.deepEqual(v.warnings, c.warnings ?? []);
  });
}

test('ApiKey: the schema refuses an unknown type and field, naming the path', async () => {
  const v = await validateApiKey(apiKey({ type: 'oauth', secret: 'x' }), undefined, memoryLookups([]));
  const paths = v.errors.map((e) => e.path).sort();
  assert.deepEqual(paths, ['spec.secret', 'spec.type']);
});

test('ApiKey defaults: the contextRef namespace only; spec fields are left to the CRD', () => {
  const out = defaultApiKey(apiKey({ contextRef: { name: 'ctx' }, policies: ['plan'] })) as {
    spec: Record<string, unknown>;
  };
  assert.deepEqual(out.spec, { contextRef: { name: 'ctx', namespace: 'default' }, policies: ['plan'] });
});

test('ApiKey: an allowed URL that is not a regular expression is refused at its path', async () => {
  const v = await validateApiKey(
    apiKey({ accessRights: [{ name: 'orders', allowed_urls: [{ url: '/get(', methods: ['GET'] }] }] }),
    undefined,
    memoryLookups([apiDefinition('orders')]),
  );
  assert.deepEqual(
    v.errors.map((e) => [e.path, e.type]),
    [['spec.accessRights[0].allowed_urls[0].url', 'Invalid']],
  );
});
