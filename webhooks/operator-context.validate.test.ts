import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import { validateOperatorContext, validateOperatorContextDelete } from './operator-context.validate.ts';
import { apiDefinition, oasApi, operatorContext, secret, securityPolicy } from './testing.ts';

const ALL_KEYS = ['SVC_AUTH', 'SVC_ORG', 'SVC_MODE', 'SVC_URL'];
const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
/** License keys of each form: unsigned, and signed (ES256; the signature is not checked here). */
const UNSIGNED = `${b64({ alg: 'none' })}.${b64({ sub: 'acme' })}.`;
const SIGNED_FORM = `${b64({ alg: 'ES256' })}.${b64({ sub: 'acme' })}.c2lnbmF0dXJl`;

const cases: {
  name: string;
  spec: Record<string, unknown>;
  cluster?: Record<string, unknown>[];
  errors?: FieldError[];
  warnings?: string[];
}[] = [
  {
    name: 'env and a Secret with the credentials',
    spec: { env: { mode: 'ce', url: 'http://svc-gateway.payments.svc:8080' }, secretRef: { name: 'conf' } },
    cluster: [secret('conf', ['SVC_AUTH', 'SVC_ORG'])],
  },
  {
    name: 'only a Secret',
    spec: { secretRef: { name: 'conf', namespace: 'creds' } },
    cluster: [secret('conf', ALL_KEYS, 'creds')],
  },
  {
    name: 'neither env nor secretRef',
    spec: {},
    errors: [
      {
        path: 'spec',
        type: 'Required',
        message: 'set env (mode, url, auth, org), secretRef (a Secret with SVC_* keys), or both',
      },
    ],
  },
  {
    name: 'an unknown mode',
    spec: { env: { mode: 'enterprise', url: 'http://gw', auth: 'k', org: 'o' } },
    errors: [
      {
        path: 'spec.env.mode',
        type: 'NotSupported',
        message: '"enterprise": use ce (a gateway) or pro (a dashboard)',
      },
    ],
    warnings: [
      'spec.env.auth: the API key is stored in the resource in plain text: move it to the Secret of secretRef as SVC_AUTH',
    ],
  },
  {
    name: 'a URL that is not one',
    spec: { env: { mode: 'ce', url: 'http//gateway:8080' }, secretRef: { name: 'conf' } },
    cluster: [secret('conf', ALL_KEYS)],
    errors: [
      {
        path: 'spec.env.url',
        type: 'Invalid',
        message:
          '"http//gateway:8080" is not an absolute URL: write the scheme and host, such as http://svc-gateway.svc-system.svc:8080',
      },
    ],
  },
  {
    name: 'an unsigned license key (alg none) written in env: refused, the key not echoed',
    spec: {
      env: { mode: 'pro', url: 'http://dash:3000', licenseKey: UNSIGNED },
      secretRef: { name: 'conf' },
    },
    cluster: [secret('conf', ALL_KEYS)],
    errors: [
      {
        path: 'spec.env.licenseKey',
        type: 'Invalid',
        message:
          'license key is not signed (alg none): unsigned license keys are refused: use the signed key you were given',
      },
    ],
  },
  {
    name: 'a signed license key written in env: admitted (the operator verifies its signature)',
    spec: {
      env: { mode: 'pro', url: 'http://dash:3000', licenseKey: SIGNED_FORM },
      secretRef: { name: 'conf' },
    },
    cluster: [secret('conf', ALL_KEYS)],
  },
  {
    name: 'a URL of another scheme',
    spec: { env: { url: 'ftp://gateway' }, secretRef: { name: 'conf' } },
    cluster: [secret('conf', ALL_KEYS)],
    errors: [
      {
        path: 'spec.env.url',
        type: 'Invalid',
        message: '"ftp://gateway" has the scheme "ftp": use http, https',
      },
    ],
  },
  {
    name: 'the Secret does not exist yet: admitted with a warning (it may be applied after)',
    spec: { env: { mode: 'ce', url: 'http://gw' }, secretRef: { name: 'missing' } },
    warnings: [
      'spec.secretRef.name: Secret default/missing not found (yet): the context is not Ready until it exists (with keys such as SVC_AUTH and SVC_ORG)',
    ],
  },
  {
    name: 'settings in neither place, and pro without a license (warnings)',
    spec: { env: { mode: 'pro' }, secretRef: { name: 'conf' } },
    cluster: [secret('conf', ['SVC_AUTH'])],
    warnings: [
      'spec.env.url: not set here nor as the key SVC_URL of Secret default/conf: the context is incomplete',
      'spec.env.org: not set here nor as the key SVC_ORG of Secret default/conf: the context is incomplete',
      'spec.env.licenseKey: mode pro needs a license key: set SVC_OPERATOR_LICENSEKEY in the Secret of secretRef',
    ],
  },
];

describe('validateOperatorContext', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const got = await validateOperatorContext(
        operatorContext('gw', c.spec),
        undefined,
        memoryLookups(c.cluster ?? []),
      );
      assert.deepEqual(got, { errors: c.errors ?? [], warnings: c.warnings ?? [] });
    });
  }
});

describe('validateOperatorContextDelete', () => {
  test('refused while resources use it, listing them', async () => {
    const got = await validateOperatorContextDelete(
      operatorContext('gw', { env: { mode: 'ce' } }),
      memoryLookups([
        apiDefinition('a', { contextRef: { name: 'gw' } }),
        apiDefinition('b', { contextRef: { name: 'gw', namespace: 'default' } }, 'team'),
        apiDefinition('c', { contextRef: { name: 'gw' } }, 'team'),
        {
          ...oasApi('o', 'cm'),
          spec: { contextRef: { name: 'gw' }, svcOAS: { configmapRef: { name: 'cm', keyName: 'k' } } },
        },
        securityPolicy('p', { contextRef: { name: 'gw' } }),
      ]),
    );
    assert.deepEqual(got.errors, [
      {
        path: 'metadata.name',
        type: 'Forbidden',
        message:
          'OperatorContext default/gw is still used by ApiDefinition default/a, ApiDefinition team/b, SvcOasApiDefinition default/o, SecurityPolicy default/p: point their contextRef at another context (or delete them) first',
      },
    ]);
  });
  test('admitted when unused', async () => {
    const got = await validateOperatorContextDelete(
      operatorContext('gw', {}),
      memoryLookups([apiDefinition('a')]),
    );
    assert.deepEqual(got, { errors: [], warnings: [] });
  });
});
