import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AccessRight, OasApiStatus } from '../../schemas/generated/kinds.ts';
import { InputError } from '../../lib/errors.ts';
import { derivedId } from '../ids.ts';
import { createHash, X509Certificate } from 'node:crypto';
import { createCa } from '../../lib/x509.ts';
import { publicKeyPinOf, type SecretContent } from '../certificates.ts';
import type { CertificateHolder } from './certificate-secrets.ts';
import type { ConfigMapContent } from '../translate/oas-api-definition.ts';
import type { PolicyView } from './api-definition.ts';
import {
  OAS_FINALIZER,
  STREAMS_FINALIZER,
  STREAMS_KIND,
  reconcileSvcOasApiDefinition,
  type OasApiObject,
} from './oas-api-definition.ts';
import { HELD_RECHECK_MS } from './status.ts';
import { assertReady, baseDeps, FakeGateway, settle } from './testing.ts';

const A = 'http://gw-a';
const ID = derivedId('team', 'petstore');
const EXT = 'x-svc-api-gateway';

/** A kubernetes.io/tls Secret of a fresh certificate, its gateway ID and its public-key pin. */
async function tlsSecret(cn: string): Promise<{ secret: SecretContent; id: string; pin: string }> {
  const c = await createCa({ commonName: cn, validityDays: 1 });
  const b64 = (t: string): string => Buffer.from(t).toString('base64');
  const fingerprint = createHash('sha256').update(new X509Certificate(c.certPem).raw).digest('hex');
  const secret = { type: 'kubernetes.io/tls', data: { 'tls.crt': b64(c.certPem), 'tls.key': b64(c.keyPem) } };
  const pinned = publicKeyPinOf(secret);
  assert.ok(pinned.ok);
  return { secret, id: `org-1${fingerprint}`, pin: pinned.pin };
}
const tls1 = await tlsSecret('partner.example');
const tls2 = await tlsSecret('gateway-to-upstream.example');
const tls3 = await tlsSecret('upstream.example');
const tlsRotated = await tlsSecret('partner-rotated.example');

/** The spec fields naming Secrets: the client, upstream and pinned certificates of the cases. */
const certSpec = {
  clientCertificate: { enabled: true, allowlist: ['partner'] },
  mutualTLS: {
    enabled: true,
    domainToCertificateMapping: [{ domain: 'petstore', certificateRef: 'to-upstream' }],
  },
  certificatePinning: {
    enabled: true,
    domainToPublicKeysMapping: [{ domain: 'petstore', publicKeyRefs: ['upstream-pin'] }],
  },
};
const certSecrets = { partner: tls1.secret, 'to-upstream': tls2.secret, 'upstream-pin': tls3.secret };

/** Another SvcOasApiDefinition of `team` whose status lists certificates. */
const otherApi = (certificates: string[]): CertificateHolder => ({
  metadata: { name: 'billing', namespace: 'team' },
  status: { certificates },
});

/** An OAS document (JSON) with the extension; `ext` is merged into the extension. */
function oas(opts: { listenPath?: string; target?: string; id?: string; token?: boolean } = {}): string {
  const doc: Record<string, unknown> = {
    openapi: '3.0.3',
    info: { title: 'Petstore', version: '1.0.0' },
    paths: {},
    [EXT]: {
      info: { name: 'petstore', state: { active: true }, ...(opts.id ? { id: opts.id } : {}) },
      upstream: { url: opts.target ?? 'http://petstore:8080' },
      server: {
        listenPath: { value: opts.listenPath ?? '/petstore/', strip: true },
        ...(opts.token
          ? { authentication: { enabled: true, securitySchemes: { token: { enabled: true } } } }
          : {}),
      },
    },
  };
  if (opts.token) {
    doc.components = { securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'Authorization' } } };
    doc.security = [{ token: [] }];
  }
  return JSON.stringify(doc);
}

const YAML_DOC = `openapi: 3.0.3
info: {title: Petstore, version: 1.0.0}
paths: {}
${EXT}:
  info: {name: petstore, state: {active: false}}
  upstream: {url: "http://yaml-upstream:80"}
  server:
    listenPath: {value: /yaml/, strip: true}
`;

function policy(name: string, rights: AccessRight[], deleting = false): PolicyView {
  return {
    kind: 'SecurityPolicy',
    metadata: { name, namespace: 'team', ...(deleting ? { deletionTimestamp: new Date(0) } : {}) },
    spec: { access_rights_array: rights },
  };
}

interface Case {
  name: string;
  /** ConfigMaps by `namespace/name`; the API reads `team/petstore-oas` key `oas.json` unless `ref` says otherwise. */
  configMaps?: Record<string, ConfigMapContent>;
  ref?: { name?: string; namespace?: string; keyName?: string };
  policies?: PolicyView[];
  /** Reconcile once first with `pushed` as the ConfigMap, keeping the status written. */
  pushed?: string;
  gateway?: (gw: FakeGateway) => void;
  deleting?: boolean;
  /** Labelled `svc.io/template: "true"` before the reconcile under test, holding OAS_FINALIZER. */
  template?: boolean;
  writes?: string[];
  ready?: { status: 'True' | 'False'; reason: string; message?: RegExp };
  status?: (s: OasApiStatus | undefined, gw: FakeGateway) => void;
  finalizers?: string[];
  throws?: boolean;
  /** The reconcile's `requeueAfterMs` (checked when given). */
  requeueAfterMs?: number;
  /** Spec fields besides `svcOAS` (the certificates by Secret). */
  spec?: Record<string, unknown>;
  /** Secrets of `team` by name. */
  secrets?: Record<string, SecretContent>;
  /** Secrets changed after the `pushed` reconcile. */
  rotate?: Record<string, SecretContent>;
  /** Other APIs listing certificates. */
  others?: CertificateHolder[];
}

/** Deps of an API naming no Secrets. */
const noSecrets = { secret: () => Promise.resolve(undefined), apis: () => [] };

const cm = (text: string): Record<string, ConfigMapContent> => ({
  'team/petstore-oas': { data: { 'oas.json': text } },
});

const cases: Case[] = [
  {
    name: 'certificates by Secret, one Secret missing: SecretNotFound naming the field and the Secret, nothing pushed',
    configMaps: cm(oas()),
    spec: certSpec,
    secrets: { partner: tls1.secret, 'upstream-pin': tls3.secret },
    writes: [],
    ready: {
      status: 'False',
      reason: 'SecretNotFound',
      message:
        /^spec\.mutualTLS\.domainToCertificateMapping\[0\]\.certificateRef: Secret team\/to-upstream does not exist/,
    },
  },
  {
    name: 'certificates by Secret: uploaded before the push, their IDs and pin written into the document, Ready',
    configMaps: cm(oas()),
    spec: certSpec,
    secrets: certSecrets,
    writes: [`addCert ${tls1.id}`, `addCert ${tls2.id}`, `createOasApi ${ID}`, 'reload'],
    ready: { status: 'True', reason: 'Synced' },
    status: (s, gw) => {
      assert.deepEqual(s?.certificates, [tls1.id, tls2.id]);
      assert.deepEqual([...gw.certs.keys()], [tls1.id, tls2.id]);
      const held = JSON.parse(JSON.stringify(gw.oasApis.get(ID))) as Record<
        string,
        { server: Record<string, unknown>; upstream: Record<string, unknown> }
      >;
      const ext = held[EXT];
      assert.ok(ext);
      assert.deepEqual(ext.server.clientCertificates, { enabled: true, allowlist: [tls1.id] });
      assert.deepEqual(ext.upstream.mutualTLS, {
        enabled: true,
        domainToCertificateMapping: [{ domain: 'petstore', certificate: tls2.id }],
      });
      assert.deepEqual(ext.upstream.certificatePinning, {
        enabled: true,
        domainToPublicKeysMapping: [{ domain: 'petstore', publicKeys: [tls3.pin] }],
      });
    },
  },
  {
    name: 'the custom domain by Secret, its Secret missing: SecretNotFound naming the field and the Secret, nothing pushed',
    configMaps: cm(oas()),
    spec: { customDomain: { enabled: true, name: 'pets.example.com', certificatesRef: ['pets-tls'] } },
    secrets: {},
    writes: [],
    ready: {
      status: 'False',
      reason: 'SecretNotFound',
      message: /^spec\.customDomain\.certificatesRef\[0\]: Secret team\/pets-tls does not exist/,
    },
  },
  {
    name: 'the custom domain by Secret: its certificate uploaded before the push and written into the document, Ready',
    configMaps: cm(oas()),
    spec: { customDomain: { enabled: true, name: 'pets.example.com', certificatesRef: ['pets-tls'] } },
    secrets: { 'pets-tls': tls1.secret },
    writes: [`addCert ${tls1.id}`, `createOasApi ${ID}`, 'reload'],
    ready: { status: 'True', reason: 'Synced' },
    status: (s, gw) => {
      assert.deepEqual(s?.certificates, [tls1.id]);
      const held = JSON.parse(JSON.stringify(gw.oasApis.get(ID))) as Record<
        string,
        { server: Record<string, unknown> }
      >;
      assert.deepEqual(held[EXT]?.server.customDomain, {
        enabled: true,
        name: 'pets.example.com',
        certificates: [tls1.id],
      });
    },
  },
  {
    name: 'a Secret rotated: the new certificate uploaded and pushed, the old one deleted',
    pushed: oas(),
    configMaps: cm(oas()),
    spec: certSpec,
    secrets: certSecrets,
    rotate: { partner: tlsRotated.secret },
    writes: [`addCert ${tlsRotated.id}`, `updateOasApi ${ID}`, 'reload', `deleteCert ${tls1.id}`],
    status: (s, gw) => {
      assert.deepEqual(s?.certificates, [tlsRotated.id, tls2.id]);
      assert.deepEqual([...gw.certs.keys()].sort(), [tls2.id, tlsRotated.id].sort());
    },
  },
  {
    name: 'a Secret rotated while another API lists the old certificate: the old one stays',
    pushed: oas(),
    configMaps: cm(oas()),
    spec: certSpec,
    secrets: certSecrets,
    rotate: { partner: tlsRotated.secret },
    others: [otherApi([tls1.id])],
    writes: [`addCert ${tlsRotated.id}`, `updateOasApi ${ID}`, 'reload'],
  },
  {
    name: 'deleted: the API and its certificates go',
    pushed: oas(),
    configMaps: cm(oas()),
    spec: certSpec,
    secrets: certSecrets,
    deleting: true,
    writes: [`deleteOasApi ${ID}`, 'reload', `deleteCert ${tls1.id}`, `deleteCert ${tls2.id}`],
  },
  {
    name: 'new: the document is created with the derived ID, reloaded, Ready',
    configMaps: cm(oas()),
    writes: [`createOasApi ${ID}`, 'reload'],
    ready: { status: 'True', reason: 'Synced', message: new RegExp(`API ${ID} is served by ${A}`) },
    status: (s, gw) => {
      assert.equal(s?.api_id, ID);
      assert.equal(s.listen_path, '/petstore/');
      assert.equal(s.target_url, 'http://petstore:8080');
      assert.equal(s.enabled, true);
      assert.ok(s.latestConfigMapHash && s.latestCRDSpecHash && s.latestSvcSpecHash);
      assert.equal(s.latestTransaction?.status, 'Successful');
      const held = gw.oasApis.get(ID) as Record<string, { info: { id: string; orgId: string } }>;
      const ext = held[EXT];
      assert.ok(ext);
      assert.equal(ext.info.id, ID);
      assert.equal(ext.info.orgId, 'org-1', "the connection's organization");
    },
    finalizers: [`+${OAS_FINALIZER}`],
  },
  {
    name: 'YAML, a ConfigMap in another namespace: read, served',
    ref: { namespace: 'shared', keyName: 'oas.yaml' },
    configMaps: { 'shared/petstore-oas': { data: { 'oas.yaml': YAML_DOC } } },
    writes: [`createOasApi ${ID}`, 'reload'],
    status: (s) => {
      assert.equal(s?.listen_path, '/yaml/');
      assert.equal(s.target_url, 'http://yaml-upstream:80');
      assert.equal(s.enabled, false);
    },
  },
  {
    name: 'the document fixes the API ID: it is used',
    configMaps: cm(oas({ id: 'legacy-petstore' })),
    writes: ['createOasApi legacy-petstore', 'reload'],
    status: (s) => {
      assert.equal(s?.api_id, 'legacy-petstore');
    },
  },
  {
    name: 'unchanged after a push: nothing written',
    pushed: oas(),
    configMaps: cm(oas()),
    writes: [],
    status: (s) => {
      assert.equal(s, undefined);
    },
  },
  {
    name: 'the ConfigMap changed (listen path, upstream, authentication): updated and reloaded',
    pushed: oas(),
    configMaps: cm(oas({ listenPath: '/pets/', target: 'http://other:80', token: true })),
    writes: [`updateOasApi ${ID}`, 'reload'],
    ready: { status: 'True', reason: 'Synced' },
    status: (s, gw) => {
      assert.equal(s?.listen_path, '/pets/');
      assert.equal(s.target_url, 'http://other:80');
      const held = gw.oasApis.get(ID) as Record<string, { server: { authentication?: unknown } }>;
      assert.ok(held[EXT]?.server.authentication);
    },
  },
  {
    name: 'the document now fixes another ID: pushed under it, the former API deleted',
    pushed: oas(),
    configMaps: cm(oas({ id: 'new-id' })),
    writes: ['createOasApi new-id', 'reload', `deleteOasApi ${ID}`, 'reload'],
    status: (s) => {
      assert.equal(s?.api_id, 'new-id');
    },
  },
  {
    name: 'drift: an edit in the gateway is reverted',
    pushed: oas(),
    configMaps: cm(oas()),
    gateway: (gw) => {
      const held = gw.oasApis.get(ID);
      if (held) held.info = { title: 'hijacked', version: '0' };
    },
    writes: [`updateOasApi ${ID}`, 'reload'],
  },
  {
    name: 'ConfigMap missing: ConfigMapNotFound, nothing pushed',
    configMaps: {},
    writes: [],
    ready: {
      status: 'False',
      reason: 'ConfigMapNotFound',
      message: /ConfigMap team\/petstore-oas not found/,
    },
  },
  {
    name: 'a ConfigMap of the same name in another namespace does not count',
    configMaps: { 'elsewhere/petstore-oas': { data: { 'oas.json': oas() } } },
    writes: [],
    ready: { status: 'False', reason: 'ConfigMapNotFound' },
  },
  {
    name: 'key missing: ConfigMapKeyNotFound, naming the keys there are',
    configMaps: { 'team/petstore-oas': { data: { 'other.json': oas() } } },
    writes: [],
    ready: {
      status: 'False',
      reason: 'ConfigMapKeyNotFound',
      message: /no key "oas.json" \(it has "other.json"\)/,
    },
  },
  {
    name: 'invalid JSON after a push: DocumentInvalid, the last good version keeps serving',
    pushed: oas(),
    configMaps: cm('{"openapi": "3.0.3",'),
    writes: [],
    ready: {
      status: 'False',
      reason: 'DocumentInvalid',
      message: new RegExp(`does not parse as JSON or YAML.*API ${ID} keeps serving its last good version`),
    },
    status: (s, gw) => {
      assert.equal(s?.api_id, ID);
      assert.equal(s.listen_path, '/petstore/');
      assert.ok(gw.oasApis.has(ID));
    },
  },
  {
    name: 'invalid YAML: DocumentInvalid',
    configMaps: cm('openapi: [3.0.3\n  x: :'),
    writes: [],
    ready: { status: 'False', reason: 'DocumentInvalid', message: /does not parse as JSON or YAML/ },
  },
  {
    name: 'no extension: ExtensionMissing',
    configMaps: cm(JSON.stringify({ openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} })),
    writes: [],
    ready: { status: 'False', reason: 'ExtensionMissing', message: /no x-svc-api-gateway extension/ },
  },
  {
    name: 'over 1 MiB: DocumentTooLarge',
    configMaps: cm(`${oas().slice(0, -1)}, "x-pad": "${'x'.repeat(1024 * 1024)}"}`),
    writes: [],
    ready: { status: 'False', reason: 'DocumentTooLarge', message: /more than 1 MiB/ },
  },
  {
    name: 'a document the gateway check refuses: DocumentInvalid naming the field',
    configMaps: cm(oas({ listenPath: 'no-slash' })),
    writes: [],
    ready: { status: 'False', reason: 'DocumentInvalid', message: /listenPath/ },
  },
  {
    name: 'linked_by_policies: the policies covering the OAS API, not those of a classic API of the same name',
    configMaps: cm(oas()),
    policies: [
      policy('zeta', [{ name: 'petstore', kind: 'SvcOasApiDefinition' }]),
      policy('alpha', [{ name: 'petstore', kind: 'SvcOasApiDefinition' }]),
      policy('classic', [{ name: 'petstore' }]),
    ],
    status: (s) => {
      assert.deepEqual(s?.linked_by_policies, [
        { name: 'alpha', namespace: 'team' },
        { name: 'zeta', namespace: 'team' },
      ]);
    },
  },
  {
    name: 'deleted while a policy covers it: held with InUse, still served',
    pushed: oas(),
    configMaps: cm(oas()),
    policies: [policy('plan', [{ name: 'petstore', kind: 'SvcOasApiDefinition' }])],
    deleting: true,
    writes: [],
    ready: { status: 'False', reason: 'InUse', message: /still used by SecurityPolicy team\/plan/ },
    status: (_s, gw) => {
      assert.ok(gw.oasApis.has(ID));
    },
    finalizers: [],
    // Checked again later even if no policy event comes.
    requeueAfterMs: HELD_RECHECK_MS,
  },
  {
    name: 'deleted: deleted from the gateway (even with its ConfigMap gone), finalizer removed',
    pushed: oas({ id: 'fixed' }),
    configMaps: {},
    deleting: true,
    writes: ['deleteOasApi fixed', 'reload'],
    finalizers: [`-${OAS_FINALIZER}`],
  },
  {
    name: 'a template deleted with the finalizer (from webhooks off): the finalizer removed, nothing called',
    configMaps: cm(oas()),
    template: true,
    deleting: true,
    writes: [],
    finalizers: [`-${OAS_FINALIZER}`],
  },
  {
    name: 'a served API labelled a template: its API leaves the gateway, the finalizer removed',
    pushed: oas({ id: 'fixed' }),
    configMaps: cm(oas({ id: 'fixed' })),
    template: true,
    writes: ['deleteOasApi fixed', 'reload'],
    finalizers: [`-${OAS_FINALIZER}`],
  },
  {
    name: 'the gateway refuses the document: GatewayRejected, no retry',
    configMaps: cm(oas()),
    gateway: (gw) => {
      gw.failWith = new InputError('OP_ERR_GATEWAY_REJECTED', 'gateway POST /svc/apis/oas: 400 bad');
    },
    ready: { status: 'False', reason: 'GatewayRejected', message: /400 bad/ },
    status: (s) => {
      assert.equal(s?.latestTransaction?.status, 'Failed');
    },
  },
  {
    name: 'the gateway down: GatewayUnavailable, retried',
    configMaps: cm(oas()),
    gateway: (gw) => {
      gw.failWith = new Error('connect ECONNREFUSED');
    },
    ready: { status: 'False', reason: 'GatewayUnavailable' },
    throws: true,
  },
];

describe('reconcileSvcOasApiDefinition', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const gw = new FakeGateway(A);
      let configMaps: Record<string, ConfigMapContent> = c.pushed ? cm(c.pushed) : (c.configMaps ?? {});
      let api: OasApiObject = {
        apiVersion: 'svc.svc.io/v1alpha1',
        kind: 'SvcOasApiDefinition',
        metadata: { name: 'petstore', namespace: 'team', generation: 1, finalizers: [] },
        spec: {
          svcOAS: { configmapRef: { name: 'petstore-oas', keyName: 'oas.json', ...c.ref } },
          ...c.spec,
        },
      };
      const secrets = new Map(Object.entries(c.secrets ?? {}));
      const deps = {
        ...baseDeps<OasApiObject>({ default: gw }),
        read: () => Promise.resolve(api),
        configMap: (ns: string, name: string) => Promise.resolve(configMaps[`${ns}/${name}`]),
        policies: () => c.policies ?? [],
        secret: (ns: string, name: string) => Promise.resolve(ns === 'team' ? secrets.get(name) : undefined),
        apis: () => [api, ...(c.others ?? [])],
      };
      if (c.pushed) {
        await reconcileSvcOasApiDefinition('team/petstore', deps);
        api = {
          ...api,
          metadata: { ...api.metadata, finalizers: [OAS_FINALIZER] },
          status: deps.objects.statuses.at(-1) as OasApiStatus,
        };
        configMaps = c.configMaps ?? {};
      } else if (c.deleting || c.template) {
        api.metadata.finalizers = [OAS_FINALIZER];
      }
      if (c.template) api.metadata.labels = { 'svc.io/template': 'true' };
      for (const [name, secret] of Object.entries(c.rotate ?? {})) secrets.set(name, secret);
      c.gateway?.(gw);
      if (c.deleting) api.metadata.deletionTimestamp = new Date(0);
      gw.writes.length = 0;
      deps.objects.statuses.length = 0;
      deps.objects.finalizers.length = 0;

      const { thrown, result } = await settle(reconcileSvcOasApiDefinition('team/petstore', deps));
      assert.equal(thrown !== undefined, c.throws === true, `thrown: ${String(thrown)}`);
      if (c.requeueAfterMs !== undefined) assert.equal(result?.requeueAfterMs, c.requeueAfterMs);
      if (c.writes) assert.deepEqual(gw.writes, c.writes);
      const status = deps.objects.statuses.at(-1) as OasApiStatus | undefined;
      if (c.ready) assertReady(status, c.ready);
      c.status?.(status, gw);
      if (c.finalizers) assert.deepEqual(deps.objects.finalizers, c.finalizers);
    });
  }

  test('contextRef moves the API to another gateway: pushed there, then deleted from the first', async () => {
    const gwA = new FakeGateway(A);
    const gwB = new FakeGateway('http://gw-b');
    let api: OasApiObject = {
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'SvcOasApiDefinition',
      metadata: { name: 'petstore', namespace: 'team', generation: 1, finalizers: [OAS_FINALIZER] },
      spec: { svcOAS: { configmapRef: { name: 'petstore-oas', keyName: 'oas.json' } } },
    };
    const deps = {
      ...baseDeps<OasApiObject>({ default: gwA, 'team/second': gwB }),
      ...noSecrets,
      read: () => Promise.resolve(api),
      configMap: () => Promise.resolve(cm(oas())['team/petstore-oas']),
      policies: () => [],
    };
    await reconcileSvcOasApiDefinition('team/petstore', deps);
    let status = deps.objects.statuses.at(-1) as OasApiStatus;
    assert.deepEqual(status.pushedTo, { url: A });
    api = { ...api, spec: { ...api.spec, contextRef: { name: 'second' } }, status };

    await reconcileSvcOasApiDefinition('team/petstore', deps);
    status = deps.objects.statuses.at(-1) as OasApiStatus;
    assert.deepEqual(gwB.writes, [`createOasApi ${ID}`, 'reload']);
    assert.deepEqual(gwA.writes.slice(-2), [`deleteOasApi ${ID}`, 'reload']);
    assert.equal(gwA.oasApis.has(ID), false);
    assert.deepEqual(status.pushedTo, {
      url: 'http://gw-b',
      contextRef: { name: 'second', namespace: 'team' },
    });
    assertReady(status, { status: 'True', reason: 'Synced' });

    // Deleted: it goes from the gateway recorded in pushedTo.
    api = { ...api, status, metadata: { ...api.metadata, deletionTimestamp: new Date(0) } };
    await reconcileSvcOasApiDefinition('team/petstore', deps);
    assert.equal(gwB.oasApis.has(ID), false);
  });

  test('a context that does not exist: ContextNotFound, nothing pushed', async () => {
    const deps = {
      ...baseDeps<OasApiObject>({}),
      ...noSecrets,
      read: () =>
        Promise.resolve<OasApiObject>({
          apiVersion: 'svc.svc.io/v1alpha1',
          kind: 'SvcOasApiDefinition',
          metadata: { name: 'petstore', namespace: 'team', generation: 1 },
          spec: {
            contextRef: { name: 'nowhere' },
            svcOAS: { configmapRef: { name: 'petstore-oas', keyName: 'oas.json' } },
          },
        }),
      configMap: () => Promise.resolve(cm(oas())['team/petstore-oas']),
      policies: () => [],
    };
    await reconcileSvcOasApiDefinition('team/petstore', deps);
    assertReady(deps.objects.statuses.at(-1), { status: 'False', reason: 'ContextNotFound' });
  });
});

describe('reconcileSvcOasApiDefinition, kind SvcStreamsApiDefinition', () => {
  /** An OAS document with one stream (HTTP in, SSE out). */
  const streamsDoc = (withStreams = true): string => {
    const doc = JSON.parse(oas({ listenPath: '/orders/' })) as Record<string, unknown>;
    if (withStreams) {
      doc['x-svc-streaming'] = {
        streams: {
          orders: {
            input: { http_server: { path: '/in' } },
            output: { http_server: { stream_path: '/out' } },
          },
        },
      };
    }
    return JSON.stringify(doc);
  };
  const run = async (
    text: string | undefined,
    policies: PolicyView[] = [],
  ): Promise<{ gw: FakeGateway; deps: ReturnType<typeof baseDeps<OasApiObject>> }> => {
    const gw = new FakeGateway(A);
    const api: OasApiObject = {
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'SvcStreamsApiDefinition',
      metadata: { name: 'petstore', namespace: 'team', generation: 1, finalizers: [] },
      spec: { svcStreams: { configmapRef: { name: 'orders-streams', keyName: 'streams.json' } } },
    };
    const deps = {
      ...baseDeps<OasApiObject>({ default: gw }),
      ...noSecrets,
      read: () => Promise.resolve(api),
      configMap: (ns: string, name: string) =>
        Promise.resolve(
          text === undefined || `${ns}/${name}` !== 'team/orders-streams'
            ? undefined
            : { data: { 'streams.json': text } },
        ),
      policies: () => policies,
      kind: STREAMS_KIND,
    };
    await reconcileSvcOasApiDefinition('team/petstore', deps);
    return { gw, deps };
  };

  test('its document, streams included, is pushed to the OAS endpoint with its own finalizer', async () => {
    const { gw, deps } = await run(streamsDoc());
    assert.deepEqual(gw.writes, [`createOasApi ${ID}`, 'reload']);
    assert.deepEqual(deps.objects.finalizers, [`+${STREAMS_FINALIZER}`]);
    const held = gw.oasApis.get(ID) as Record<string, { streams?: Record<string, unknown> }>;
    assert.deepEqual(Object.keys(held['x-svc-streaming']?.streams ?? {}), ['orders']);
    const status = deps.objects.statuses.at(-1) as OasApiStatus;
    assertReady(status, { status: 'True', reason: 'Synced' });
    assert.equal(status.listen_path, '/orders/');
    assert.ok(status.latestConfigMapHash);
  });

  test('a document without streams: ExtensionMissing, nothing pushed', async () => {
    const { gw, deps } = await run(streamsDoc(false));
    assert.deepEqual(gw.writes, []);
    assertReady(deps.objects.statuses.at(-1), {
      status: 'False',
      reason: 'ExtensionMissing',
      message: /has no x-svc-streaming\.streams/,
    });
  });

  test('its ConfigMap missing: the message names spec.svcStreams', async () => {
    const { deps } = await run(undefined);
    assertReady(deps.objects.statuses.at(-1), {
      status: 'False',
      reason: 'ConfigMapNotFound',
      message: /spec\.svcStreams\.configmapRef/,
    });
  });

  test('policies of the other document kind do not cover it', async () => {
    const oasPolicy = policy('p', [{ name: 'petstore', kind: 'SvcOasApiDefinition' }]);
    const { deps } = await run(streamsDoc(), [oasPolicy]);
    assert.equal((deps.objects.statuses.at(-1) as OasApiStatus).linked_by_policies, undefined);
    const streamsPolicy = policy('q', [
      { name: 'petstore', namespace: 'team', kind: 'SvcStreamsApiDefinition' },
    ]);
    const linked = await run(streamsDoc(), [streamsPolicy]);
    assert.deepEqual((linked.deps.objects.statuses.at(-1) as OasApiStatus).linked_by_policies, [
      { name: 'q', namespace: 'team' },
    ]);
  });
});
