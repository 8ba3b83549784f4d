import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldError, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { memoryLookups } from './memory-lookups.ts';
import { defaultPortal } from './portal.default.ts';
import {
  validateAPIDescription,
  validateAPIDescriptionDelete,
  validatePortalAPICatalogue,
  validatePortalConfig,
} from './portal.validate.ts';
import { securityPolicy } from './testing.ts';

type Obj = Record<string, unknown>;
const obj = (kind: string, name: string, spec: Obj, namespace = 'default'): Obj => ({
  apiVersion: 'svc.svc.io/v1alpha1',
  kind,
  metadata: { name, namespace },
  spec,
});
const validators: Record<string, (o: unknown, old: unknown, l: Lookups) => Promise<Verdict>> = {
  APIDescription: validateAPIDescription,
  PortalAPICatalogue: validatePortalAPICatalogue,
  PortalConfig: validatePortalConfig,
};

const OAS = JSON.stringify({ openapi: '3.0.3', info: { title: 'x', version: '1' }, paths: {} });
const NOT_YET = 'not supported by svc yet';

const cases: {
  name: string;
  kind: string;
  spec: Obj;
  cluster?: Obj[];
  errors?: FieldError[];
  warnings?: string[];
}[] = [
  {
    name: "the reference's 08-portal APIDescription (keyless, a policy, a docs URL)",
    kind: 'APIDescription',
    spec: {
      name: 'sample portal config',
      show: true,
      auth_type: 'keyless',
      version: 'v2',
      policyRef: { name: 'protect-api', namespace: 'default' },
      docs: { documentation: 'https://httpbin.org/spec.json', doc_type: 'swagger_custom_url' },
    },
    cluster: [securityPolicy('protect-api')],
  },
  {
    name: 'a policy not created yet: admitted with a warning',
    kind: 'APIDescription',
    spec: { name: 'p', auth_type: 'authToken', policyRef: { name: 'later' } },
    warnings: [
      'spec.policyRef: SecurityPolicy default/later does not exist yet: the product is published once it does',
    ],
  },
  {
    name: 'a keyed product without a policy',
    kind: 'APIDescription',
    spec: { name: 'p' },
    errors: [
      {
        path: 'spec.policyRef',
        type: 'Required',
        message:
          'developers get authToken access from a SecurityPolicy: name it in policyRef (or set auth_type keyless)',
      },
    ],
  },
  {
    name: "the reference's dcr.yaml APIDescription: auth_type jwt refused by name",
    kind: 'APIDescription',
    spec: {
      name: 'Sample DCR API',
      show: true,
      auth_type: 'jwt',
      policyRef: { name: 'jwt-policy', namespace: 'default' },
      docs: { documentation: 'https://httpbin.org/spec.json', doc_type: 'swagger_custom_url' },
    },
    cluster: [securityPolicy('jwt-policy')],
    errors: [
      {
        path: 'spec.auth_type',
        type: 'NotSupported',
        message:
          '"jwt": the portal issues keys from the policy (authToken) or none (keyless), no JWTs or OAuth clients yet; use authToken or keyless',
      },
    ],
  },
  {
    name: "svc's product fields: key approval and subscribable events",
    kind: 'APIDescription',
    spec: {
      name: 'Orders',
      auth_type: 'authToken',
      policyRef: { name: 'plan' },
      key_approval: 'auto',
      subscribable_events: ['order.created'],
    },
    cluster: [securityPolicy('plan')],
  },
  {
    name: 'custom fields are refused by name',
    kind: 'APIDescription',
    spec: { name: 'p', auth_type: 'keyless', fields: { team: 'orders' } },
    errors: [
      {
        path: 'spec.fields',
        type: 'NotSupportedYet',
        message: `${NOT_YET}: the portal shows no custom fields; write them in long_description`,
      },
    ],
  },
  {
    name: 'is_keyless beside another auth_type',
    kind: 'APIDescription',
    spec: { name: 'p', auth_type: 'authToken', is_keyless: true, policyRef: { name: 'plan' } },
    cluster: [securityPolicy('plan')],
    errors: [
      {
        path: 'spec.is_keyless',
        type: 'Invalid',
        message:
          'true says developers need no key, but auth_type is authToken: set auth_type keyless, or remove is_keyless',
      },
    ],
  },
  {
    name: 'an inline OpenAPI document',
    kind: 'APIDescription',
    spec: { name: 'p', auth_type: 'keyless', docs: { doc_type: 'swagger', documentation: OAS } },
  },
  {
    name: 'an inline document that is not OpenAPI',
    kind: 'APIDescription',
    spec: { name: 'p', auth_type: 'keyless', docs: { doc_type: 'swagger', documentation: '{"a": 1}' } },
    errors: [
      {
        path: 'spec.docs.documentation',
        type: 'Invalid',
        message:
          'doc_type swagger needs an OpenAPI document, and it has no openapi (or swagger) version field: write an OpenAPI document, or use doc_type swagger_custom_url with its URL',
      },
    ],
  },
  {
    name: 'a docs URL that is not http(s)',
    kind: 'APIDescription',
    spec: {
      name: 'p',
      auth_type: 'keyless',
      docs: { doc_type: 'swagger_custom_url', documentation: 'file:///etc/passwd' },
    },
    errors: [
      {
        path: 'spec.docs.documentation',
        type: 'Invalid',
        message: 'doc_type swagger_custom_url needs an http(s) URL of an OpenAPI document',
      },
    ],
  },
  {
    name: 'GraphQL documentation is refused by name',
    kind: 'APIDescription',
    spec: {
      name: 'p',
      auth_type: 'keyless',
      docs: { doc_type: 'graphql', documentation: 'type Query { a: Int }' },
    },
    errors: [
      {
        path: 'spec.docs.doc_type',
        type: 'NotSupported',
        message:
          '"graphql": the portal renders OpenAPI documentation only; use swagger (the document) or swagger_custom_url (its URL)',
      },
    ],
  },
  {
    name: 'docs without documentation',
    kind: 'APIDescription',
    spec: { name: 'p', auth_type: 'keyless', docs: { doc_type: 'swagger' } },
    errors: [
      {
        path: 'spec.docs.documentation',
        type: 'Required',
        message: 'doc_type swagger needs the documentation: set it, or remove docs',
      },
    ],
  },
  {
    name: "the reference's catalogue (apiDescriptionRef)",
    kind: 'PortalAPICatalogue',
    spec: { apis: [{ apiDescriptionRef: { name: 'sample-dcr-api', namespace: 'default' } }] },
    cluster: [obj('APIDescription', 'sample-dcr-api', { name: 'x', auth_type: 'keyless' })],
  },
  {
    name: "the reference's earlier catalogue form (name, namespace): read the same, with a warning",
    kind: 'PortalAPICatalogue',
    spec: { apis: [{ name: 'sample-portal-api', namespace: 'default' }] },
    cluster: [obj('APIDescription', 'sample-portal-api', { name: 'x', auth_type: 'keyless' })],
    warnings: [
      "spec.apis[0].name: read as apiDescriptionRef (the reference's earlier form): write apiDescriptionRef: {name, namespace}",
    ],
  },
  {
    name: 'a product listed twice, and one not created yet',
    kind: 'PortalAPICatalogue',
    spec: {
      apis: [
        { apiDescriptionRef: { name: 'a' } },
        { apiDescriptionRef: { name: 'a', namespace: 'default' } },
      ],
    },
    errors: [
      {
        path: 'spec.apis[1].apiDescriptionRef',
        type: 'Invalid',
        message:
          'APIDescription default/a is listed already at spec.apis[0].apiDescriptionRef: list each product once',
      },
    ],
    warnings: [
      'spec.apis[0].apiDescriptionRef: APIDescription default/a does not exist yet: the catalogue is published once it does',
      'spec.apis[1].apiDescriptionRef: APIDescription default/a does not exist yet: the catalogue is published once it does',
    ],
  },
  {
    name: "a catalogue owner's email: the dashboard sends no mail",
    kind: 'PortalAPICatalogue',
    spec: { email: 'owner@example.com' },
    errors: [
      { path: 'spec.email', type: 'NotSupportedYet', message: `${NOT_YET}: the dashboard sends no mail yet` },
    ],
  },
  { name: "the reference's PortalConfig {}", kind: 'PortalConfig', spec: {} },
  {
    name: 'sign-up, developer approval and session settings',
    kind: 'PortalConfig',
    spec: { disable_signup: true, developer_approval: 'auto', session_lifetime_s: 3600 },
  },
  {
    name: "the reference's portal-wide key approval: refused, pointing to the product's",
    kind: 'PortalConfig',
    spec: { require_key_approval: true },
    errors: [
      {
        path: 'spec.require_key_approval',
        type: 'NotSupportedYet',
        message: `${NOT_YET}: key approval is set per product in svc: key_approval on each APIDescription (manual waits for an admin)`,
      },
    ],
  },
  {
    name: "the reference's dcr.yaml PortalConfig: enable_dcr refused by name",
    kind: 'PortalConfig',
    spec: {
      enable_dcr: true,
      dcr_options: {
        provider: 'keycloak',
        grant_types: ['client_credentials'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
        idp_host: 'http://idp.example:8180',
        registration_endpoint:
          'http://idp.example:8180/auth/realms/master/clients-registrations/openid-connect',
      },
    },
    errors: [
      {
        path: 'spec.enable_dcr',
        type: 'NotSupportedYet',
        message: `${NOT_YET}: dynamic client registration registers an OAuth client at an OpenID provider for each key request; svc does not register clients at a provider yet, so enable_dcr would be stored and never done. Issue keys from the policy instead (auth_type authToken), or create OAuth clients in the dashboard`,
      },
    ],
  },
  {
    name: 'dcr_options without enable_dcr: admitted, said unused',
    kind: 'PortalConfig',
    spec: { dcr_options: { provider: 'okta' } },
    warnings: ['spec.dcr_options: not used: enable_dcr is not true (and svc does not register clients yet)'],
  },
  {
    name: 'settings not enforced yet are refused each by name; false ones are neutral',
    kind: 'PortalConfig',
    spec: { signup_fields: ['company'], disable_login: false, mail_options: { mail_from_name: 'Portal' } },
    errors: [
      {
        path: 'spec.signup_fields',
        type: 'NotSupportedYet',
        message: `${NOT_YET}: the portal asks no extra sign-up fields yet`,
      },
      {
        path: 'spec.mail_options',
        type: 'NotSupportedYet',
        message: `${NOT_YET}: the dashboard sends no mail yet`,
      },
    ],
  },
];

for (const c of cases) {
  test(`${c.kind}: ${c.name}`, async () => {
    const validate = validators[c.kind];
    assert.ok(validate);
    const v = await validate(obj(c.kind, 'x', c.spec), undefined, memoryLookups(c.cluster ?? []));
    assert.deepEqual(v.errors, c.errors ?? []);
    assert.deepEqual(v.warnings, c.warnings ?? []);
  });
}

test('the schemas refuse unknown fields and values, naming the path', async () => {
  const v = await validateAPIDescription(
    obj('APIDescription', 'x', { name: 'p', auth_type: 'basic', documentation: 'x' }),
    undefined,
    memoryLookups([]),
  );
  assert.deepEqual(v.errors.map((e) => e.path).sort(), ['spec.auth_type', 'spec.documentation']);
  const c = await validatePortalConfig(
    obj('PortalConfig', 'x', { dcr_options: { provider: 'auth0' } }),
    undefined,
    memoryLookups([]),
  );
  assert.deepEqual(
    c.errors.map((e) => e.path),
    ['spec.dcr_options.provider'],
  );
});

test('deleting an APIDescription a catalogue lists is refused naming it', async () => {
  const cluster = [
    obj('APIDescription', 'a', { name: 'A', auth_type: 'keyless' }),
    obj('PortalAPICatalogue', 'cat', { apis: [{ apiDescriptionRef: { name: 'a', namespace: 'default' } }] }),
  ];
  const held = await validateAPIDescriptionDelete(cluster[0], memoryLookups(cluster));
  assert.deepEqual(held.errors, [
    {
      path: 'metadata.name',
      type: 'Forbidden',
      message:
        'APIDescription default/a is still used by PortalAPICatalogue default/cat: remove it from the apis of these catalogues (or delete them) first',
    },
  ]);
  const free = await validateAPIDescriptionDelete(obj('APIDescription', 'b', {}), memoryLookups(cluster));
  assert.deepEqual(free.errors, []);
});

test('defaults: the namespaces of contextRef, policyRef and the catalogue entries', () => {
  const d = defaultPortal(
    obj('APIDescription', 'x', { name: 'p', policyRef: { name: 'plan' }, contextRef: { name: 'c' } }, 'shop'),
  ) as { spec: Obj };
  assert.deepEqual(d.spec.policyRef, { name: 'plan', namespace: 'shop' });
  assert.deepEqual(d.spec.contextRef, { name: 'c', namespace: 'shop' });
  const c = defaultPortal(
    obj('PortalAPICatalogue', 'x', { apis: [{ apiDescriptionRef: { name: 'a' } }, { name: 'b' }] }, 'shop'),
  ) as { spec: Obj };
  assert.deepEqual(c.spec.apis, [{ apiDescriptionRef: { name: 'a', namespace: 'shop' } }, { name: 'b' }]);
});
