/**
 * The generated CRDs against a real kube-apiserver: they install, the examples are accepted,
 * invalid manifests are refused with a message naming the field, and `kubectl explain` shows
 * the schema descriptions.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { kinds } from '../../schemas/index.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';

const root = join(import.meta.dirname, '..', '..');
let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
});

after(async () => {
  await cp.stop();
});

test('every CRD is installed, Established, and in the svc categories', async () => {
  const out = await cp.kubectl(['get', 'crd', '-o', 'json']);
  const crds = (
    JSON.parse(out.stdout) as {
      items: {
        metadata: { name: string; labels?: Record<string, string> };
        spec: { names: { categories?: string[] } };
        status: { conditions: { type: string; status: string }[] };
      }[];
    }
  ).items;
  const names = crds.map((c) => c.metadata.name).sort();
  assert.deepEqual(names, kinds.map((k) => `${k.plural}.svc.svc.io`).sort());
  for (const crd of crds) {
    const established = crd.status.conditions.find((c) => c.type === 'Established');
    assert.equal(established?.status, 'True', crd.metadata.name);
    assert.deepEqual(crd.spec.names.categories, ['svc-all'], crd.metadata.name);
    // The GEP-713 policy class, which Gateway API tools read to find policy kinds.
    assert.equal(
      crd.metadata.labels?.['gateway.networking.k8s.io/policy'],
      crd.metadata.name === 'svcroutepolicies.svc.svc.io' ? 'Inherited' : undefined,
      crd.metadata.name,
    );
  }
});

test('the examples are accepted as they are, with strict field validation', async () => {
  const out = await cp.kubectl([
    'apply',
    '--server-side',
    '--field-manager=e2e',
    '-f',
    join(root, 'examples'),
  ]);
  for (const kind of kinds) {
    assert.match(
      out.stdout,
      new RegExp(`${kind.singular}\\.svc\\.svc\\.io/\\S+ serverside-applied`),
      kind.kind,
    );
  }
  const list = await cp.kubectl(['get', 'svc-all', '-n', 'default', '-o', 'name']);
  assert.deepEqual(list.stdout.trim().split('\n').sort(), [
    'apidefinition.svc.svc.io/httpbin',
    'apidefinition.svc.svc.io/orders',
    'apidefinition.svc.svc.io/people',
    'apidefinition.svc.svc.io/people-graph',
    'apidefinition.svc.svc.io/posts-subgraph',
    'apidefinition.svc.svc.io/social',
    'apidefinition.svc.svc.io/users-subgraph',
    'apidescription.svc.svc.io/orders',
    'apikey.svc.svc.io/orders-client',
    'operatorcontext.svc.svc.io/payments-gateway',
    'portalapicatalogue.svc.svc.io/public',
    'portalconfig.svc.svc.io/portal',
    'securitypolicy.svc.svc.io/orders-standard',
    'subgraph.svc.svc.io/posts',
    'subgraph.svc.svc.io/users',
    'supergraph.svc.svc.io/social',
    'svcoasapidefinition.svc.svc.io/petstore',
    'svcroutepolicy.svc.svc.io/shop-auth',
    'svcstreamsapidefinition.svc.svc.io/events',
  ]);
});

test('printer columns show the API ID, listen path, Ready and age', async () => {
  await cp.kubectl([
    'apply',
    '--server-side',
    '--field-manager=e2e',
    '-f',
    join(root, 'examples', 'api-definition.yaml'),
  ]);
  const out = await cp.kubectl(['get', 'apidefinitions', '-n', 'default', 'httpbin']);
  const [header, row] = out.stdout.trim().split('\n');
  assert.match(header ?? '', /^NAME\s+API ID\s+LISTEN PATH\s+READY\s+AGE$/);
  assert.match(row ?? '', /^httpbin\s+\/httpbin\/\s+\S+$/);
});

const api = (spec: string): string => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: bad, namespace: default}
spec:
  name: bad
${spec}`;
const proxy = '  proxy: {listen_path: /bad/, target_url: "http://u"}\n';

/** Manifests the API server must refuse, and what its message must say. */
const refused: { name: string; manifest: string; says: RegExp[] }[] = [
  {
    name: 'a value outside an enum',
    manifest: api(`${proxy}  protocol: ftp\n`),
    says: [/spec\.protocol: Unsupported value: "ftp": supported values: "", "http", "https"/],
  },
  {
    name: 'a value of the wrong type',
    manifest: api(`${proxy}  listen_port: "8080"\n`),
    says: [/\.spec\.listen_port: expected numeric \(int or float\), got string/],
  },
  {
    name: 'a missing required field',
    manifest: api(''),
    says: [/spec\.proxy: Required value/],
  },
  {
    name: 'a listen path that does not start with a slash',
    manifest: api('  proxy: {listen_path: bad/, target_url: "http://u"}\n'),
    says: [
      /spec\.proxy\.listen_path: Invalid value: "bad\/": spec\.proxy\.listen_path in body should match '\^\(\/\|\$\)'/,
    ],
  },
  {
    name: 'an unknown field',
    manifest: api(`${proxy}  use_keyles: true\n`),
    says: [/\.spec\.use_keyles: field not declared in schema/],
  },
  {
    name: 'CEL: keyless together with auth token',
    manifest: api(`${proxy}  use_keyless: true\n  use_standard_auth: true\n`),
    says: [/spec\.use_keyless: Forbidden: use_keyless excludes authentication/],
  },
  {
    name: 'CEL: keyless together with OAuth 2.0 (the same flags as the webhook)',
    manifest: api(`${proxy}  use_keyless: true\n  use_oauth2: true\n`),
    says: [/spec\.use_keyless: Forbidden: use_keyless excludes authentication/],
  },
  {
    name: 'CEL: rate without per',
    manifest: `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: bad, namespace: default}
spec: {name: bad, rate: 10}
`,
    says: [/spec\.per: Invalid value: .*rate and per go together: both -1 \(disabled\) or both positive/],
  },
  {
    name: 'CEL: a quota without a renewal period, in a per-API limit',
    manifest: `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: bad, namespace: default}
spec:
  name: bad
  access_rights_array:
    - name: httpbin
      limit: {quota_max: 100}
`,
    says: [
      /spec\.access_rights_array\[0\]\.limit\.quota_renewal_rate: Required value: a positive quota_max needs a positive quota_renewal_rate/,
    ],
  },
  {
    name: 'CEL: an OperatorContext with neither env nor secretRef',
    manifest: `apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: bad, namespace: default}
spec: {}
`,
    says: [/spec: Required value: set env, secretRef, or both/],
  },
  {
    // `namespace` is a CEL reserved word: the rule reads it as `self.__namespace__`, which the API
    // servers of 1.28 (where `self.namespace` does not compile and the CRD is refused) and 1.36 take.
    name: 'CEL: a catalogue entry with namespace but no name (a property named like a CEL keyword)',
    manifest: `apiVersion: svc.svc.io/v1alpha1
kind: PortalAPICatalogue
metadata: {name: bad, namespace: default}
spec:
  apis:
    - apiDescriptionRef: {name: petstore}
      namespace: other
`,
    says: [/spec\.apis\[0\]\.namespace: Forbidden: namespace goes with name \(or inside apiDescriptionRef\)/],
  },
  {
    name: 'an OperatorContext mode outside the enum',
    manifest: `apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: bad, namespace: default}
spec: {env: {mode: enterprise, url: "http://gw:8080"}}
`,
    says: [/spec\.env\.mode: Unsupported value: "enterprise": supported values: "ce", "pro"/],
  },
  {
    name: 'an SvcRoutePolicy targeting a GRPCRoute',
    manifest: `apiVersion: svc.svc.io/v1alpha1
kind: SvcRoutePolicy
metadata: {name: bad, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: shop}]
`,
    says: [/spec\.targetRefs\[0\]\.kind: Unsupported value: "GRPCRoute"/],
  },
  {
    name: 'an SvcRoutePolicy keyless with auth tokens',
    manifest: `apiVersion: svc.svc.io/v1alpha1
kind: SvcRoutePolicy
metadata: {name: bad, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: shop}]
  use_keyless: true
  use_standard_auth: true
`,
    says: [/spec\.use_keyless: Forbidden: use_keyless excludes authentication/],
  },
];

for (const c of refused) {
  test(`refused: ${c.name}`, async () => {
    const out = await cp.kubectl(['apply', '--server-side', '--field-manager=e2e', '-f', '-'], {
      input: c.manifest,
      allowFailure: true,
    });
    assert.notEqual(out.code, 0, `accepted:\n${out.stdout}`);
    for (const re of c.says) assert.match(out.stderr, re);
  });
}

test('a certificate-only API (keyless with static mutual TLS, as docs/gateway.md writes it) is accepted by the CRD', async () => {
  // The gateway requires the client certificate of such an API (gateway/middleware/mutual-tls).
  const out = await cp.kubectl(['apply', '--server-side', '--field-manager=e2e', '-f', '-'], {
    input: `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: partners, namespace: default}
spec:
  name: partners
  use_keyless: true
  use_mutual_tls_auth: true
  client_certificates: [acme3f1c]
  protocol: https
  listen_port: 8443
  proxy: {listen_path: /partners/, target_url: "http://u"}
`,
  });
  assert.match(out.stdout, /apidefinition\.svc\.svc\.io\/partners serverside-applied/);
});

test('a template (no listen path, no target: its Ingresses supply them) is accepted by the CRD', async () => {
  // The webhook requires both of every ApiDefinition that is not a template, as the gateway does.
  const out = await cp.kubectl(['apply', '--server-side', '--field-manager=e2e', '-f', '-'], {
    input: `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: ingress-template, namespace: default, labels: {svc.io/template: "true"}}
spec:
  name: ingress-template
  use_keyless: true
  proxy: {strip_listen_path: true}
`,
  });
  assert.match(out.stdout, /apidefinition\.svc\.svc\.io\/ingress-template serverside-applied/);
});

test('defaults from the schema appear on the stored object', async () => {
  await cp.kubectl(['apply', '--server-side', '--field-manager=e2e', '-f', '-'], {
    input: `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: defaults, namespace: default}
spec:
  name: defaults
  access_rights_array: [{name: httpbin}]
`,
  });
  const out = await cp.kubectl([
    'get',
    'securitypolicy',
    'defaults',
    '-n',
    'default',
    '-o',
    'jsonpath={.spec}',
  ]);
  const spec = JSON.parse(out.stdout) as Record<string, unknown>;
  assert.equal(spec.state, 'active');
  assert.equal(spec.rate, -1);
  assert.equal(spec.quota_max, -1);
  assert.equal(spec.throttle_interval, -1);
  assert.deepEqual(spec.access_rights_array, [{ name: 'httpbin', kind: 'ApiDefinition' }]);
});

/** `kubectl explain` paths and a phrase of the schema description each must show. */
const explained: [string, string][] = [
  ['apidefinitions', 'A classic-format API served by the gateway'],
  ['apidefinitions.spec.proxy.listen_path', 'Base path on the gateway'],
  ['apidefinitions.spec.use_keyless', 'Open access with no authentication'],
  ['apidefinitions.status.api_id', 'ID of the API in the gateway or dashboard'],
  ['svcoasapidefinitions.spec.svcOAS.configmapRef.keyName', "Key in the ConfigMap's `data`"],
  ['svcstreamsapidefinitions.spec.svcStreams.configmapRef', 'the streams OAS document'],
  ['securitypolicies.spec.access_rights_array.kind', 'Kind of the API resource'],
  ['securitypolicies.spec.quota_renewal_rate', 'Length of the quota period in seconds'],
  ['securitypolicies.status.linked_apis', 'API resources the policy covers'],
  ['operatorcontexts.spec.env.mode', '`ce`: talk to a gateway'],
  ['operatorcontexts.spec.secretRef', 'a Secret whose keys'],
];

for (const [path, phrase] of explained) {
  test(`kubectl explain ${path}`, async () => {
    const out = await cp.kubectl(['explain', path]);
    assert.ok(out.stdout.replace(/\s+/g, ' ').includes(phrase), out.stdout);
  });
}
