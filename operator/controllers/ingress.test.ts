import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { silentLogger } from '../../lib/log.ts';
import { INGRESS_LABEL } from '../translate/ingress.ts';
import type { ApiObject } from './api-definition.ts';
import {
  APIS_ANNOTATION,
  INGRESS_CONTROLLER,
  INGRESS_FINALIZER,
  addressEntry,
  isOurIngress,
  reconcileIngress,
  serviceAddresses,
  type IngressClassView,
  type IngressDeps,
  type IngressObject,
  type OasTemplateView,
} from './ingress.ts';
import { fakeEvents, settle } from './testing.ts';

const ours: IngressClassView = { metadata: { name: 'svc' }, spec: { controller: INGRESS_CONTROLLER } };
const oursDefault: IngressClassView = {
  metadata: { name: 'svc', annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } },
  spec: { controller: INGRESS_CONTROLLER },
};
const nginx: IngressClassView = { metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } };

test('which Ingresses are ours', () => {
  const cases: {
    name: string;
    className?: string;
    annotation?: string;
    classes: IngressClassView[];
    want: boolean;
  }[] = [
    { name: 'ingressClassName naming our class', className: 'svc', classes: [ours, nginx], want: true },
    {
      name: 'ingressClassName naming another controller',
      className: 'nginx',
      classes: [ours, nginx],
      want: false,
    },
    { name: 'ingressClassName naming no IngressClass', className: 'ghost', classes: [ours], want: false },
    {
      name: 'the legacy annotation equal to WATCH_INGRESS_CLASS',
      annotation: 'svc',
      classes: [],
      want: true,
    },
    {
      name: 'the legacy annotation of another class',
      annotation: 'nginx',
      classes: [oursDefault],
      want: false,
    },
    { name: 'no class, ours the default', classes: [oursDefault, nginx], want: true },
    { name: 'no class, ours not the default', classes: [ours, nginx], want: false },
    {
      name: 'ingressClassName wins over the annotation',
      className: 'nginx',
      annotation: 'svc',
      classes: [ours, nginx],
      want: false,
    },
  ];
  for (const c of cases) {
    const annotations: Record<string, string> =
      c.annotation === undefined ? {} : { 'kubernetes.io/ingress.class': c.annotation };
    const ing = {
      metadata: { annotations },
      spec: c.className === undefined ? {} : { ingressClassName: c.className },
    };
    assert.equal(isOurIngress(ing, c.classes, 'svc'), c.want, c.name);
  }
});

test('load balancer addresses: the LB status, else external IPs, else the cluster IP; a configured address', () => {
  assert.deepEqual(serviceAddresses(undefined), []);
  assert.deepEqual(
    serviceAddresses({
      spec: { clusterIP: '10.0.0.1' },
      status: { loadBalancer: { ingress: [{ hostname: 'lb.example.com' }] } },
    }),
    [{ hostname: 'lb.example.com' }],
  );
  assert.deepEqual(serviceAddresses({ spec: { clusterIP: '10.0.0.1', externalIPs: ['1.2.3.4'] } }), [
    { ip: '1.2.3.4' },
  ]);
  assert.deepEqual(serviceAddresses({ spec: { clusterIP: '10.0.0.1' } }), [{ ip: '10.0.0.1' }]);
  assert.deepEqual(serviceAddresses({ spec: { clusterIP: 'None' } }), []);
  assert.deepEqual(addressEntry('192.0.2.7'), { ip: '192.0.2.7' });
  assert.deepEqual(addressEntry('2001:db8::1'), { ip: '2001:db8::1' });
  assert.deepEqual(addressEntry('gw.example.com'), { hostname: 'gw.example.com' });
});

/** A cluster in memory: the Ingress, Services, Secrets, ApiDefinitions, and what was written. */
function cluster(ingress: IngressObject) {
  const apis = new Map<string, ApiObject>();
  const oasTemplates = new Map<string, OasTemplateView>();
  const writes: string[] = [];
  const events = fakeEvents();
  let current: IngressObject | undefined = structuredClone(ingress);
  const services = new Map<string, k8s.V1Service>([
    ['web', { spec: { ports: [{ name: 'http', port: 80 }] } }],
  ]);
  const secrets = new Set<string>();
  let lb: k8s.V1IngressLoadBalancerIngress[] = [{ ip: '192.0.2.1' }];
  let failCreate: Error | undefined;
  const deps: IngressDeps = {
    read: () => Promise.resolve(current && structuredClone(current)),
    classes: () => [ours],
    watchClass: 'svc',
    httpPort: 8080,
    httpsPort: 8443,
    service: (_ns, name) => services.get(name),
    secretExists: (_ns, name) => secrets.has(name),
    apiDefinition: (_ns, name) => apis.get(name),
    oasTemplate: (_ns, name) => oasTemplates.get(name),
    generated: (ing) =>
      [...apis.values()].filter((a) => a.metadata.labels?.[INGRESS_LABEL] === ing.metadata.name),
    apis: {
      create: (obj) => {
        if (failCreate) return Promise.reject(failCreate);
        if (apis.has(obj.metadata.name)) return Promise.resolve(false);
        writes.push(`create ${obj.metadata.name}`);
        apis.set(obj.metadata.name, structuredClone(obj));
        return Promise.resolve(true);
      },
      replace: (obj) => {
        writes.push(`replace ${obj.metadata.name}`);
        apis.set(obj.metadata.name, structuredClone(obj));
        return Promise.resolve();
      },
      delete: (_ns, name) => {
        if (apis.delete(name)) writes.push(`delete ${name}`);
        return Promise.resolve();
      },
    },
    ingresses: {
      prepare: (obj, list) => {
        const had = obj.metadata.finalizers?.includes(INGRESS_FINALIZER) ?? false;
        writes.push(`prepare${had ? '' : ' +finalizer'} ${list ?? '(removed)'}`);
        const next = {
          ...obj,
          metadata: {
            ...obj.metadata,
            finalizers: [INGRESS_FINALIZER],
            annotations: { ...obj.metadata.annotations, [APIS_ANNOTATION]: list ?? '' },
          },
        };
        current = structuredClone(next);
        return Promise.resolve(next);
      },
      removeFinalizer: () => {
        writes.push('-finalizer');
        current = undefined;
        return Promise.resolve();
      },
      patchLoadBalancer: (_obj, ingress) => {
        writes.push(`loadBalancer ${JSON.stringify(ingress)}`);
        if (current) current.status = { loadBalancer: { ingress } };
        return Promise.resolve();
      },
    },
    loadBalancer: () => Promise.resolve(lb),
    events,
    reported: new Map(),
    log: silentLogger(),
  };
  return {
    deps,
    apis,
    writes,
    events: events.lines,
    services,
    secrets,
    oasTemplates,
    setLb: (v: k8s.V1IngressLoadBalancerIngress[]) => (lb = v),
    failCreateWith: (e: Error | undefined) => (failCreate = e),
    update: (f: (i: IngressObject) => void) => {
      if (current) f(current);
    },
  };
}

const ingress = (): IngressObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name: 'shop', namespace: 'web', uid: 'uid-1', generation: 1 },
  spec: {
    ingressClassName: 'svc',
    rules: [
      {
        host: 'shop.example.com',
        http: {
          paths: [
            { path: '/a', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
            { path: '/b', pathType: 'Prefix', backend: { service: { name: 'web', port: { name: 'http' } } } },
          ],
        },
      },
    ],
  },
});

test('an Ingress of our class: its ApiDefinitions created, owned and listed, the address written; a second pass writes nothing', async () => {
  const c = cluster(ingress());
  assert.deepEqual(await reconcileIngress('web/shop', c.deps), {});
  const created = [...c.apis.values()];
  assert.equal(created.length, 2);
  for (const api of created) {
    assert.equal(api.metadata.ownerReferences?.[0]?.uid, 'uid-1');
    assert.equal(api.metadata.labels?.[INGRESS_LABEL], 'shop');
    assert.equal(api.spec.proxy.target_url, 'http://web.web.svc:80');
  }
  // The finalizer and the list of APIs in one write, before the APIs are created.
  assert.match(c.writes[0] ?? '', /^prepare \+finalizer shop-[0-9a-f]{12}=ingress-[0-9a-f]{32},shop-/);
  assert.match(c.writes[1] ?? '', /^create shop-/);
  assert.ok(c.writes.includes('loadBalancer [{"ip":"192.0.2.1"}]'));
  assert.equal(c.events.filter((e) => e.startsWith('Normal Created: ApiDefinition shop-')).length, 2);
  const before = c.writes.length;
  await reconcileIngress('web/shop', c.deps);
  assert.deepEqual(c.writes.slice(before), [], 'nothing changed, nothing written');
});

test('a path removed deletes its ApiDefinition; a changed backend replaces it', async () => {
  const c = cluster(ingress());
  await reconcileIngress('web/shop', c.deps);
  c.services.set('other', { spec: { ports: [{ port: 9000 }] } });
  c.update((i) => {
    const paths = i.spec?.rules?.[0]?.http?.paths ?? [];
    paths.pop();
    const first = paths[0];
    if (first) first.backend = { service: { name: 'other', port: { number: 9000 } } };
  });
  c.writes.length = 0;
  await reconcileIngress('web/shop', c.deps);
  assert.equal(c.writes.filter((w) => w.startsWith('replace ')).length, 1);
  assert.equal(c.writes.filter((w) => w.startsWith('delete ')).length, 1);
  assert.equal([...c.apis.values()][0]?.spec.proxy.target_url, 'http://other.web.svc:9000');
});

test('a missing Service: a Warning Event naming the field, a retry, the other path served; no new Event on the retry', async () => {
  const c = cluster(ingress());
  c.update((i) => {
    const p = i.spec?.rules?.[0]?.http?.paths[1];
    if (p) p.backend = { service: { name: 'absent', port: { number: 80 } } };
  });
  const first = await reconcileIngress('web/shop', c.deps);
  assert.deepEqual(first, { requeueAfterMs: 30_000 });
  assert.equal(c.apis.size, 1);
  const warnings = c.events.filter((e) => e.startsWith('Warning'));
  assert.deepEqual(warnings, [
    'Warning ServiceNotFound: spec.rules[0].http.paths[1].backend.service.name: Not found: Service web/absent does not exist',
  ]);
  await reconcileIngress('web/shop', c.deps);
  assert.equal(
    c.events.filter((e) => e.startsWith('Warning')).length,
    1,
    'the same problem is not reported twice',
  );
  c.services.set('absent', { spec: { ports: [{ port: 80 }] } });
  assert.deepEqual(await reconcileIngress('web/shop', c.deps), {});
  assert.equal(c.apis.size, 2);
});

test('a TLS host whose Secret is missing: an Event and a retry; served over HTTPS once it exists', async () => {
  const c = cluster(ingress());
  c.update((i) => {
    if (i.spec) i.spec.tls = [{ hosts: ['shop.example.com'], secretName: 'shop-tls' }];
  });
  assert.deepEqual(await reconcileIngress('web/shop', c.deps), { requeueAfterMs: 30_000 });
  assert.equal(c.apis.size, 0);
  assert.match(
    c.events.join('\n'),
    /Warning SecretNotFound: spec\.tls\[0\]\.secretName: Not found: Secret web\/shop-tls/,
  );
  c.secrets.add('shop-tls');
  assert.deepEqual(await reconcileIngress('web/shop', c.deps), {});
  const served = [...c.apis.values()];
  assert.equal(served.length, 2);
  for (const api of served) {
    assert.equal(api.spec.protocol, 'https');
    assert.equal(api.spec.listen_port, 8443);
    assert.deepEqual(api.spec.certificate_secret_names, ['shop-tls']);
  }
});

test('a failed create is an Event and a retry with backoff (thrown), never a crash of the others', async () => {
  const c = cluster(ingress());
  c.failCreateWith(Object.assign(new Error('connection refused'), {}));
  const got = await settle(reconcileIngress('web/shop', c.deps));
  assert.ok(got.thrown, 'thrown to be retried');
  assert.match(
    c.events.join('\n'),
    /Warning ApiWriteFailed: ApiDefinition web\/shop-[0-9a-f]+: connection refused/,
  );
});

test('a template: the APIs built from it; a template missing or not labelled changes nothing', async () => {
  const c = cluster(ingress());
  c.update((i) => {
    i.metadata.annotations = { 'svc.io/template': 'auth' };
  });
  assert.deepEqual(await reconcileIngress('web/shop', c.deps), {});
  assert.equal(c.apis.size, 0);
  assert.match(
    c.events.join('\n'),
    /Warning TemplateNotFound: metadata\.annotations\[svc\.io\/template\]: Not found: no ApiDefinition or SvcOasApiDefinition web\/auth/,
  );
  const template: ApiObject = {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name: 'auth', namespace: 'web' },
    spec: {
      name: 'auth',
      use_keyless: false,
      use_standard_auth: true,
      proxy: { listen_path: '/', target_url: 'http://x' },
    },
  };
  c.apis.set('auth', template);
  await reconcileIngress('web/shop', c.deps);
  assert.match(c.events.join('\n'), /Warning TemplateInvalid: .* is not a template/);
  template.metadata.labels = { 'svc.io/template': 'true' };
  await reconcileIngress('web/shop', c.deps);
  const built = [...c.apis.values()].filter((a) => a.metadata.labels?.[INGRESS_LABEL] === 'shop');
  assert.equal(built.length, 2);
  for (const api of built) {
    assert.equal(api.spec.use_standard_auth, true);
    assert.equal(api.spec.use_keyless, false);
  }
});

test('deleted, or no longer of our class: its ApiDefinitions deleted, then the finalizer removed', async () => {
  for (const change of [
    (i: IngressObject) => {
      i.metadata.deletionTimestamp = new Date();
    },
    (i: IngressObject) => {
      if (i.spec) i.spec.ingressClassName = 'nginx';
    },
  ]) {
    const c = cluster(ingress());
    await reconcileIngress('web/shop', c.deps);
    assert.equal(c.apis.size, 2);
    c.update(change);
    c.writes.length = 0;
    await reconcileIngress('web/shop', c.deps);
    assert.equal(c.apis.size, 0);
    assert.deepEqual(
      c.writes.map((w) => w.replace(/ shop-.*/, ' shop-*')),
      ['delete shop-*', 'delete shop-*', '-finalizer'],
    );
  }
});

test('an Ingress of another class is left alone', async () => {
  const c = cluster(ingress());
  c.update((i) => {
    if (i.spec) i.spec.ingressClassName = 'nginx';
  });
  await reconcileIngress('web/shop', c.deps);
  assert.deepEqual(c.writes, []);
  assert.deepEqual(c.events, []);
});

test('no address configured or published: the status is left as it is', async () => {
  const c = cluster(ingress());
  c.setLb([]);
  await reconcileIngress('web/shop', c.deps);
  assert.ok(!c.writes.some((w) => w.startsWith('loadBalancer')));
});

test('contains: the stored spec may add defaults, not differ', async () => {
  const { contains } = await import('./ingress.ts');
  assert.equal(contains({ a: 1, b: { c: 2, d: true } }, { b: { c: 2 } }), true);
  assert.equal(contains({ a: 1, b: { c: 3 } }, { b: { c: 2 } }), false);
  assert.equal(contains({ list: [1, 2, 3] }, { list: [1, 2] }), false, 'arrays whole');
  assert.equal(contains({}, { a: undefined }), true);
  assert.equal(contains({ a: 1 }, { a: 1, b: 2 }), false);
});

test("a generated ApiDefinition with the API server's defaults added is not rewritten; one edited by hand is put back", async () => {
  const c = cluster(ingress());
  await reconcileIngress('web/shop', c.deps);
  for (const api of c.apis.values()) {
    api.spec.version_data = { not_versioned: true };
    api.spec.proxy = { ...api.spec.proxy, preserve_host_header: false };
  }
  c.writes.length = 0;
  await reconcileIngress('web/shop', c.deps);
  assert.deepEqual(c.writes, [], 'defaults added by the API server change nothing');
  const first = [...c.apis.values()][0];
  assert.ok(first);
  first.spec.proxy.target_url = 'http://elsewhere';
  await reconcileIngress('web/shop', c.deps);
  assert.deepEqual(c.writes, [`replace ${first.metadata.name}`]);
  assert.equal(c.apis.get(first.metadata.name)?.spec.proxy.target_url, 'http://web.web.svc:80');
});

test('an API created by a reconcile the cache has not caught up with: no error, no second Event', async () => {
  const c = cluster(ingress());
  await reconcileIngress('web/shop', c.deps);
  const stale = { ...c.deps, generated: () => [] };
  const events = c.events.length;
  assert.deepEqual(await reconcileIngress('web/shop', stale), {});
  assert.equal(c.events.length, events);
  assert.equal(c.apis.size, 2);
});

test('a conflict writing the Ingress (a cache behind our last write): tried again shortly, nothing else written', async () => {
  const c = cluster(ingress());
  const conflict = Object.assign(new Error('conflict'), {});
  const { ApiException } = await import('@kubernetes/client-node');
  const deps = {
    ...c.deps,
    ingresses: {
      ...c.deps.ingresses,
      prepare: () => Promise.reject(new ApiException(409, 'Conflict', conflict.message, {})),
    },
  };
  assert.deepEqual(await reconcileIngress('web/shop', deps), { requeueAfterMs: 250 });
  assert.deepEqual(c.writes, []);
  assert.equal(c.apis.size, 0);
});

test('an SvcOasApiDefinition template: its converted document used; not labelled or not converting, changes nothing', async () => {
  const c = cluster(ingress());
  c.update((i) => {
    i.metadata.annotations = { 'svc.io/template': 'petstore' };
  });
  const spec = {
    name: 'petstore',
    use_keyless: false,
    use_standard_auth: true,
    proxy: { listen_path: '/p/' },
  };
  c.oasTemplates.set('petstore', { labelled: false, deleting: false, spec: { ok: true, spec } });
  await reconcileIngress('web/shop', c.deps);
  assert.match(
    c.events.join('\n'),
    /Warning TemplateInvalid: .*SvcOasApiDefinition web\/petstore is not a template/,
  );
  c.oasTemplates.set('petstore', {
    labelled: true,
    deleting: false,
    spec: { ok: false, message: 'its document does not convert: x' },
  });
  await reconcileIngress('web/shop', c.deps);
  assert.match(
    c.events.join('\n'),
    /Warning TemplateInvalid: .*SvcOasApiDefinition web\/petstore: its document does not convert/,
  );
  assert.equal(c.apis.size, 0);
  c.oasTemplates.set('petstore', { labelled: true, deleting: false, spec: { ok: true, spec } });
  await reconcileIngress('web/shop', c.deps);
  assert.equal(c.apis.size, 2);
  for (const api of c.apis.values()) {
    assert.equal(api.spec.use_standard_auth, true);
    assert.notEqual(api.spec.proxy.listen_path, '/p/');
  }
  // Being deleted, it is gone for the Ingress: nothing changes, a TemplateNotFound.
  c.oasTemplates.set('petstore', { labelled: true, deleting: true, spec: { ok: true, spec } });
  await reconcileIngress('web/shop', c.deps);
  assert.match(
    c.events.join('\n'),
    /Warning TemplateNotFound: .*no ApiDefinition or SvcOasApiDefinition web\/petstore/,
  );
  assert.equal(c.apis.size, 2);
});

test('a generated API the API server refuses (the webhook: a route another API claims): a Warning, no retry loop', async () => {
  const { ApiException } = await import('@kubernetes/client-node');
  const c = cluster(ingress());
  c.failCreateWith(
    new ApiException(403, 'Forbidden', 'admission webhook denied: listen path "/a" is already claimed', {}),
  );
  const got = await reconcileIngress('web/shop', c.deps);
  assert.deepEqual(got, {}, 'waits for a change instead of retrying');
  const refused = c.events.filter((e) => e.startsWith('Warning ApiRefused: ApiDefinition web/shop-'));
  assert.equal(refused.length, 2);
  assert.match(refused[0] ?? '', /already claimed/);
});

test('urlPort: the port of SVC_URL, the scheme default without one', async () => {
  const { urlPort } = await import('./ingress.ts');
  assert.equal(urlPort('http://gw.svc:8080'), 8080);
  assert.equal(urlPort('https://gw.svc'), 443);
  assert.equal(urlPort('http://gw.svc/'), 80);
  assert.equal(urlPort('not a url'), undefined);
  assert.equal(urlPort(undefined), undefined);
});
