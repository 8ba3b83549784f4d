import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { recordingLogger } from '../lib/testing/log.ts';
import { CacheNotSyncedError } from './lookups.ts';
import type { Lookups } from './lookups.ts';
import { memoryLookups } from './memory-lookups.ts';
import { admissionApp } from './server.ts';
import type { AdmissionReview, ReviewOutcome } from './server.ts';
import {
  API_FINALIZER,
  CONTEXT_FINALIZER,
  OAS_FINALIZER,
  POLICY_FINALIZER,
  STREAMS_FINALIZER,
} from '../schemas/finalizers.ts';
import type { PatchOp } from './json-patch.ts';
import { apiDefinition, applyPatch, oasApi, operatorContext, securityPolicy, streamsApi } from './testing.ts';

const never: Lookups = {
  configMap: () => new Promise(() => undefined),
  secretKeys: () => new Promise(() => undefined),
  get: () => new Promise(() => undefined),
  list: () => new Promise(() => undefined),
  ingresses: () => new Promise(() => undefined),
};
const failing: Lookups = {
  configMap: () => Promise.reject(new Error('boom: connection refused')),
  secretKeys: () => Promise.reject(new Error('boom: connection refused')),
  get: () => Promise.reject(new Error('boom: connection refused')),
  list: () => Promise.reject(new Error('boom: connection refused')),
  ingresses: () => Promise.reject(new Error('boom: connection refused')),
};

interface Server {
  url: string;
  close: () => Promise<void>;
}

async function serve(
  lookups: Lookups,
  opts: { ready?: boolean; deadlineMs?: number; finalizerNamespaces?: readonly string[] | false } = {},
): Promise<
  Server & {
    lines: { level: string; message: string; fields: Record<string, unknown> }[];
    outcomes: ReviewOutcome[];
  }
> {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const outcomes: ReviewOutcome[] = [];
  const app = admissionApp({
    lookups,
    log: recordingLogger(lines),
    ready: () => opts.ready ?? true,
    onReview: (o) => outcomes.push(o),
    ...(opts.deadlineMs === undefined ? {} : { deadlineMs: opts.deadlineMs }),
    ...(opts.finalizerNamespaces === undefined ? {} : { finalizerNamespaces: opts.finalizerNamespaces }),
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    lines,
    outcomes,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

function review(request: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u-1', ...request } };
}

const kindOf = (kind: string, group = 'svc.svc.io'): Record<string, string> => ({
  group,
  version: 'v1alpha1',
  kind,
});

/** The review of a DELETE of the ApiDefinition default/orders. */
const deleteOrders = (): Record<string, unknown> =>
  review({
    kind: kindOf('ApiDefinition'),
    operation: 'DELETE',
    name: 'orders',
    namespace: 'default',
    oldObject: apiDefinition('orders'),
  });

async function post(
  base: string,
  path: string,
  body: unknown,
): Promise<{ status: number; json: AdmissionReview & { error?: string } }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as AdmissionReview & { error?: string } };
}

describe('admission server', () => {
  let s: Awaited<ReturnType<typeof serve>>;
  const cluster = [
    apiDefinition('orders'),
    securityPolicy('gold', { access_rights_array: [{ name: 'orders' }] }),
  ];
  before(async () => {
    s = await serve(memoryLookups(cluster));
  });
  after(async () => {
    await s.close();
  });

  test('mutate answers with a JSON patch of the defaults', async () => {
    const obj = securityPolicy('plan', { access_rights_array: [{ name: 'orders' }] }, 'shop');
    const { status, json } = await post(
      s.url,
      '/mutate/securitypolicies',
      review({ kind: kindOf('SecurityPolicy'), operation: 'CREATE', namespace: 'shop', object: obj }),
    );
    assert.equal(status, 200);
    assert.equal(json.apiVersion, 'admission.k8s.io/v1');
    assert.equal(json.response.uid, 'u-1');
    assert.equal(json.response.allowed, true);
    assert.equal(json.response.patchType, 'JSONPatch');
    assert.deepEqual(JSON.parse(Buffer.from(json.response.patch ?? '', 'base64').toString()), [
      { op: 'add', path: '/spec/access_rights_array/0/kind', value: 'ApiDefinition' },
      { op: 'add', path: '/spec/access_rights_array/0/namespace', value: 'shop' },
      { op: 'add', path: '/spec/access_rights_array/0/versions', value: ['Default'] },
    ]);
  });

  test('mutate takes the namespace from the request when the object has none', async () => {
    const obj = securityPolicy('plan', {
      access_rights_array: [{ name: 'orders', kind: 'ApiDefinition', versions: ['Default'] }],
    });
    delete (obj.metadata as Record<string, unknown>).namespace;
    const { json } = await post(
      s.url,
      '/mutate/securitypolicies',
      review({ kind: kindOf('SecurityPolicy'), operation: 'CREATE', namespace: 'shop', object: obj }),
    );
    assert.deepEqual(JSON.parse(Buffer.from(json.response.patch ?? '', 'base64').toString()), [
      { op: 'add', path: '/spec/access_rights_array/0/namespace', value: 'shop' },
    ]);
  });

  test('mutate without changes sends no patch; objects being deleted are left alone', async () => {
    const done = securityPolicy('plan');
    const r1 = await post(
      s.url,
      '/mutate/securitypolicies',
      review({ kind: kindOf('SecurityPolicy'), operation: 'UPDATE', object: done, oldObject: done }),
    );
    assert.deepEqual(r1.json.response, { uid: 'u-1', allowed: true });
    const deleting = securityPolicy('plan', { access_rights_array: [{ name: 'orders' }] });
    (deleting.metadata as Record<string, unknown>).deletionTimestamp = '2026-01-01T00:00:00Z';
    const r2 = await post(
      s.url,
      '/mutate/securitypolicies',
      review({ kind: kindOf('SecurityPolicy'), operation: 'UPDATE', object: deleting, oldObject: deleting }),
    );
    assert.deepEqual(r2.json.response, { uid: 'u-1', allowed: true });
  });

  test('validate admits with warnings', async () => {
    const obj = securityPolicy('plan', { access_rights_array: [{ name: 'missing' }] });
    const { json } = await post(
      s.url,
      '/validate/securitypolicies',
      review({ kind: kindOf('SecurityPolicy'), operation: 'CREATE', namespace: 'default', object: obj }),
    );
    assert.deepEqual(json.response, {
      uid: 'u-1',
      allowed: true,
      warnings: [
        'spec.access_rights_array[0]: ApiDefinition default/missing does not exist yet: the policy covers it once it is created',
      ],
    });
  });

  test('a refusal lists every problem with its path, and the causes', async () => {
    const obj = apiDefinition('bad', {
      use_standard_auth: true,
      allowed_ips: ['10.*'],
      proxy: { listen_path: '/bad/' },
    });
    const { json } = await post(
      s.url,
      '/validate/apidefinitions',
      review({
        kind: kindOf('ApiDefinition'),
        operation: 'CREATE',
        name: 'bad',
        namespace: 'default',
        object: obj,
      }),
    );
    assert.equal(json.response.allowed, false);
    assert.deepEqual(json.response.status, {
      code: 422,
      reason: 'Invalid',
      message: [
        'ApiDefinition default/bad is invalid (3 problems):',
        '  - spec.allowed_ips[0]: Invalid value: "10.*": wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8',
        '  - spec.proxy.target_url: Required value: set the upstream address, such as http://<service>.<namespace>.svc:<port>',
        '  - spec.use_keyless: Forbidden: use_keyless excludes authentication, but use_standard_auth is true: set use_keyless to false, or turn use_standard_auth off',
      ].join('\n'),
      details: {
        name: 'bad',
        group: 'svc.svc.io',
        kind: 'ApiDefinition',
        causes: [
          {
            reason: 'FieldValueInvalid',
            field: 'spec.allowed_ips[0]',
            message:
              'Invalid value: "10.*": wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8',
          },
          {
            reason: 'FieldValueRequired',
            field: 'spec.proxy.target_url',
            message:
              'Required value: set the upstream address, such as http://<service>.<namespace>.svc:<port>',
          },
          {
            reason: 'FieldValueForbidden',
            field: 'spec.use_keyless',
            message:
              'Forbidden: use_keyless excludes authentication, but use_standard_auth is true: set use_keyless to false, or turn use_standard_auth off',
          },
        ],
      },
    });
  });

  test('a single problem fits on one line', async () => {
    const obj = securityPolicy('plan', { state: 'on' });
    const { json } = await post(
      s.url,
      '/validate/securitypolicies',
      review({
        kind: kindOf('SecurityPolicy'),
        operation: 'CREATE',
        name: 'plan',
        namespace: 'default',
        object: obj,
      }),
    );
    assert.equal(
      json.response.status?.message,
      'SecurityPolicy default/plan is invalid: spec.state: Unsupported value: "on": use active, draft or deny',
    );
  });

  test('an UPDATE that leaves the spec alone is admitted without checks', async () => {
    const t = await serve(failing);
    try {
      const obj = apiDefinition('orders', { use_standard_auth: true });
      const labelled = { ...obj, metadata: { ...(obj.metadata as object), labels: { a: 'b' } } };
      const { json } = await post(
        t.url,
        '/validate/apidefinitions',
        review({ kind: kindOf('ApiDefinition'), operation: 'UPDATE', object: labelled, oldObject: obj }),
      );
      assert.deepEqual(json.response, { uid: 'u-1', allowed: true });
    } finally {
      await t.close();
    }
  });

  test('an UPDATE of an object being deleted (finalizers) is admitted', async () => {
    const obj = apiDefinition('orders', { use_standard_auth: true });
    const deleting = {
      ...obj,
      metadata: { ...(obj.metadata as object), deletionTimestamp: '2026-01-01T00:00:00Z' },
    };
    const { json } = await post(
      s.url,
      '/validate/apidefinitions',
      review({
        kind: kindOf('ApiDefinition'),
        operation: 'UPDATE',
        object: deleting,
        oldObject: { ...deleting, spec: {} },
      }),
    );
    assert.deepEqual(json.response, { uid: 'u-1', allowed: true });
  });

  test('a DELETE of a referenced API is forbidden, naming the dependents', async () => {
    const { json } = await post(s.url, '/validate/apidefinitions', deleteOrders());
    assert.equal(json.response.allowed, false);
    assert.equal(json.response.status?.code, 403);
    assert.equal(json.response.status.reason, 'Forbidden');
    assert.equal(
      json.response.status.message,
      'ApiDefinition default/orders is still used by SecurityPolicy default/gold: remove it from the access_rights_array of these policies (or delete them) first',
    );
  });

  test('a DELETE of a kind without a delete rule is admitted', async () => {
    const { json } = await post(
      s.url,
      '/validate/securitypolicies',
      review({
        kind: kindOf('SecurityPolicy'),
        operation: 'DELETE',
        name: 'gold',
        namespace: 'default',
        oldObject: securityPolicy('gold'),
      }),
    );
    assert.deepEqual(json.response, { uid: 'u-1', allowed: true });
  });

  test('ConfigMaps are admitted through the core group', async () => {
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x', namespace: 'default' },
      data: { a: 'b' },
    };
    const { json } = await post(
      s.url,
      '/validate/configmaps',
      review({ kind: { group: '', version: 'v1', kind: 'ConfigMap' }, operation: 'DELETE', oldObject: cm }),
    );
    assert.deepEqual(json.response, { uid: 'u-1', allowed: true });
  });

  test('malformed requests get 400', async () => {
    const r1 = await post(s.url, '/validate/apidefinitions', { kind: 'AdmissionReview' });
    assert.equal(r1.status, 400);
    assert.equal(r1.json.error, 'expected an AdmissionReview of admission.k8s.io/v1');
    const r2 = await post(s.url, '/validate/apidefinitions', '{"not json');
    assert.equal(r2.status, 400);
    const r3 = await post(
      s.url,
      '/validate/apidefinitions',
      review({ kind: kindOf('ApiDefinition'), operation: 'PATCH' }),
    );
    assert.equal(r3.status, 400);
    assert.equal(r3.json.error, 'unknown operation PATCH');
  });

  test('health endpoints', async () => {
    assert.equal((await fetch(`${s.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${s.url}/readyz`)).status, 200);
    const t = await serve(failing, { ready: false });
    try {
      assert.equal((await fetch(`${t.url}/readyz`)).status, 503);
      assert.equal((await fetch(`${t.url}/healthz`)).status, 200);
    } finally {
      await t.close();
    }
  });

  test('every review is reported for metrics', () => {
    assert.ok(
      s.outcomes.some(
        (o) => o.resource === 'securitypolicies' && o.mode === 'mutate' && o.outcome === 'allowed',
      ),
    );
    assert.ok(
      s.outcomes.some(
        (o) => o.resource === 'apidefinitions' && o.mode === 'validate' && o.outcome === 'denied',
      ),
    );
  });
});

describe("the operator's finalizer", () => {
  type Obj = Record<string, unknown>;
  const withMeta = (obj: Obj, extra: Obj): Obj => ({
    ...obj,
    metadata: { ...(obj.metadata as Obj), ...extra },
  });
  const template = withMeta(apiDefinition('tpl', {}, 'shop'), { labels: { 'svc.io/template': 'true' } });
  const noNamespace = apiDefinition('orders', {}, 'shop');
  delete (noNamespace.metadata as Obj).namespace;
  /** Served with the operator watching shop and default, unless `namespaces` says otherwise. */
  const cases: {
    name: string;
    resource: string;
    kind: string;
    operation?: 'CREATE' | 'UPDATE';
    object: Obj;
    namespaces?: readonly string[] | false;
    /** metadata.finalizers after the patch (undefined: none). */
    want: string[] | undefined;
  }[] = [
    {
      name: 'an ApiDefinition created gets it',
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      object: apiDefinition('orders', {}, 'shop'),
      want: [API_FINALIZER],
    },
    {
      name: "it is added after others' finalizers",
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      object: withMeta(apiDefinition('orders', {}, 'shop'), { finalizers: ['example.com/keep'] }),
      want: ['example.com/keep', API_FINALIZER],
    },
    {
      name: 'one that has it keeps it once',
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      object: withMeta(apiDefinition('orders', {}, 'shop'), { finalizers: [API_FINALIZER] }),
      want: [API_FINALIZER],
    },
    {
      name: 'the namespace comes from the request when the object has none',
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      object: noNamespace,
      want: [API_FINALIZER],
    },
    {
      name: 'an UPDATE of one without it (created before, or a server-side apply) adds it',
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      operation: 'UPDATE',
      object: apiDefinition('orders', {}, 'shop'),
      want: [API_FINALIZER],
    },
    {
      name: 'outside the watched namespaces: none (nobody would remove it)',
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      object: apiDefinition('orders', {}, 'elsewhere'),
      want: undefined,
    },
    {
      name: 'the operator watching every namespace: added anywhere',
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      object: apiDefinition('orders', {}, 'elsewhere'),
      namespaces: [],
      want: [API_FINALIZER],
    },
    {
      name: 'no operator beside the webhook: none',
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      object: apiDefinition('orders', {}, 'shop'),
      namespaces: false,
      want: undefined,
    },
    {
      name: 'a template: none (its API controller skips it)',
      resource: 'apidefinitions',
      kind: 'ApiDefinition',
      object: template,
      want: undefined,
    },
    {
      name: 'an SvcOasApiDefinition',
      resource: 'svcoasapidefinitions',
      kind: 'SvcOasApiDefinition',
      object: oasApi('pets', 'pets-oas', 'oas.yaml', 'shop'),
      want: [OAS_FINALIZER],
    },
    {
      name: 'an SvcStreamsApiDefinition',
      resource: 'svcstreamsapidefinitions',
      kind: 'SvcStreamsApiDefinition',
      object: streamsApi('events', 'events-doc', 'streams.yaml', 'shop'),
      want: [STREAMS_FINALIZER],
    },
    {
      name: 'a SecurityPolicy',
      resource: 'securitypolicies',
      kind: 'SecurityPolicy',
      object: securityPolicy('plan', {}, 'default'),
      want: [POLICY_FINALIZER],
    },
    {
      name: 'an OperatorContext',
      resource: 'operatorcontexts',
      kind: 'OperatorContext',
      object: operatorContext('ctx', { env: { mode: 'ce', url: 'http://gw:8080' } }, 'default'),
      want: [CONTEXT_FINALIZER],
    },
  ];

  const servers = new Map<string, Awaited<ReturnType<typeof serve>>>();
  const server = async (namespaces: readonly string[] | false): Promise<string> => {
    const key = JSON.stringify(namespaces);
    let srv = servers.get(key);
    if (srv === undefined) {
      srv = await serve(memoryLookups([]), { finalizerNamespaces: namespaces });
      servers.set(key, srv);
    }
    return srv.url;
  };
  after(async () => {
    await Promise.all([...servers.values()].map((srv) => srv.close()));
  });

  for (const c of cases) {
    test(c.name, async () => {
      const { json } = await post(
        await server(c.namespaces ?? ['shop', 'default']),
        `/mutate/${c.resource}`,
        review({
          kind: kindOf(c.kind),
          operation: c.operation ?? 'CREATE',
          namespace: (c.object.metadata as Obj).namespace ?? 'shop',
          object: c.object,
          ...(c.operation === 'UPDATE' ? { oldObject: c.object } : {}),
        }),
      );
      assert.equal(json.response.allowed, true);
      const ops = JSON.parse(Buffer.from(json.response.patch ?? 'W10=', 'base64').toString()) as PatchOp[];
      const patched = applyPatch(c.object, ops) as { metadata: { finalizers?: string[] } };
      assert.deepEqual(patched.metadata.finalizers, c.want);
      // Only finalizers change in metadata.
      for (const op of ops.filter((o) => o.path.startsWith('/metadata'))) {
        assert.match(op.path, /^\/metadata\/finalizers/);
      }
    });
  }

  test('an object being deleted is left alone', async () => {
    const deleting = withMeta(apiDefinition('orders', {}, 'shop'), {
      deletionTimestamp: '2026-01-01T00:00:00Z',
      finalizers: ['example.com/keep'],
    });
    for (const operation of ['CREATE', 'UPDATE']) {
      const { json } = await post(
        await server(['shop']),
        '/mutate/apidefinitions',
        review({
          kind: kindOf('ApiDefinition'),
          operation,
          namespace: 'shop',
          object: deleting,
          oldObject: deleting,
        }),
      );
      assert.deepEqual(json.response, { uid: 'u-1', allowed: true });
    }
  });
});

describe('internal errors', () => {
  test('deny with a generic message and an error ID that the log carries with the detail', async () => {
    const s = await serve(failing);
    try {
      const { json } = await post(s.url, '/validate/apidefinitions', deleteOrders());
      assert.equal(json.response.allowed, false);
      assert.equal(json.response.status?.code, 500);
      const id = /error ID ([0-9a-f]{12})/.exec(json.response.status.message)?.[1];
      assert.ok(id, json.response.status.message);
      assert.equal(json.response.status.message.includes('boom'), false, 'the detail stays in the log');
      const line = s.lines.find((l) => l.fields.errorId === id);
      assert.equal(line?.level, 'error');
      assert.equal(line.fields.error, 'boom: connection refused');
      assert.equal(line.fields.uid, 'u-1');
      assert.deepEqual(
        s.outcomes.map((o) => o.outcome),
        ['error'],
      );
    } finally {
      await s.close();
    }
  });

  test('a review that needs a watch cache not loaded yet is refused, saying so', async () => {
    const notSynced = new CacheNotSyncedError('securitypolicies');
    const s = await serve({ ...failing, list: () => Promise.reject(notSynced) });
    try {
      const { json } = await post(s.url, '/validate/apidefinitions', deleteOrders());
      assert.equal(json.response.allowed, false);
      assert.equal(json.response.status?.code, 503);
      assert.equal(json.response.status.reason, 'ServiceUnavailable');
      assert.match(
        json.response.status.message,
        /has not loaded its cache of securitypolicies yet .*retry in a few seconds/,
      );
      assert.deepEqual(
        s.outcomes.map((o) => o.outcome),
        ['error'],
      );
    } finally {
      await s.close();
    }
  });

  test('a review that outlives the deadline is denied as an internal error', async () => {
    const s = await serve(never, { deadlineMs: 50 });
    try {
      const { json } = await post(
        s.url,
        '/validate/securitypolicies',
        review({
          kind: kindOf('SecurityPolicy'),
          operation: 'CREATE',
          object: securityPolicy('p', { access_rights_array: [{ name: 'x' }] }),
        }),
      );
      assert.equal(json.response.status?.code, 500);
      assert.match(s.lines.find((l) => l.level === 'error')?.fields.error as string, /longer than 50ms/);
    } finally {
      await s.close();
    }
  });

  test('a review of the wrong kind (a misconfigured webhook) is denied as an internal error', async () => {
    const s = await serve(memoryLookups([]));
    try {
      const { json } = await post(
        s.url,
        '/validate/apidefinitions',
        review({ kind: kindOf('SecurityPolicy'), operation: 'CREATE', object: securityPolicy('p') }),
      );
      assert.equal(json.response.status?.code, 500);
      assert.match(
        s.lines.find((l) => l.level === 'error')?.fields.error as string,
        /admits ApiDefinition, got svc.svc.io\/SecurityPolicy/,
      );
    } finally {
      await s.close();
    }
  });
});
