import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import {
  validateSvcOasApiDefinition,
  validateSvcOasApiDefinitionDelete,
} from './oas-api-definition.validate.ts';
import {
  apiDefinition,
  configMap,
  oasApi,
  oasDocument,
  secret,
  securityPolicy,
  streamsDocument,
} from './testing.ts';

interface Case {
  name: string;
  obj?: Record<string, unknown>;
  cluster: Record<string, unknown>[];
  errors?: FieldError[];
  warnings?: string[];
}

const KEY = 'spec.svcOAS.configmapRef.keyName';
const doc = (text: string): Record<string, unknown> => configMap('pets-oas', { 'oas.yaml': text });
const err = (message: string, type: FieldError['type'] = 'Invalid'): FieldError => ({
  path: KEY,
  type,
  message,
});

/** An SvcOasApiDefinition naming certificates by Secret (the reference's forms). */
const withCertRefs = (mutualTLSDomain = 'petstore.default.svc'): Record<string, unknown> => {
  const api = oasApi('pets', 'pets-oas');
  return {
    ...api,
    spec: {
      ...(api.spec as Record<string, unknown>),
      clientCertificate: { enabled: true, allowlist: ['partner'] },
      mutualTLS: {
        enabled: true,
        domainToCertificateMapping: [{ domain: mutualTLSDomain, certificateRef: 'to-upstream' }],
      },
      certificatePinning: {
        enabled: true,
        domainToPublicKeysMapping: [{ domain: '*.default.svc', publicKeyRefs: ['upstream-pin'] }],
      },
    },
  };
};
const tlsKeys = ['tls.crt', 'tls.key'];
const HTTPS_PORT_WARNING =
  "spec.clientCertificate: static mutual TLS is served on the gateway's HTTPS port (https_port) only, where clients can present certificates; a gateway without one refuses the API";
/** The petstore document with an upstream certificate of its own for `petstore.default.svc`. */
const docWithUpstreamCert = oasDocument().replace(
  '    url: http://petstore.default.svc:8080\n',
  `    url: http://petstore.default.svc:8080\n    mutualTLS:\n      enabled: true\n      domainToCertificateMapping:\n        - domain: petstore.default.svc\n          certificate: org1${'a'.repeat(64)}\n`,
);

const cases: Case[] = [
  { name: 'a YAML document', cluster: [doc(oasDocument())] },
  {
    name: 'certificates by Secret, the Secrets there: admitted, with the HTTPS port warning',
    obj: withCertRefs(),
    cluster: [
      doc(oasDocument()),
      secret('partner', tlsKeys),
      secret('to-upstream', tlsKeys),
      secret('upstream-pin', ['tls.crt']),
    ],
    warnings: [HTTPS_PORT_WARNING],
  },
  {
    name: 'certificates by Secret, the Secrets missing: admitted, each Secret warned of at its path',
    obj: withCertRefs(),
    cluster: [doc(oasDocument())],
    warnings: [
      'spec.clientCertificate.allowlist[0]: Secret default/partner does not exist yet: the API is not served until it does',
      'spec.mutualTLS.domainToCertificateMapping[0].certificateRef: Secret default/to-upstream does not exist yet: the API is not served until it does',
      'spec.certificatePinning.domainToPublicKeysMapping[0].publicKeyRefs[0]: Secret default/upstream-pin does not exist yet: the API is not served until it does',
      HTTPS_PORT_WARNING,
    ],
  },
  {
    name: "the custom domain's certificates by Secret, the Secret missing: admitted, warned of at its path and of the HTTPS port",
    obj: {
      ...oasApi('pets', 'pets-oas'),
      spec: {
        ...(oasApi('pets', 'pets-oas').spec as Record<string, unknown>),
        customDomain: { enabled: true, name: 'pets.example.com', certificatesRef: ['pets-tls'] },
      },
    },
    cluster: [doc(oasDocument())],
    warnings: [
      'spec.customDomain.certificatesRef[0]: Secret default/pets-tls does not exist yet: the API is not served until it does',
      "spec.customDomain.certificatesRef: an API with certificates for its domain is served on the gateway's HTTPS port (https_port) only, over HTTPS; a gateway without one refuses the API",
    ],
  },
  {
    name: 'a mapped domain that is not an upstream host: refused at its path',
    obj: withCertRefs('https://petstore:8080'),
    cluster: [
      doc(oasDocument()),
      secret('partner', tlsKeys),
      secret('to-upstream', tlsKeys),
      secret('upstream-pin', ['tls.crt']),
    ],
    errors: [
      {
        path: 'spec.mutualTLS.domainToCertificateMapping[0].domain',
        type: 'Invalid',
        message:
          '"https://petstore:8080" is not an upstream host: write one such as api.example.com, *.example.com for its subdomains, or * for any host (no scheme, no port)',
      },
    ],
    warnings: [HTTPS_PORT_WARNING],
  },
  {
    name: 'a domain the document maps a certificate to as well: refused at the spec entry',
    obj: withCertRefs('Petstore.default.svc'),
    cluster: [
      doc(docWithUpstreamCert),
      secret('partner', tlsKeys),
      secret('to-upstream', tlsKeys),
      secret('upstream-pin', ['tls.crt']),
    ],
    errors: [
      {
        path: 'spec.mutualTLS.domainToCertificateMapping[0].domain',
        type: 'Invalid',
        message:
          '"Petstore.default.svc" is mapped in the document too (x-svc-api-gateway.upstream.mutualTLS.domainToCertificateMapping): a host is presented one certificate; keep one of the two entries',
      },
    ],
    warnings: [HTTPS_PORT_WARNING],
  },
  {
    name: 'a JSON document',
    obj: oasApi('pets', 'pets-oas', 'oas.json'),
    cluster: [
      configMap('pets-oas', {
        'oas.json': JSON.stringify({
          openapi: '3.1.0',
          info: { title: 'Pets', version: '1' },
          paths: {},
          'x-svc-api-gateway': {
            info: { name: 'pets', state: { active: true } },
            upstream: { url: 'http://pets' },
            server: { listenPath: { value: '/pets/' } },
          },
        }),
      }),
    ],
  },
  {
    name: 'a ConfigMap in another namespace',
    obj: oasApi('pets', 'pets-oas', 'oas.yaml', 'default', { namespace: 'docs' }),
    cluster: [configMap('pets-oas', { 'oas.yaml': oasDocument() }, 'docs')],
  },
  {
    name: 'the ConfigMap does not exist',
    cluster: [],
    errors: [
      {
        path: 'spec.svcOAS.configmapRef.name',
        type: 'Invalid',
        message:
          'ConfigMap default/pets-oas not found: create it first, or point configmapRef at the ConfigMap that holds the document',
      },
    ],
  },
  {
    name: 'configmapRef.namespace is where the ConfigMap is looked up',
    obj: oasApi('pets', 'pets-oas', 'oas.yaml', 'default', { namespace: 'docs' }),
    cluster: [doc(oasDocument())],
    errors: [
      {
        path: 'spec.svcOAS.configmapRef.name',
        type: 'Invalid',
        message:
          'ConfigMap docs/pets-oas not found: create it first, or point configmapRef at the ConfigMap that holds the document',
      },
    ],
  },
  {
    name: 'the key does not exist',
    cluster: [configMap('pets-oas', { 'oas.json': '{}', README: 'x' })],
    errors: [
      err(
        'ConfigMap default/pets-oas has no key "oas.yaml" (it has "oas.json", "README"): set keyName to the key that holds the document',
      ),
    ],
  },
  {
    name: 'the key is in binaryData',
    cluster: [{ ...configMap('pets-oas', {}), binaryData: { 'oas.yaml': 'b3BlbmFwaTogMy4wLjM=' } }],
    errors: [
      err('ConfigMap default/pets-oas holds "oas.yaml" in binaryData: put the document under data, as text'),
    ],
  },
  {
    name: 'more than 1 MiB',
    cluster: [doc(`${oasDocument()}\n# ${'x'.repeat(1024 * 1024)}\n`)],
    errors: [
      err(
        `the document is ${Buffer.byteLength(oasDocument()) + 1024 * 1024 + 4} bytes, more than 1 MiB (1048576 bytes): split the API into smaller APIs`,
        'TooLong',
      ),
    ],
  },
  {
    name: 'more than kubectl apply can annotate (warning)',
    cluster: [doc(`${oasDocument()}\n# ${'x'.repeat(300_000)}\n`)],
    warnings: [
      `${KEY}: the document is ${Buffer.byteLength(oasDocument()) + 300_004} bytes; kubectl apply (client-side) copies it into an annotation limited to 262144 bytes: create or replace its ConfigMap, or use kubectl apply --server-side`,
    ],
  },
  {
    name: 'broken YAML',
    cluster: [doc('openapi: 3.0.3\ninfo: [unclosed\n')],
    errors: [
      err(
        'the document does not parse as JSON or YAML (Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1): fix its syntax',
      ),
    ],
  },
  {
    name: 'broken JSON',
    cluster: [doc('{"openapi": "3.0.3",}')],
    errors: [
      err(
        `the document does not parse as JSON or YAML (Expected double-quoted property name in JSON at position 20 (line 1 column 21)): fix its syntax`,
      ),
    ],
  },
  {
    name: 'a list, not a document',
    cluster: [doc('- a\n- b\n')],
    errors: [
      err(
        'the document is a list: it must be an OpenAPI 3.x document (a mapping with openapi, info, paths and x-svc-api-gateway)',
      ),
    ],
  },
  {
    name: 'an empty document',
    cluster: [doc('')],
    errors: [
      err(
        'the document is empty: it must be an OpenAPI 3.x document (a mapping with openapi, info, paths and x-svc-api-gateway)',
      ),
    ],
  },
  {
    name: 'Swagger 2.0 is not OpenAPI 3.x',
    cluster: [doc(oasDocument().replace('openapi: 3.0.3', 'openapi: "2.0"'))],
    errors: [
      err('the document\'s openapi is "2.0": it must be an OpenAPI 3.x document (openapi: 3.0.3 or 3.1.0)'),
    ],
  },
  {
    name: 'no openapi field and no extension',
    cluster: [doc('info:\n  title: t\n  version: v\npaths: {}\n')],
    errors: [
      err('the document has no openapi field: it must be an OpenAPI 3.x document (openapi: 3.0.3 or 3.1.0)'),
      err(
        'the document has no x-svc-api-gateway extension: add it with info.name, info.state.active, upstream.url and server.listenPath.value',
        'Required',
      ),
    ],
  },
  {
    name: 'the extension is checked against its schema, with paths inside the document',
    cluster: [
      doc(
        oasDocument()
          .replace('value: /petstore/', 'value: petstore/')
          .replace('  upstream:\n    url: http://petstore.default.svc:8080\n', ''),
      ),
    ],
    errors: [
      err('in the document at x-svc-api-gateway.upstream: add this field', 'Required'),
      err('in the document at x-svc-api-gateway.server.listenPath.value: must match ^/'),
    ],
  },
  {
    name: 'x-svc-streaming in an OAS API is ignored (warning)',
    cluster: [doc(streamsDocument())],
    warnings: [
      `${KEY}: the document has x-svc-streaming, which an SvcOasApiDefinition ignores: use SvcStreamsApiDefinition to serve its streams`,
    ],
  },
  {
    name: 'a listen path another API claims',
    cluster: [doc(oasDocument('/orders/')), apiDefinition('orders')],
    errors: [
      err(
        'listen path "/orders/" (no domain) is already claimed by ApiDefinition default/orders on the same gateway: choose another listen path or domain',
      ),
    ],
  },
  {
    name: 'a listen path another API claims in other capitals',
    cluster: [doc(oasDocument('/Orders')), apiDefinition('orders')],
    errors: [
      err(
        'listen path "/Orders" (no domain) is already claimed by ApiDefinition default/orders on the same gateway: choose another listen path or domain',
      ),
    ],
  },
  {
    name: 'the listen path follows the rule of classic APIs: canonical',
    cluster: [doc(oasDocument('//pets/'))],
    errors: [
      err(
        'in the document at x-svc-api-gateway.server.listenPath.value: "//pets/" has an empty segment ("//"): write "/pets/"',
      ),
    ],
  },
  {
    name: "the listen path follows the rule of classic APIs: not the management API's",
    cluster: [doc(oasDocument('/ready/pets/'))],
    errors: [
      err(
        `in the document at x-svc-api-gateway.server.listenPath.value: "/ready/pets/": the gateway's management API answers /ready and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own`,
      ),
    ],
  },
  {
    name: 'the same listen path on another custom domain is fine',
    cluster: [
      doc(
        oasDocument('/orders/').replace(
          '  server:\n',
          '  server:\n    customDomain:\n      enabled: true\n      name: pets.example.com\n',
        ),
      ),
      apiDefinition('orders'),
    ],
  },
  {
    name: "the gateway's check of an OAS API: settings it does not enforce, by document path",
    cluster: [
      doc(
        `${oasDocument()}  middleware:\n    global:\n      contextVariables:\n        enabled: true\n      rateLimit:\n        enabled: true\n        rate: 10\n        per: 500ms\n`,
      ),
    ],
    errors: [
      err(
        'in the document at x-svc-api-gateway.middleware.global.rateLimit.per: "500ms" is not a duration of whole seconds: write one such as 1s, 30s, 1m or 1h30m',
      ),
      err(
        'in the document at x-svc-api-gateway.middleware.global.contextVariables: not supported yet by this gateway: remove it (the gateway keeps no setting it does not enforce)',
        'NotSupported',
      ),
    ],
  },
  {
    name: "the gateway's check of an OAS API: a required scheme the extension does not enable",
    cluster: [
      doc(
        oasDocument().replace(
          '        token:\n          enabled: true',
          '        token:\n          enabled: false',
        ),
      ),
    ],
    errors: [
      err(
        'in the document at x-svc-api-gateway.server.authentication.securitySchemes.token.enabled: the document\'s security requires "token": set enabled to true, so that the gateway enforces it',
        'Required',
      ),
    ],
  },
  {
    name: "the gateway's check of an OAS API: the classic rules, at document paths",
    cluster: [doc(oasDocument().replace('url: http://petstore.default.svc:8080', 'url: ftp://files'))],
    errors: [
      err(
        'in the document at x-svc-api-gateway.upstream.url: "ftp://files": the scheme "ftp" is not supported yet by this gateway: proxy to an http:// or https:// address, such as http://orders.default.svc:8080',
        'NotSupported',
      ),
    ],
  },
  {
    name: 'a reference the schema refuses is not looked up',
    obj: {
      ...oasApi('pets', 'pets-oas'),
      spec: { svcOAS: { configmapRef: { name: 'Pets_OAS', keyName: 'oas.yaml' } } },
    },
    cluster: [],
    errors: [
      {
        path: 'spec.svcOAS.configmapRef.name',
        type: 'Invalid',
        message: 'must match ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
      },
    ],
  },
  {
    name: 'a missing configmapRef is a schema error',
    obj: { ...oasApi('pets', 'pets-oas'), spec: { svcOAS: {} } },
    cluster: [],
    errors: [{ path: 'spec.svcOAS.configmapRef', type: 'Required', message: 'add this field' }],
  },
];

describe('validateSvcOasApiDefinition', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const got = await validateSvcOasApiDefinition(
        c.obj ?? oasApi('pets', 'pets-oas'),
        undefined,
        memoryLookups(c.cluster),
      );
      assert.deepEqual(got, { errors: c.errors ?? [], warnings: c.warnings ?? [] });
    });
  }
});

describe('validateSvcOasApiDefinitionDelete', () => {
  test('refused while a policy covers it', async () => {
    const got = await validateSvcOasApiDefinitionDelete(
      oasApi('pets', 'pets-oas'),
      memoryLookups([
        securityPolicy('gold', { access_rights_array: [{ name: 'pets', kind: 'SvcOasApiDefinition' }] }),
        securityPolicy('classic', { access_rights_array: [{ name: 'pets' }] }),
      ]),
    );
    assert.deepEqual(got.errors, [
      {
        path: 'metadata.name',
        type: 'Forbidden',
        message:
          'SvcOasApiDefinition default/pets is still used by SecurityPolicy default/gold: remove it from the access_rights_array of these policies (or delete them) first',
      },
    ]);
  });
  test('admitted when no policy covers it', async () => {
    const got = await validateSvcOasApiDefinitionDelete(oasApi('pets', 'pets-oas'), memoryLookups([]));
    assert.deepEqual(got, { errors: [], warnings: [] });
  });
});
