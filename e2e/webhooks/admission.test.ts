/**
 * Admission end to end: a real kube-apiserver calls the real webhook server (node
 * webhooks/main.ts) over TLS, through the chart's own webhook configurations pointed at
 * https://127.0.0.1:<port> with a caBundle from this test. Manifests are applied with kubectl,
 * as a user would, and the suite reads what kubectl prints and what is stored.
 *
 * The API server runs the CRD's own checks (schema, CEL) between the mutating and the
 * validating webhooks, so a rule that CEL also states is answered with the CEL message (ours
 * too, from schemas/); the tables say which.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { waitFor } from '../harness/processes.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import {
  apiDefinition,
  configMap,
  oasApi,
  oasDocument,
  operatorContext,
  secret,
  securityPolicy,
  streamsApi,
  streamsDocument,
} from '../../webhooks/testing.ts';
import {
  admitted,
  apply,
  getObject,
  refusedWith,
  root,
  startWebhooksSuite,
  type WebhooksSuite,
} from './helpers.ts';

let cp: ControlPlane;
let suite: WebhooksSuite;

type Manifest = Record<string, unknown>;

before(async () => {
  suite = await startWebhooksSuite('webhooks-e2e');
  cp = suite.cp;
});

after(() => suite.stop());

describe('defaults appear on the stored objects', () => {
  test('SecurityPolicy access rights: kind, namespace and versions', async () => {
    admitted(await apply(cp, apiDefinition('orders')));
    admitted(
      await apply(cp, [
        configMap('petstore-oas', { 'oas.yaml': oasDocument() }),
        oasApi('petstore', 'petstore-oas'),
        securityPolicy('standard', {
          access_rights_array: [{ name: 'orders' }, { name: 'petstore', kind: 'SvcOasApiDefinition' }],
        }),
      ]),
    );
    const policy = await getObject(cp, 'securitypolicy', 'standard');
    assert.deepEqual((policy.spec as Manifest).access_rights_array, [
      { name: 'orders', kind: 'ApiDefinition', namespace: 'default', versions: ['Default'] },
      { name: 'petstore', kind: 'SvcOasApiDefinition', namespace: 'default', versions: [''] },
    ]);
  });

  test('SecurityPolicy access rights naming an HTTPRoute not created yet: admitted, namespace and version Default', async () => {
    admitted(
      await apply(
        cp,
        securityPolicy('routes', {
          access_rights_array: [
            { kind: 'HTTPRoute', name: 'shop', limit: { quota_max: 2, quota_renewal_rate: 60 } },
          ],
        }),
      ),
    );
    const policy = await getObject(cp, 'securitypolicy', 'routes');
    assert.deepEqual((policy.spec as Manifest).access_rights_array, [
      {
        kind: 'HTTPRoute',
        name: 'shop',
        namespace: 'default',
        versions: ['Default'],
        limit: { quota_max: 2, quota_renewal_rate: 60 },
      },
    ]);
  });

  test('configmapRef.namespace of an OAS API', async () => {
    const api = await getObject(cp, 'svcoasapidefinition', 'petstore');
    assert.deepEqual(api.spec, {
      svcOAS: { configmapRef: { name: 'petstore-oas', keyName: 'oas.yaml', namespace: 'default' } },
    });
  });

  test('secretRef.namespace of an OperatorContext, contextRef.namespace of an API', async () => {
    admitted(
      await apply(cp, [
        secret('team-conf', ['SVC_AUTH', 'SVC_ORG']),
        operatorContext('team', {
          env: { mode: 'ce', url: 'http://gw.team.svc:8080' },
          secretRef: { name: 'team-conf' },
        }),
        apiDefinition('team-api', { contextRef: { name: 'team' } }),
      ]),
    );
    const ctx = await getObject(cp, 'operatorcontext', 'team');
    assert.deepEqual((ctx.spec as Manifest).secretRef, { name: 'team-conf', namespace: 'default' });
    const api = await getObject(cp, 'apidefinition', 'team-api');
    assert.deepEqual((api.spec as Manifest).contextRef, { name: 'team', namespace: 'default' });
  });
});

test('ApiDefinition: the data graph in its version 2 form (the reference sample with local URLs) is admitted as written', async () => {
  const graphql = {
    enabled: true,
    execution_mode: 'executionEngine',
    version: '2',
    schema:
      'type Country { name: String code: String restCountry: RestCountry }\ntype Query { countries: [Country] }\ntype RestCountry { subregion: String population: Int }\n',
    type_field_configurations: [],
    engine: {
      field_configs: [
        { disable_default_mapping: false, field_name: 'countries', path: ['countries'], type_name: 'Query' },
        { disable_default_mapping: true, field_name: 'restCountry', path: [], type_name: 'Country' },
      ],
      data_sources: [
        {
          kind: 'GraphQL',
          name: 'countries',
          internal: false,
          root_fields: [{ type: 'Query', fields: ['countries'] }],
          config: { url: 'http://countries.default.svc/', method: 'POST', headers: {}, body: '' },
        },
        {
          kind: 'REST',
          name: 'restCountries',
          internal: false,
          root_fields: [{ type: 'Country', fields: ['restCountry'] }],
          config: {
            url: 'http://rest.default.svc/v2/alpha/{{ .object.code }}',
            method: 'GET',
            body: '',
            headers: {},
          },
        },
      ],
    },
  };
  admitted(
    await apply(cp, apiDefinition('udg2', { proxy: { listen_path: '/udg2/', target_url: '' }, graphql })),
  );
  const stored = await getObject(cp, 'apidefinition', 'udg2');
  assert.deepEqual((stored.spec as { graphql: { engine: unknown } }).graphql.engine, graphql.engine);
});

describe('bad manifests are refused with our message', () => {
  // kubectl prints a refusal with causes as `The <Kind> "<name>" is invalid:` and the causes,
  // `path: Invalid value: message`, one per line (`* ...`) when there are several.
  const cases: { name: string; objects: () => Manifest[]; expect: string[] }[] = [
    {
      name: 'ApiDefinition: a wildcard in allowed_ips',
      objects: () => [apiDefinition('w', { enable_ip_whitelisting: true, allowed_ips: ['10.0.0.*'] })],
      expect: [
        'The ApiDefinition "w" is invalid: spec.allowed_ips[0]: Invalid value: "10.0.0.*": wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8',
      ],
    },
    {
      name: 'ApiDefinition: a target_url with a scheme the gateway does not proxy to',
      objects: () => [apiDefinition('t', { proxy: { listen_path: '/t/', target_url: 'tcp://db:5432' } })],
      expect: [
        'spec.proxy.target_url: Unsupported value: "tcp://db:5432": the scheme "tcp" is not supported yet by this gateway: proxy to an http:// or https:// address',
      ],
    },
    {
      name: 'ApiDefinition: a setting the gateway does not enforce yet (OpenID Connect), named',
      objects: () => [apiDefinition('c', { use_openid: true })],
      expect: ['The ApiDefinition "c" is invalid: spec.use_openid: not supported by svc yet'],
    },
    {
      name: 'ApiDefinition: a JWT key that does not fit the signing method, named',
      objects: () => [
        apiDefinition('j', {
          use_keyless: false,
          enable_jwt: true,
          jwt_signing_method: 'hmac',
          jwt_source: 'https://idp.example.com/.well-known/jwks.json',
          jwt_policy_field_name: 'pol',
        }),
      ],
      expect: [
        'The ApiDefinition "j" is invalid: spec.jwt_source: Invalid value: a JWKS publishes public keys, never HMAC secrets',
      ],
    },
    {
      name: "ApiDefinition: a listen path the gateway's management API answers",
      objects: () => [apiDefinition('h', { proxy: { listen_path: '/hello/', target_url: 'http://h' } })],
      expect: [
        `spec.proxy.listen_path: Invalid value: "/hello/": the gateway's management API answers /hello and the paths under it on the gateway port`,
      ],
    },
    {
      name: 'ApiDefinition: a claimed listen path in other capitals, without its trailing slash',
      objects: () => [
        apiDefinition('orders-caps', { proxy: { listen_path: '/ORDERS', target_url: 'http://o' } }),
      ],
      expect: ['listen path "/ORDERS" (no domain) is already claimed by ApiDefinition default/orders'],
    },
    {
      name: 'ApiDefinition: a listen path that is not canonical',
      objects: () => [
        apiDefinition('dots', { proxy: { listen_path: '/orders/./', target_url: 'http://o' } }),
      ],
      expect: [
        'spec.proxy.listen_path: Invalid value: "/orders/./" has a "." or ".." segment: write the path it stands for, "/orders/"',
      ],
    },
    {
      name: 'ApiDefinition: a listen path another API claims, named',
      objects: () => [
        apiDefinition('orders-copy', { proxy: { listen_path: '/orders/', target_url: 'http://o' } }),
      ],
      expect: [
        'spec.proxy.listen_path: Invalid value: listen path "/orders/" (no domain) is already claimed by ApiDefinition default/orders on the same gateway: choose another listen path or domain',
      ],
    },
    {
      name: 'ApiDefinition: a listen path an OAS API claims in its document',
      objects: () => [
        apiDefinition('pets', { proxy: { listen_path: '/petstore/', target_url: 'http://p' } }),
      ],
      expect: ['is already claimed by SvcOasApiDefinition default/petstore'],
    },
    {
      name: 'ApiDefinition: GraphQL, its data source URL and schema',
      objects: () => [
        apiDefinition('g', {
          proxy: { listen_path: '/g/' },
          graphql: {
            enabled: true,
            execution_mode: 'executionEngine',
            type_field_configurations: [
              {
                type_name: 'Query',
                field_name: 'u',
                data_source: { kind: 'HTTPJSONDataSource', data_source_config: { url: 'users' } },
              },
            ],
          },
        }),
      ],
      expect: [
        'The ApiDefinition "g" is invalid: \n',
        '* spec.graphql.schema: Required value: execution_mode executionEngine needs the GraphQL schema (SDL) of the API: set graphql.schema',
        '* spec.graphql.type_field_configurations[0].data_source.data_source_config.url: Invalid value: "users" is not an absolute http(s) URL',
      ],
    },
    {
      name: 'ApiDefinition: GraphQL version 2, a Kafka source on a Query field without its group, and a root field the schema lacks, named',
      objects: () => [
        apiDefinition('g2', {
          proxy: { listen_path: '/g2/', target_url: '' },
          graphql: {
            enabled: true,
            execution_mode: 'executionEngine',
            version: '2',
            schema: 'type Query { a: String }',
            engine: {
              data_sources: [
                {
                  kind: 'Kafka',
                  name: 'events',
                  root_fields: [{ type: 'Query', fields: ['a'] }],
                  config: { broker_addresses: ['kafka:9092'], topics: ['t'] },
                },
                {
                  kind: 'REST',
                  root_fields: [{ type: 'Query', fields: ['b'] }],
                  config: { url: 'http://u/b' },
                },
              ],
            },
          },
        }),
      ],
      expect: [
        'The ApiDefinition "g2" is invalid: \n',
        '* spec.graphql.engine.data_sources[0].root_fields[0].type: Invalid value: "Query": a Kafka data source feeds subscription fields: list fields of Subscription',
        '* spec.graphql.engine.data_sources[0].config.group_id: Required value: name the consumer group',
        '* spec.graphql.engine.data_sources[1].root_fields[0].fields[0]: Invalid value: "Query" has no field "b" in graphql.schema',
      ],
    },
    {
      name: 'ApiDefinition: use_keyless with auth (CEL answers first, with the schema message)',
      objects: () => [apiDefinition('k', { use_standard_auth: true })],
      expect: [
        'use_keyless excludes authentication: set use_keyless to false, or turn off use_standard_auth',
      ],
    },
    {
      name: 'SecurityPolicy: allowed_urls that do not compile',
      objects: () => [
        securityPolicy('re', {
          access_rights_array: [{ name: 'orders', allowed_urls: [{ url: '/orders(', methods: ['GET'] }] }],
        }),
      ],
      expect: [
        'The SecurityPolicy "re" is invalid: spec.access_rights_array[0].allowed_urls[0].url: Invalid value: "/orders(" is not a valid regular expression',
      ],
    },
    {
      name: 'SecurityPolicy: an HTTPRoute entry with a version its generated APIs do not have',
      objects: () => [
        securityPolicy('rv', {
          access_rights_array: [{ kind: 'HTTPRoute', name: 'shop', versions: ['v2'] }],
        }),
      ],
      expect: [
        'spec.access_rights_array[0].versions: Invalid value: the APIs generated for an HTTPRoute have one version, "Default"',
      ],
    },
    {
      name: 'SecurityPolicy: throttle interval without retries',
      objects: () => [securityPolicy('th', { rate: 10, per: 1, throttle_interval: 2 })],
      expect: [
        'spec.throttle_retry_limit: Invalid value: throttle_interval is 2 but throttle_retry_limit is -1: throttling needs both above 0',
      ],
    },
    {
      name: 'SecurityPolicy: quota_max 0',
      objects: () => [securityPolicy('q', { quota_max: 0, quota_renewal_rate: 60 })],
      expect: ['spec.quota_max: Invalid value: quota_max 0 allows no requests'],
    },
    {
      name: 'SecurityPolicy: rate without per (CEL answers first)',
      objects: () => [securityPolicy('r', { rate: 10 })],
      expect: ['rate and per go together: both -1 (disabled) or both positive'],
    },
    {
      name: 'SvcOasApiDefinition: the ConfigMap does not exist',
      objects: () => [oasApi('nocm', 'absent')],
      expect: [
        'The SvcOasApiDefinition "nocm" is invalid: spec.svcOAS.configmapRef.name: Invalid value: ConfigMap default/absent not found: create it first',
      ],
    },
    {
      name: 'SvcOasApiDefinition: the key does not exist',
      objects: () => [oasApi('nokey', 'petstore-oas', 'openapi.json')],
      expect: [
        'ConfigMap default/petstore-oas has no key "openapi.json" (it has "oas.yaml"): set keyName to the key that holds the document',
      ],
    },
    {
      name: 'SvcOasApiDefinition: Swagger 2.0 without the extension',
      objects: () => [
        configMap('swagger', { 'oas.yaml': 'swagger: "2.0"\ninfo: {title: t, version: v}\npaths: {}\n' }),
        oasApi('swagger', 'swagger'),
      ],
      expect: [
        'The SvcOasApiDefinition "swagger" is invalid: \n',
        '* spec.svcOAS.configmapRef.keyName: Invalid value: the document has no openapi field: it must be an OpenAPI 3.x document',
        '* spec.svcOAS.configmapRef.keyName: Required value: the document has no x-svc-api-gateway extension',
      ],
    },
    {
      name: 'SvcStreamsApiDefinition: a document without x-svc-streaming',
      objects: () => [
        configMap('plain', { 's.yaml': oasDocument('/plain/') }),
        streamsApi('plain', 'plain', 's.yaml'),
      ],
      expect: [
        'The SvcStreamsApiDefinition "plain" is invalid: spec.svcStreams.configmapRef.keyName: Required value: the document has no x-svc-streaming extension',
      ],
    },
    {
      name: 'OperatorContext: a URL without a host',
      objects: () => [operatorContext('nourl', { env: { mode: 'ce', url: 'http://' } })],
      expect: ['spec.env.url: Invalid value: "http://" is not an absolute URL'],
    },
    {
      name: 'OperatorContext: an unsigned license key (alg none)',
      objects: () => [
        operatorContext('unsigned', {
          env: {
            mode: 'pro',
            url: 'http://dashboard:3000',
            licenseKey: `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"acme"}').toString('base64url')}.`,
          },
        }),
      ],
      expect: [
        'spec.env.licenseKey: Invalid value: license key is not signed (alg none): unsigned license keys are refused',
      ],
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      refusedWith(await apply(cp, c.objects()), ...c.expect);
    });
  }

  test('warnings are printed and the object is admitted', async () => {
    const r = await apply(
      cp,
      securityPolicy('early', {
        rate: 5,
        per: 1,
        throttle_interval: 0,
        throttle_retry_limit: 2,
        access_rights_array: [{ name: 'later' }],
      }),
    );
    admitted(r);
    assert.match(r.stderr, /Warning: spec\.throttle_interval: 0 retries without waiting/);
    assert.match(
      r.stderr,
      /Warning: spec\.access_rights_array\[0\]: ApiDefinition default\/later does not exist yet/,
    );
  });

  test('an OperatorContext whose Secret does not exist yet is admitted with a warning', async () => {
    const r = await apply(
      cp,
      operatorContext('nosecret', {
        env: { mode: 'ce', url: 'http://gw:8080' },
        secretRef: { name: 'absent' },
      }),
    );
    admitted(r);
    assert.match(r.stderr, /Warning: spec\.secretRef\.name: Secret default\/absent not found \(yet\)/);
  });
});

describe("response processors (the reference's httpbin-transform sample)", () => {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const processors = [
    { name: 'response_body_transform' },
    {
      name: 'header_injector',
      options: { add_headers: { 'X-Served-By': 'svc' }, remove_headers: ['Server'] },
    },
  ];

  test('admitted and stored with their options; XML response templates too', async () => {
    admitted(
      await apply(
        cp,
        apiDefinition('rp-sample', {
          response_processors: processors,
          version_data: {
            default_version: 'Default',
            not_versioned: true,
            versions: {
              Default: {
                name: 'Default',
                use_extended_paths: true,
                extended_paths: {
                  transform_response: [
                    {
                      method: 'GET',
                      path: '/xml',
                      template_data: {
                        input_type: 'xml',
                        template_mode: 'blob',
                        template_source: b64('{{ . | jsonMarshal }}'),
                      },
                    },
                  ],
                },
              },
            },
          },
        }),
      ),
    );
    const api = await getObject(cp, 'apidefinition', 'rp-sample');
    assert.deepEqual((api.spec as Manifest).response_processors, processors);
  });

  test('a processor svc does not serve is refused by name', async () => {
    refusedWith(
      await apply(
        cp,
        apiDefinition('rp-jq', { response_processors: [{ name: 'response_body_transform_jq' }] }),
      ),
      'The ApiDefinition "rp-jq" is invalid: spec.response_processors[0].name: not supported by svc yet: jq needs an engine',
    );
  });
});

describe("TCP and TLS APIs (the reference operator's TCP sample)", () => {
  /** The sample as the reference writes it: no listen path, no auth, a tcp:// upstream. */
  const tcpSample = (name: string, port: number, spec: Manifest = {}): Manifest => {
    const obj = apiDefinition(name, {
      protocol: 'tcp',
      active: true,
      listen_port: port,
      proxy: { target_url: `tcp://${name}.default.svc:6379` },
      ...spec,
    });
    delete (obj.spec as Manifest).use_keyless;
    return obj;
  };

  test('admitted as the sample writes it, and stored without a listen path', async () => {
    admitted(await apply(cp, tcpSample('sessions-store', 7000)));
    const api = await getObject(cp, 'apidefinition', 'sessions-store');
    assert.deepEqual((api.spec as Manifest).proxy, { target_url: 'tcp://sessions-store.default.svc:6379' });
  });

  test('a second tcp API on its port is refused, naming listen_port', async () => {
    refusedWith(
      await apply(cp, tcpSample('sessions-copy', 7000)),
      'spec.listen_port: Invalid value: 7000 is already the port of ApiDefinition default/sessions-store on the same gateway: a tcp or tls API has its port alone',
    );
  });

  test('a setting a connection cannot honour is refused by name', async () => {
    refusedWith(
      await apply(cp, tcpSample('sessions-cors', 7001, { CORS: { enable: true } })),
      'The ApiDefinition "sessions-cors" is invalid: spec.CORS: Forbidden: a tcp API proxies connections, not HTTP requests: CORS does not apply to them',
    );
  });
});

describe("gRPC plugins (the reference operator's auth_check samples)", () => {
  /** The sample as the reference writes it: not keyless, coprocess auth on, hooks named only. */
  const authSample = (name: string, custom_middleware: Manifest): Manifest => {
    const obj = apiDefinition(name, {
      active: true,
      protocol: 'http',
      proxy: {
        listen_path: `/${name}`,
        target_url: 'http://httpbin.default.svc:8000',
        strip_listen_path: true,
      },
      enable_coprocess_auth: true,
      custom_middleware,
    });
    delete (obj.spec as Manifest).use_keyless;
    return obj;
  };
  const grpcAuth = {
    driver: 'grpc',
    auth_check: { name: 'MyAuthCheck', path: '', raw_body_only: false },
    pre: [{ name: 'MyPreMiddleware', path: '' }],
  };

  test('admitted as the sample writes it, and stored with coprocess auth on', async () => {
    admitted(await apply(cp, authSample('grpc-auth', grpcAuth)));
    const spec = (await getObject(cp, 'apidefinition', 'grpc-auth')).spec as Manifest;
    assert.equal(spec.enable_coprocess_auth, true);
    assert.deepEqual((spec.custom_middleware as Manifest).auth_check, grpcAuth.auth_check);
  });

  test('coprocess auth with another driver is refused, naming enable_coprocess_auth', async () => {
    refusedWith(
      await apply(cp, authSample('python-auth', { ...grpcAuth, driver: 'python' })),
      'The ApiDefinition "python-auth" is invalid',
      'spec.enable_coprocess_auth',
      'coprocess authentication is served by a gRPC plugin server only, not by the driver "python"',
    );
  });

  test('coprocess auth without an auth_check is refused, naming enable_coprocess_auth', async () => {
    refusedWith(
      await apply(cp, authSample('grpc-no-check', { driver: 'grpc', pre: grpcAuth.pre })),
      'spec.enable_coprocess_auth',
      'set custom_middleware.auth_check.name',
    );
  });
});

describe("JavaScript VM middleware (driver otto, the reference operator's custom_plugin sample)", () => {
  const ottoApi = (name: string, custom_middleware: Manifest): Manifest =>
    apiDefinition(name, {
      active: true,
      protocol: 'http',
      proxy: {
        listen_path: `/${name}`,
        target_url: 'http://httpbin.default.svc:8000',
        strip_listen_path: true,
      },
      custom_middleware,
    });

  test('admitted as the sample writes it (the gateway checks the file when the operator pushes it)', async () => {
    const pre = [
      { name: 'exampleJavaScriptMiddlewarePreHook', path: 'middleware/example-javascript-middleware.js' },
    ];
    admitted(await apply(cp, ottoApi('otto-pre', { driver: 'otto', pre })));
    const spec = (await getObject(cp, 'apidefinition', 'otto-pre')).spec as Manifest;
    assert.deepEqual((spec.custom_middleware as Manifest).pre, pre);
  });

  test('an otto auth_check is refused by name', async () => {
    refusedWith(
      await apply(
        cp,
        ottoApi('otto-auth', {
          driver: 'otto',
          auth_check: { name: 'checkKey', path: 'middleware/auth.js' },
        }),
      ),
      'spec.custom_middleware.auth_check',
      'an otto (TykJS) auth_check hook is not run by this gateway',
    );
  });

  test('an otto middleware that is not a .js file is refused, naming its path', async () => {
    refusedWith(
      await apply(
        cp,
        ottoApi('otto-ts', { driver: 'otto', post: [{ name: 'tag', path: 'middleware/tag.ts' }] }),
      ),
      'spec.custom_middleware.post[0].path',
      'an otto (TykJS) middleware is a .js file',
    );
  });
});

describe('ConfigMaps read by APIs', () => {
  test('an update that breaks the document is refused, naming the API', async () => {
    refusedWith(
      await apply(
        cp,
        configMap('petstore-oas', {
          'oas.yaml': 'openapi: 3.0.3\ninfo: {title: t, version: v}\npaths: {}\n',
        }),
      ),
      'The ConfigMap "petstore-oas" is invalid: data["oas.yaml"]: Required value: SvcOasApiDefinition default/petstore reads its document from this key, and would be refused: the document has no x-svc-api-gateway extension',
    );
  });

  test('a valid update passes', async () => {
    admitted(await apply(cp, configMap('petstore-oas', { 'oas.yaml': oasDocument('/petstore-v2/') })));
  });

  test('a delete is refused while the API reads it', async () => {
    refusedWith(
      await cp.kubectl(['delete', 'configmap', 'petstore-oas'], { allowFailure: true }),
      'ConfigMap default/petstore-oas is still used by SvcOasApiDefinition default/petstore (key "oas.yaml")',
    );
  });

  test('a streams ConfigMap', async () => {
    admitted(
      await apply(cp, [
        configMap('events-doc', { 'streams.yaml': streamsDocument() }),
        streamsApi('events', 'events-doc'),
      ]),
    );
    refusedWith(
      await apply(cp, configMap('events-doc', { 'streams.yaml': oasDocument('/events/') })),
      'SvcStreamsApiDefinition default/events reads its document from this key, and would be refused: the document has no x-svc-streaming extension',
    );
  });
});

describe('deletes of referenced objects are refused', () => {
  test('an API a SecurityPolicy covers', async () => {
    refusedWith(
      await cp.kubectl(['delete', 'apidefinition', 'orders'], { allowFailure: true }),
      'admission webhook "vapidefinitions.svc.svc.io" denied the request: ApiDefinition default/orders is still used by SecurityPolicy default/standard: remove it from the access_rights_array of these policies (or delete them) first',
    );
    refusedWith(
      await cp.kubectl(['delete', 'svcoasapidefinition', 'petstore'], { allowFailure: true }),
      'SvcOasApiDefinition default/petstore is still used by SecurityPolicy default/standard',
    );
  });

  test('an OperatorContext in use', async () => {
    refusedWith(
      await cp.kubectl(['delete', 'operatorcontext', 'team'], { allowFailure: true }),
      'OperatorContext default/team is still used by ApiDefinition default/team-api: point their contextRef at another context (or delete them) first',
    );
  });

  test('a SubGraph a SuperGraph lists, and a SuperGraph an API serves; a SubGraph whose SDL does not build', async () => {
    const graph = (kind: string, name: string, spec: Manifest): Manifest => ({
      apiVersion: 'svc.svc.io/v1alpha1',
      kind,
      metadata: { name, namespace: 'default' },
      spec,
    });
    refusedWith(
      await apply(
        cp,
        graph('SubGraph', 'fed-broken', {
          sdl: 'type Query { u: User }\ntype User @key(fields: "uid") { id: ID! }',
        }),
      ),
      'The SubGraph "fed-broken" is invalid: spec.sdl: Invalid value: line 2, column 11: @key names uid, which is not a field of User',
    );
    admitted(
      await apply(cp, [
        graph('SubGraph', 'fed-users', {
          sdl: 'type Query { users: [User!]! }\ntype User @key(fields: "id") { id: ID! }',
        }),
        graph('SuperGraph', 'fed-social', { subgraph_refs: ['fed-users'] }),
        apiDefinition('fed-social-api', {
          proxy: { listen_path: '/fed-social-api/' },
          graphql: { enabled: true, execution_mode: 'supergraph', graph_ref: 'fed-social' },
        }),
      ]),
    );
    refusedWith(
      await cp.kubectl(['delete', 'subgraph', 'fed-users', '--wait=false'], { allowFailure: true }),
      'admission webhook "vsubgraphs.svc.svc.io" denied the request: SubGraph default/fed-users is still used by SuperGraph default/fed-social',
    );
    refusedWith(
      await cp.kubectl(['delete', 'supergraph', 'fed-social', '--wait=false'], { allowFailure: true }),
      'SuperGraph default/fed-social is still used by ApiDefinition default/fed-social-api',
    );
    admitted(
      await cp.kubectl(['delete', 'apidefinition', 'fed-social-api', '--wait=false'], { allowFailure: true }),
    );
    admitted(
      await cp.kubectl(['delete', 'supergraph', 'fed-social', '--wait=false'], { allowFailure: true }),
    );
    admitted(await cp.kubectl(['delete', 'subgraph', 'fed-users', '--wait=false'], { allowFailure: true }));
  });

  test('a label change on an admitted object needs no checks', async () => {
    admitted(await cp.kubectl(['label', 'apidefinition', 'orders', 'tier=gold'], { allowFailure: true }));
  });

  test('once the dependents are gone, the deletes pass', async () => {
    admitted(await cp.kubectl(['delete', 'securitypolicy', 'standard', 'early'], { allowFailure: true }));
    admitted(await cp.kubectl(['delete', 'apidefinition', 'orders', 'team-api'], { allowFailure: true }));
    admitted(await cp.kubectl(['delete', 'operatorcontext', 'team'], { allowFailure: true }));
    admitted(await cp.kubectl(['delete', 'svcoasapidefinition', 'petstore'], { allowFailure: true }));
    admitted(await cp.kubectl(['delete', 'configmap', 'petstore-oas'], { allowFailure: true }));
    admitted(await cp.kubectl(['delete', 'svcstreamsapidefinition', 'events'], { allowFailure: true }));
    admitted(await cp.kubectl(['delete', 'configmap', 'events-doc'], { allowFailure: true }));
  });
});

describe('examples/', () => {
  test('are admitted as they are, without warnings', async () => {
    const r = await cp.kubectl(['apply', '-f', path.join(root, 'examples')], { allowFailure: true });
    admitted(r);
    assert.doesNotMatch(r.stderr, /Warning/);
  });
});

describe('the route check at scale', () => {
  /** `apiserver_request_total` of one verb and resource. */
  async function requests(verb: string, resource: string): Promise<number> {
    const text = (await cp.kubectl(['get', '--raw', '/metrics'])).stdout;
    let n = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith('apiserver_request_total{')) continue;
      if (!line.includes(`verb="${verb}"`) || !line.includes(`resource="${resource}"`)) continue;
      if (line.includes('subresource="')) continue;
      n += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return n;
  }

  test('creating APIs lists no APIs per admission (the claims come from a watch cache)', async () => {
    await waitFor('the route claims to be cached', () =>
      Promise.resolve(suite.server.proc.log().includes('route claims cached')),
    );
    const n = 20;
    const apis = Array.from({ length: n }, (_, i) => apiDefinition(`scale-${i}`));
    const before = await requests('LIST', 'apidefinitions');
    admitted(await apply(cp, apis));
    const after = await requests('LIST', 'apidefinitions');
    // Without the cache each admission listed the three kinds: n LISTs of apidefinitions.
    assert.ok(after - before <= 1, `${after - before} LISTs of apidefinitions for ${n} creates`);
    // The cache is current: a 21st API on a taken route is refused, naming its owner.
    refusedWith(
      await apply(
        cp,
        apiDefinition('scale-dup', { proxy: { listen_path: '/scale-7/', target_url: 'http://u' } }),
      ),
      'already claimed by ApiDefinition default/scale-7',
    );
    admitted(
      await cp.kubectl(['delete', 'apidefinition', ...apis.map((a) => metaName(a))], { allowFailure: true }),
    );
    // Deleted: the route is free again (a stale entry would be re-read fresh, and admitted).
    admitted(
      await apply(
        cp,
        apiDefinition('scale-dup', { proxy: { listen_path: '/scale-7/', target_url: 'http://u' } }),
      ),
    );
    admitted(await cp.kubectl(['delete', 'apidefinition', 'scale-dup'], { allowFailure: true }));
  });
});

function metaName(o: Manifest): string {
  return (o.metadata as { name: string }).name;
}
