import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AccessRight, ApiDefinitionSpec, ApiStatus } from '../../schemas/generated/kinds.ts';
import { InputError } from '../../lib/errors.ts';
import { derivedId } from '../ids.ts';
import { createHash, X509Certificate } from 'node:crypto';
import { createCa } from '../../lib/x509.ts';
import type { SecretContent } from '../certificates.ts';
import { API_FINALIZER, reconcileApiDefinition, type ApiObject, type PolicyView } from './api-definition.ts';
import { assertReady, baseDeps, FakeGateway, readyOf, settle } from './testing.ts';
import { HELD_RECHECK_MS } from './status.ts';
import { PushMemory } from './sync.ts';

const A = 'http://gw-a';
const ID = derivedId('team', 'orders');
const ORG = 'org-1';

/** A kubernetes.io/tls Secret of a fresh certificate, and the certificate's gateway ID. */
async function tlsSecret(cn: string): Promise<{ secret: SecretContent; id: string }> {
  const c = await createCa({ commonName: cn, validityDays: 1 });
  const b64 = (t: string): string => Buffer.from(t).toString('base64');
  const fingerprint = createHash('sha256').update(new X509Certificate(c.certPem).raw).digest('hex');
  return {
    secret: { type: 'kubernetes.io/tls', data: { 'tls.crt': b64(c.certPem), 'tls.key': b64(c.keyPem) } },
    id: ORG + fingerprint,
  };
}
const tls1 = await tlsSecret('orders.example');
const tls2 = await tlsSecret('orders-2.example');
const tls3 = await tlsSecret('orders-rotated.example');

/** Another ApiDefinition of `team` whose status lists certificates. */
const otherApi = (certificates: string[]): ApiObject => ({
  apiVersion: 'svc.svc.io/v1alpha1',
  kind: 'ApiDefinition',
  metadata: { name: 'billing', namespace: 'team' },
  spec: { name: 'billing', proxy: { listen_path: '/billing/', target_url: 'http://billing' } },
  status: { certificates },
});

/** A SecurityPolicy of `team` (unless said otherwise). */
function policy(
  name: string,
  opts: { id?: string; rights?: AccessRight[]; namespace?: string; deleting?: boolean } = {},
): PolicyView {
  return {
    kind: 'SecurityPolicy',
    metadata: {
      name,
      namespace: opts.namespace ?? 'team',
      ...(opts.deleting ? { deletionTimestamp: new Date(0) } : {}),
    },
    spec: { ...(opts.id ? { id: opts.id } : {}), access_rights_array: opts.rights ?? [] },
  };
}

interface Case {
  name: string;
  spec?: Partial<ApiDefinitionSpec>;
  policies?: PolicyView[];
  /** Reconcile once first and keep the status written (the API was pushed before). */
  pushedBefore?: boolean;
  /** Secrets of `team`, by name. */
  secrets?: Record<string, SecretContent>;
  /** The spec edited after the push (with pushedBefore). */
  specAfter?: Partial<ApiDefinitionSpec>;
  /** The other ApiDefinitions of the cluster. */
  others?: ApiObject[];
  /** Changes before the reconcile under test (after the push, with pushedBefore). */
  gateway?: (gw: FakeGateway, secrets: Map<string, SecretContent>) => void;
  deleting?: boolean;
  /** Labelled `svc.io/template: "true"` before the reconcile under test, holding API_FINALIZER. */
  template?: boolean;
  writes?: string[];
  ready?: { status: 'True' | 'False'; reason: string; message?: RegExp };
  status?: (s: ApiStatus | undefined, gw: FakeGateway) => void;
  finalizers?: string[];
  throws?: boolean;
  /** The reconcile's `requeueAfterMs` (checked when given). */
  requeueAfterMs?: number;
}

const cases: Case[] = [
  {
    name: 'new: created with the derived ID, reloaded, Ready',
    writes: [`createApi ${ID}`, 'reload'],
    ready: { status: 'True', reason: 'Synced', message: new RegExp(`API ${ID} is served by ${A}`) },
    status: (s) => {
      assert.equal(s?.api_id, ID);
      assert.equal(s.linked_by_policies, undefined);
    },
    finalizers: [`+${API_FINALIZER}`],
  },
  {
    name: 'unchanged after a push: nothing written',
    pushedBefore: true,
    writes: [],
    status: (s) => {
      assert.equal(s, undefined);
    },
  },
  {
    name: 'drift: an edit in the gateway is reverted',
    pushedBefore: true,
    gateway: (gw) => {
      const held = gw.apis.get(ID);
      if (held) held.name = 'hijacked';
    },
    writes: [`updateApi ${ID}`, 'reload'],
  },
  {
    name: 'linked_by_policies: the policies covering it and those it names, sorted',
    spec: { jwt_default_policies: [{ name: 'jwt-default' }] },
    policies: [
      policy('zeta', { rights: [{ name: 'orders' }] }),
      policy('alpha', {
        namespace: 'other',
        rights: [{ name: 'orders', namespace: 'team', kind: 'ApiDefinition' }],
      }),
      policy('oas-only', { rights: [{ name: 'orders', kind: 'SvcOasApiDefinition' }] }),
      policy('jwt-default'),
      policy('unrelated', { rights: [{ name: 'billing' }] }),
    ],
    status: (s) => {
      assert.deepEqual(s?.linked_by_policies, [
        { name: 'alpha', namespace: 'other' },
        { name: 'jwt-default', namespace: 'team' },
        { name: 'zeta', namespace: 'team' },
      ]);
    },
  },
  {
    name: 'jwt_default_policies: the policy ID is its spec.id, or derived when it has none or does not exist yet',
    spec: { jwt_default_policies: [{ name: 'gold' }, { name: 'silver' }, { name: 'later', namespace: 'x' }] },
    policies: [policy('gold', { id: 'legacy-gold' }), policy('silver')],
    status: (_s, gw) => {
      assert.deepEqual(gw.apis.get(ID)?.jwt_default_policies, [
        'legacy-gold',
        derivedId('team', 'silver'),
        derivedId('x', 'later'),
      ]);
    },
  },
  {
    name: 'deleted while a policy covers it: held with InUse, still served',
    policies: [policy('plan', { rights: [{ name: 'orders' }] })],
    pushedBefore: true,
    deleting: true,
    writes: [],
    ready: {
      status: 'False',
      reason: 'InUse',
      message: /still used by SecurityPolicy team\/plan: remove it from the access_rights_array/,
    },
    status: (_s, gw) => {
      assert.ok(gw.apis.has(ID));
    },
    finalizers: [],
    // Checked again later even if no policy event comes.
    requeueAfterMs: HELD_RECHECK_MS,
  },
  {
    name: 'deleted while the only policy covering it is being deleted too: it goes',
    policies: [policy('plan', { rights: [{ name: 'orders' }], deleting: true })],
    pushedBefore: true,
    deleting: true,
    writes: [`deleteApi ${ID}`, 'reload'],
    finalizers: [`-${API_FINALIZER}`],
  },
  {
    name: 'deleted, named by nothing: deleted from the gateway, finalizer removed',
    policies: [policy('uses-it-as-default')],
    spec: { jwt_default_policies: [{ name: 'uses-it-as-default' }] },
    pushedBefore: true,
    deleting: true,
    writes: [`deleteApi ${ID}`, 'reload'],
    finalizers: [`-${API_FINALIZER}`],
  },
  {
    name: 'a context that does not exist: ContextNotFound',
    spec: { contextRef: { name: 'nowhere' } },
    ready: { status: 'False', reason: 'ContextNotFound' },
  },
  {
    name: 'the gateway refuses the API: GatewayRejected, no retry',
    gateway: (gw) => {
      gw.failWith = new InputError('OP_ERR_GATEWAY_REJECTED', 'gateway POST /svc/apis: 400 bad');
    },
    ready: { status: 'False', reason: 'GatewayRejected', message: /400 bad/ },
    status: (s) => {
      assert.equal(s?.latestTransaction?.status, 'Failed');
    },
  },
  {
    name: 'certificate Secret present: uploaded, its ID in the pushed definition and the status',
    spec: { certificate_secret_names: ['orders-tls'] },
    secrets: { 'orders-tls': tls1.secret },
    writes: [`addCert ${tls1.id}`, `createApi ${ID}`, 'reload'],
    ready: { status: 'True', reason: 'Synced' },
    status: (s, gw) => {
      assert.deepEqual(gw.apis.get(ID)?.certificates, [tls1.id]);
      assert.deepEqual(s?.certificates, [tls1.id]);
      assert.match(gw.certs.get(tls1.id) ?? '', /BEGIN CERTIFICATE[\s\S]*BEGIN PRIVATE KEY/);
    },
  },
  {
    name: 'every certificate Secret named is uploaded, in order',
    spec: { certificate_secret_names: ['orders-tls', 'orders-tls-2'] },
    secrets: { 'orders-tls': tls1.secret, 'orders-tls-2': tls2.secret },
    writes: [`addCert ${tls1.id}`, `addCert ${tls2.id}`, `createApi ${ID}`, 'reload'],
    status: (s, gw) => {
      assert.deepEqual(gw.apis.get(ID)?.certificates, [tls1.id, tls2.id]);
      assert.deepEqual(s?.certificates, [tls1.id, tls2.id]);
    },
  },
  {
    name: 'certificate already in the gateway (409) and API unchanged: nothing written',
    spec: { certificate_secret_names: ['orders-tls'] },
    secrets: { 'orders-tls': tls1.secret },
    pushedBefore: true,
    writes: [],
  },
  {
    name: 'internal target: the ApiDefinition named becomes svc://<its api_id>',
    spec: {
      proxy: {
        listen_path: '/orders/',
        target_internal: { target: { name: 'billing' }, path: '/v1', query: 'a=1' },
      },
    },
    others: [{ ...otherApi([]), spec: { ...otherApi([]).spec, api_id: 'billing-id' } }],
    writes: [`createApi ${ID}`, 'reload'],
    ready: { status: 'True', reason: 'Synced' },
    status: (_s, gw) => {
      const def = gw.apis.get(ID);
      assert.ok(def);
      assert.equal(def.proxy.target_url, 'svc://billing-id/v1?a=1');
      assert.equal(def.proxy.target_internal, undefined);
    },
  },
  {
    name: 'internal target naming a missing ApiDefinition: ApiNotFound naming it, nothing pushed',
    spec: {
      proxy: {
        listen_path: '/orders/',
        target_url: 'http://orders',
        target_internal: { target: 'elsewhere/absent' },
      },
    },
    writes: [],
    ready: {
      status: 'False',
      reason: 'ApiNotFound',
      message: /^spec\.proxy\.target_internal\.target: ApiDefinition elsewhere\/absent does not exist/,
    },
  },
  {
    name: 'certificate Secret missing: SecretNotFound naming it, nothing pushed',
    spec: { certificate_secret_names: ['orders-tls', 'absent-tls'] },
    secrets: { 'orders-tls': tls1.secret },
    writes: [],
    ready: { status: 'False', reason: 'SecretNotFound', message: /Secret team\/absent-tls .*does not exist/ },
    status: (_s, gw) => {
      assert.equal(gw.apis.has(ID), false);
    },
  },
  {
    name: 'certificate Secret without tls.key: SecretInvalid',
    spec: { certificate_secret_names: ['orders-tls'] },
    secrets: { 'orders-tls': { data: { 'tls.crt': tls1.secret.data?.['tls.crt'] ?? '' } } },
    writes: [],
    ready: {
      status: 'False',
      reason: 'SecretInvalid',
      message: /team\/orders-tls needs tls.crt and tls.key/,
    },
  },
  {
    name: 'certificate Secret changed: new one uploaded and pushed, the old one deleted',
    spec: { certificate_secret_names: ['orders-tls'] },
    secrets: { 'orders-tls': tls1.secret },
    pushedBefore: true,
    gateway: (_gw, secrets) => secrets.set('orders-tls', tls3.secret),
    writes: [`addCert ${tls3.id}`, `updateApi ${ID}`, 'reload', `deleteCert ${tls1.id}`],
    status: (s, gw) => {
      assert.deepEqual(gw.apis.get(ID)?.certificates, [tls3.id]);
      assert.deepEqual(s?.certificates, [tls3.id]);
      assert.deepEqual([...gw.certs.keys()], [tls3.id]);
    },
  },
  {
    name: 'certificate Secret changed while another API lists the old certificate: the old one stays',
    spec: { certificate_secret_names: ['orders-tls'] },
    secrets: { 'orders-tls': tls1.secret },
    others: [otherApi([tls1.id])],
    pushedBefore: true,
    gateway: (_gw, secrets) => secrets.set('orders-tls', tls3.secret),
    writes: [`addCert ${tls3.id}`, `updateApi ${ID}`, 'reload'],
  },
  {
    name: 'a certificate Secret no longer named: its certificate deleted',
    spec: { certificate_secret_names: ['orders-tls', 'orders-tls-2'] },
    secrets: { 'orders-tls': tls1.secret, 'orders-tls-2': tls2.secret },
    pushedBefore: true,
    specAfter: { certificate_secret_names: ['orders-tls'] },
    writes: [`updateApi ${ID}`, 'reload', `deleteCert ${tls2.id}`],
    status: (s, gw) => {
      assert.deepEqual(gw.apis.get(ID)?.certificates, [tls1.id]);
      assert.deepEqual(s?.certificates, [tls1.id]);
    },
  },
  {
    name: 'deleted: its certificates deleted too, unless another API lists them',
    spec: { certificate_secret_names: ['orders-tls', 'orders-tls-2'] },
    secrets: { 'orders-tls': tls1.secret, 'orders-tls-2': tls2.secret },
    others: [otherApi([tls2.id])],
    pushedBefore: true,
    deleting: true,
    writes: [`deleteApi ${ID}`, 'reload', `deleteCert ${tls1.id}`],
    finalizers: [`-${API_FINALIZER}`],
  },
  {
    name: 'client certificates by Secret: uploaded, their IDs added to client_certificates and the status',
    spec: {
      use_mutual_tls_auth: true,
      client_certificates: [tls2.id],
      client_certificate_refs: ['orders-client'],
    },
    secrets: { 'orders-client': tls1.secret },
    writes: [`addCert ${tls1.id}`, `createApi ${ID}`, 'reload'],
    ready: { status: 'True', reason: 'Synced' },
    status: (s, gw) => {
      assert.deepEqual(gw.apis.get(ID)?.client_certificates, [tls2.id, tls1.id]);
      assert.deepEqual(s?.certificates, [tls1.id]);
    },
  },
  {
    name: 'upstream certificate by Secret: uploaded with its key, its ID set for the host',
    spec: { upstream_certificate_refs: { '*': 'orders-upstream' } },
    secrets: { 'orders-upstream': tls1.secret },
    writes: [`addCert ${tls1.id}`, `createApi ${ID}`, 'reload'],
    status: (s, gw) => {
      assert.deepEqual(gw.apis.get(ID)?.upstream_certificates, { '*': tls1.id });
      assert.deepEqual(s?.certificates, [tls1.id]);
      assert.match(gw.certs.get(tls1.id) ?? '', /BEGIN CERTIFICATE[\s\S]*BEGIN PRIVATE KEY/);
    },
  },
  {
    name: 'pinned key by Secret: its tls.crt public key pinned for the host, nothing uploaded',
    spec: { pinned_public_keys_refs: { 'orders.example': 'orders-pin' } },
    // Only the certificate: a pinned upstream's key is not the gateway's.
    secrets: { 'orders-pin': { data: { 'tls.crt': tls1.secret.data?.['tls.crt'] ?? '' } } },
    writes: [`createApi ${ID}`, 'reload'],
    status: (s, gw) => {
      const spki = new X509Certificate(
        Buffer.from(tls1.secret.data?.['tls.crt'] ?? '', 'base64').toString(),
      ).publicKey.export({ type: 'spki', format: 'der' });
      const pin = `sha256/${createHash('sha256').update(spki).digest('base64')}`;
      assert.deepEqual(gw.apis.get(ID)?.pinned_public_keys, { 'orders.example': pin });
      assert.equal(s?.certificates, undefined);
    },
  },
  {
    name: 'client certificate Secret missing: SecretNotFound naming it and its field, nothing pushed',
    spec: { use_mutual_tls_auth: true, client_certificate_refs: ['absent-client'] },
    writes: [],
    ready: {
      status: 'False',
      reason: 'SecretNotFound',
      message: /^spec\.client_certificate_refs\[0\]: Secret team\/absent-client does not exist/,
    },
  },
  {
    name: 'upstream certificate Secret without tls.key: SecretInvalid naming it',
    spec: { upstream_certificate_refs: { '*': 'orders-upstream' } },
    secrets: { 'orders-upstream': { data: { 'tls.crt': tls1.secret.data?.['tls.crt'] ?? '' } } },
    writes: [],
    ready: {
      status: 'False',
      reason: 'SecretInvalid',
      message:
        /^spec\.upstream_certificate_refs\["\*"\]: Secret team\/orders-upstream needs tls.crt and tls.key/,
    },
  },
  {
    name: 'pinned key Secret whose tls.crt is not a certificate: SecretInvalid naming it',
    spec: { pinned_public_keys_refs: { '*': 'orders-pin' } },
    secrets: { 'orders-pin': { data: { 'tls.crt': Buffer.from('not a certificate').toString('base64') } } },
    writes: [],
    ready: {
      status: 'False',
      reason: 'SecretInvalid',
      message: /^spec\.pinned_public_keys_refs\["\*"\]: Secret team\/orders-pin tls.crt does not parse/,
    },
  },
  {
    name: 'client certificate Secret rotated: the new one uploaded and allowed, the old one deleted',
    spec: { use_mutual_tls_auth: true, client_certificate_refs: ['orders-client'] },
    secrets: { 'orders-client': tls1.secret },
    pushedBefore: true,
    gateway: (_gw, secrets) => secrets.set('orders-client', tls3.secret),
    writes: [`addCert ${tls3.id}`, `updateApi ${ID}`, 'reload', `deleteCert ${tls1.id}`],
    status: (s, gw) => {
      assert.deepEqual(gw.apis.get(ID)?.client_certificates, [tls3.id]);
      assert.deepEqual(s?.certificates, [tls3.id]);
    },
  },
  {
    name: 'deleted: certificates by Secret deleted too',
    spec: {
      use_mutual_tls_auth: true,
      client_certificate_refs: ['orders-client'],
      upstream_certificate_refs: { '*': 'orders-upstream' },
    },
    secrets: { 'orders-client': tls1.secret, 'orders-upstream': tls2.secret },
    pushedBefore: true,
    deleting: true,
    writes: [`deleteApi ${ID}`, 'reload', `deleteCert ${tls1.id}`, `deleteCert ${tls2.id}`],
    finalizers: [`-${API_FINALIZER}`],
  },
  {
    name: 'a template deleted with the finalizer (from webhooks off): the finalizer removed, nothing called',
    template: true,
    deleting: true,
    writes: [],
    finalizers: [`-${API_FINALIZER}`],
  },
  {
    name: 'a template never pushed, not deleted, with the finalizer: the finalizer removed',
    template: true,
    writes: [],
    finalizers: [`-${API_FINALIZER}`],
  },
  {
    name: 'a served API labelled a template: its API leaves the gateway, the finalizer removed',
    pushedBefore: true,
    template: true,
    writes: [`deleteApi ${ID}`, 'reload'],
    finalizers: [`-${API_FINALIZER}`],
    status: (_s, gw) => {
      assert.equal(gw.apis.has(ID), false);
    },
  },
  {
    name: 'a served template deleted while policies cover it: not held, the API deleted',
    pushedBefore: true,
    template: true,
    deleting: true,
    policies: [policy('gold', { rights: [{ name: 'orders' }] })],
    writes: [`deleteApi ${ID}`, 'reload'],
    finalizers: [`-${API_FINALIZER}`],
  },
];

describe('reconcileApiDefinition', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const gw = new FakeGateway(A);
      let api: ApiObject = {
        apiVersion: 'svc.svc.io/v1alpha1',
        kind: 'ApiDefinition',
        metadata: { name: 'orders', namespace: 'team', generation: 1, finalizers: [] },
        spec: { name: 'orders', proxy: { listen_path: '/orders/', target_url: 'http://orders' }, ...c.spec },
      };
      const secrets = new Map(Object.entries(c.secrets ?? {}));
      const deps = {
        ...baseDeps<ApiObject>({ default: gw }),
        read: (namespace: string, name: string) =>
          Promise.resolve(
            namespace === 'team' && name === 'orders'
              ? api
              : c.others?.find((o) => o.metadata.namespace === namespace && o.metadata.name === name),
          ),
        policies: () => c.policies ?? [],
        secret: (namespace: string, name: string) =>
          Promise.resolve(namespace === 'team' ? secrets.get(name) : undefined),
        apis: () => [api, ...(c.others ?? [])],
      };
      if (c.pushedBefore) {
        await reconcileApiDefinition('team/orders', deps);
        api = {
          ...api,
          metadata: { ...api.metadata, finalizers: [API_FINALIZER] },
          status: deps.objects.statuses.at(-1) as ApiStatus,
        };
      } else if (c.deleting || c.template) {
        api.metadata.finalizers = [API_FINALIZER];
      }
      if (c.template) api.metadata.labels = { 'svc.io/template': 'true' };
      if (c.specAfter) api = { ...api, spec: { ...api.spec, ...c.specAfter } };
      c.gateway?.(gw, secrets);
      if (c.deleting) api.metadata.deletionTimestamp = new Date(0);
      gw.writes.length = 0;
      deps.objects.statuses.length = 0;
      deps.objects.finalizers.length = 0;

      const { thrown, result } = await settle(reconcileApiDefinition('team/orders', deps));
      if (c.requeueAfterMs !== undefined) assert.equal(result?.requeueAfterMs, c.requeueAfterMs);
      assert.equal(thrown !== undefined, c.throws === true, `thrown: ${String(thrown)}`);
      if (c.writes) assert.deepEqual(gw.writes, c.writes);
      const status = deps.objects.statuses.at(-1) as ApiStatus | undefined;
      if (c.ready) assertReady(status, c.ready);
      c.status?.(status, gw);
      if (c.finalizers) assert.deepEqual(deps.objects.finalizers, c.finalizers);
    });
  }
});

describe('reconcileApiDefinition with the memory of pushes', () => {
  const api = (): ApiObject => ({
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name: 'orders', namespace: 'team', uid: 'uid-1', generation: 1, finalizers: [API_FINALIZER] },
    spec: { name: 'orders', proxy: { listen_path: '/orders/', target_url: 'http://orders' } },
  });
  const depsOf = (gw: FakeGateway, read: () => ApiObject, pushes?: PushMemory) => ({
    ...baseDeps<ApiObject>({ default: gw }),
    read: () => Promise.resolve(read()),
    policies: () => [],
    secret: () => Promise.resolve(undefined),
    apis: () => [read()],
    ...(pushes ? { pushes } : {}),
  });

  test('a second reconcile reading a cache without the status the first wrote: nothing pushed again', async () => {
    const gw = new FakeGateway(A);
    const deps = depsOf(gw, api, new PushMemory());
    await reconcileApiDefinition('team/orders', deps);
    assert.deepEqual(gw.writes, [`createApi ${ID}`, 'reload']);
    gw.writes.length = 0;
    await reconcileApiDefinition('team/orders', deps);
    assert.deepEqual(gw.writes, []);
    assertReady(deps.objects.statuses.at(-1), { status: 'True', reason: 'Synced' });
  });

  test('remembered, but the gateway changed since (drift) or the spec did: pushed', async () => {
    const gw = new FakeGateway(A);
    let obj = api();
    const deps = depsOf(gw, () => obj, new PushMemory());
    await reconcileApiDefinition('team/orders', deps);
    const held = gw.apis.get(ID);
    assert.ok(held);
    gw.apis.set(ID, { ...held, name: 'edited by hand' });
    gw.writes.length = 0;
    await reconcileApiDefinition('team/orders', deps);
    assert.deepEqual(gw.writes, [`updateApi ${ID}`, 'reload']);
    obj = { ...obj, spec: { ...obj.spec, name: 'orders-2' } };
    gw.writes.length = 0;
    await reconcileApiDefinition('team/orders', deps);
    assert.deepEqual(gw.writes, [`updateApi ${ID}`, 'reload']);
    assert.equal(gw.apis.get(ID)?.name, 'orders-2');
  });

  test('a gateway whose reads lag its writes until it reloads (several workers): a restart pushes nothing again', async () => {
    const gw = new FakeGateway(A);
    gw.staleReads = true;
    let obj = api();
    const first = depsOf(gw, () => obj, new PushMemory());
    await reconcileApiDefinition('team/orders', first);
    assert.deepEqual(gw.writes, [`createApi ${ID}`, 'reload']);
    obj = { ...obj, status: first.objects.statuses.at(-1) as ApiStatus };
    // A new leader reads the status its predecessor wrote.
    gw.writes.length = 0;
    await reconcileApiDefinition(
      'team/orders',
      depsOf(gw, () => obj, new PushMemory()),
    );
    assert.deepEqual(gw.writes, [], 'created once');

    const second = depsOf(gw, () => obj, new PushMemory());
    obj = { ...obj, metadata: { ...obj.metadata, generation: 2 }, spec: { ...obj.spec, name: 'orders-2' } };
    await reconcileApiDefinition('team/orders', second);
    assert.deepEqual(gw.writes, [`updateApi ${ID}`, 'reload']);
    obj = { ...obj, status: second.objects.statuses.at(-1) as ApiStatus };
    gw.writes.length = 0;
    await reconcileApiDefinition(
      'team/orders',
      depsOf(gw, () => obj, new PushMemory()),
    );
    assert.deepEqual(gw.writes, [], 'updated once');
    assert.equal(gw.apis.get(ID)?.name, 'orders-2');
  });

  test('a gateway that answers 404 for the API it just stored: retried, saying so', async () => {
    const gw = new FakeGateway(A);
    gw.staleReads = true;
    // Never reloaded: its reads never see the write.
    gw.reload = () => Promise.resolve();
    const deps = depsOf(gw, api, new PushMemory());
    const { thrown } = await settle(reconcileApiDefinition('team/orders', deps));
    assert.match(String(thrown), /answered 404 when reading back the document it had just stored/);
    assert.match(readyOf(deps.objects.statuses.at(-1))?.message ?? '', /answered 404 when reading back/);
  });

  test('another process (a restart) has no memory: the status is the truth', async () => {
    const gw = new FakeGateway(A);
    const first = depsOf(gw, api, new PushMemory());
    await reconcileApiDefinition('team/orders', first);
    const pushed: ApiObject = { ...api(), status: first.objects.statuses.at(-1) as ApiStatus };
    gw.writes.length = 0;
    await reconcileApiDefinition(
      'team/orders',
      depsOf(gw, () => pushed, new PushMemory()),
    );
    assert.deepEqual(gw.writes, []);
  });
});
