/**
 * The chart's part of the ingress controller: the IngressClass (`ingressClass.create`,
 * `ingressClass.name`, `ingressClass.default`) and the roles the operator and the webhooks need
 * for Ingresses, rendered by `helm template`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pick, renderChart, run, tool, chartDir } from './helpers.ts';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** The verbs a ClusterRole grants on `group/resource`. */
function verbs(role: { rules?: Rule[] } | undefined, group: string, resource: string): string[] {
  return [
    ...new Set(
      (role?.rules ?? [])
        .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
        .flatMap((r) => r.verbs),
    ),
  ].sort();
}

test('the IngressClass: installed by default, ours, not the default class', async () => {
  const [cls, ...more] = pick(await renderChart(), 'IngressClass');
  assert.equal(more.length, 0);
  assert.deepEqual((cls as { spec?: unknown } | undefined)?.spec, {
    controller: 'svc.io/ingress-controller',
  });
  assert.equal((cls as { metadata: { name: string } } | undefined)?.metadata.name, 'svc');
  assert.equal(
    (cls as { metadata: { annotations?: Record<string, string> } } | undefined)?.metadata.annotations?.[
      'ingressclass.kubernetes.io/is-default-class'
    ],
    undefined,
  );
});

test('ingressClass.default marks it the default class; a name; create=false leaves it out', async () => {
  const [cls] = pick(
    await renderChart(['ingressClass.default=true', 'ingressClass.name=gateway']),
    'IngressClass',
  );
  assert.ok(cls);
  const meta = (cls as { metadata: { name: string; annotations?: Record<string, string> } }).metadata;
  assert.equal(meta.name, 'gateway');
  assert.equal(meta.annotations?.['ingressclass.kubernetes.io/is-default-class'], 'true');
  assert.deepEqual(pick(await renderChart(['ingressClass.create=false']), 'IngressClass'), []);
});

test('a bad ingressClass value is refused by values.schema.json', async () => {
  for (const set of [
    'ingressClass.name=Not_A_Name',
    'ingressClass.colour=blue',
    'ingressClass.default=maybe',
  ]) {
    const r = await run(tool('helm'), ['template', 'svc-operator', chartDir, '--set', set]);
    assert.notEqual(r.code, 0, `helm accepted ${set}`);
  }
});

test('RBAC: the operator may manage Ingresses, read IngressClasses and Services, create and delete ApiDefinitions; the webhooks list and watch Ingresses', async () => {
  const objects = await renderChart();
  const manager = pick(objects, 'ClusterRole', 'svc-operator-manager-role')[0] as
    { rules?: Rule[] } | undefined;
  assert.deepEqual(verbs(manager, 'networking.k8s.io', 'ingresses'), [
    'get',
    'list',
    'patch',
    'update',
    'watch',
  ]);
  assert.deepEqual(verbs(manager, 'networking.k8s.io', 'ingresses/status'), ['patch', 'update']);
  assert.deepEqual(verbs(manager, 'networking.k8s.io', 'ingresses/finalizers'), ['update']);
  assert.deepEqual(verbs(manager, 'networking.k8s.io', 'ingressclasses'), ['get', 'list', 'watch']);
  assert.deepEqual(verbs(manager, '', 'services'), ['get', 'list', 'watch']);
  assert.deepEqual(verbs(manager, 'svc.svc.io', 'apidefinitions'), [
    'create',
    'delete',
    'get',
    'list',
    'patch',
    'update',
    'watch',
  ]);
  const webhook = pick(objects, 'ClusterRole', 'svc-operator-webhook-role')[0] as
    { rules?: Rule[] } | undefined;
  // Listed fresh when a template is deleted (webhooks/watch-lookups.ts), never watched.
  assert.deepEqual(verbs(webhook, 'networking.k8s.io', 'ingresses'), ['list']);
});
