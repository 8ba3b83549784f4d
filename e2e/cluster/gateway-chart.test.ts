/**
 * charts/svc-gateway, which the kind workflow installs: `helm lint --strict`, what it renders by
 * default and with a default certificate (the HTTPS ingress port), gateway.enableJsvm, and
 * values.schema.json.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { root, run, tool } from '../webhooks/helpers.ts';

const chart = join(root, 'charts', 'svc-gateway');
type Manifest = Record<string, unknown> & { kind: string; metadata: { name: string } };

async function render(set: string[] = []): Promise<Manifest[]> {
  const r = await run(tool('helm'), [
    'template',
    'svc-gateway',
    chart,
    '-n',
    'svc-gateway',
    ...set.flatMap((s) => ['--set', s]),
  ]);
  assert.equal(r.code, 0, r.stderr);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

const servicePorts = (objs: Manifest[]): string[] =>
  (
    (objs.find((o) => o.kind === 'Service')?.spec as { ports?: { name: string; port: number }[] } | undefined)
      ?.ports ?? []
  ).map((p) => `${p.name}:${p.port}`);

test('helm lint --strict', async () => {
  const r = await run(tool('helm'), ['lint', '--strict', chart, '--set', 'tls.certManager.enabled=true']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

test('by default: the gateway port only, the secret from svc-gateway-secret, no certificate', async () => {
  const objs = await render();
  assert.deepEqual(objs.map((o) => o.kind).sort(), ['Deployment', 'Service']);
  assert.deepEqual(servicePorts(objs), ['http:8080']);
  const text = JSON.stringify(objs.find((o) => o.kind === 'Deployment'));
  assert.match(text, /"SVC_GW_SECRET".*"svc-gateway-secret"/);
  assert.doesNotMatch(text, /SVC_GW_TLS_CERT_FILE/);
  assert.doesNotMatch(text, /SVC_GW_HTTPS_PORT/);
  // Virtual endpoints' JavaScript is off unless gateway.enableJsvm.
  assert.match(text, /"name":"SVC_GW_ENABLE_JSVM","value":"false"/);
});

test('gateway.enableJsvm: SVC_GW_ENABLE_JSVM', async () => {
  const objs = await render(['gateway.enableJsvm=true']);
  assert.match(JSON.stringify(objs), /"name":"SVC_GW_ENABLE_JSVM","value":"true"/);
});

test('with a default certificate (cert-manager or a Secret): the HTTPS ingress port', async () => {
  const managed = await render(['tls.certManager.enabled=true']);
  assert.deepEqual(servicePorts(managed), ['http:8080', 'https:8443']);
  assert.ok(managed.some((o) => o.kind === 'Certificate' && o.metadata.name === 'svc-gateway-default-tls'));
  const own = await render(['tls.secretName=my-tls', 'ingress.httpsPort=9443']);
  assert.deepEqual(servicePorts(own), ['http:8080', 'https:9443']);
  // The gateway keeps that port open from the start (its default certificate, 404 for unknown
  // hosts), not only once a TLS Ingress asks for it.
  assert.match(JSON.stringify(managed), /"name":"SVC_GW_HTTPS_PORT","value":"8443"/);
  assert.match(JSON.stringify(own), /"name":"SVC_GW_HTTPS_PORT","value":"9443"/);
  assert.ok(!own.some((o) => o.kind === 'Certificate'));
  assert.match(JSON.stringify(own), /"secretName":"my-tls"/);
});

test('mode pro: dashboard.url, the node secret from a Secret and the organisations', async () => {
  const env = (objs: Manifest[]): Record<string, unknown> => {
    const dep = objs.find((o) => o.kind === 'Deployment') as
      { spec: { template: { spec: { containers: { env: { name: string }[] }[] } } } } | undefined;
    assert.ok(dep, 'a Deployment');
    return Object.fromEntries((dep.spec.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e]));
  };
  const ce = env(await render());
  assert.equal(ce.SVC_GW_DASHBOARD_URL, undefined);
  assert.equal(ce.SVC_GW_NODE_SECRET, undefined);
  const pro = env(
    await render([
      'dashboard.url=http://svc-dashboard.dash.svc:3000',
      'dashboard.nodeSecret.name=node',
      'dashboard.orgs={a,b}',
    ]),
  );
  assert.deepEqual(pro.SVC_GW_DASHBOARD_URL, {
    name: 'SVC_GW_DASHBOARD_URL',
    value: 'http://svc-dashboard.dash.svc:3000',
  });
  assert.deepEqual(pro.SVC_GW_NODE_SECRET, {
    name: 'SVC_GW_NODE_SECRET',
    valueFrom: { secretKeyRef: { name: 'node', key: 'secret' } },
  });
  assert.deepEqual(pro.SVC_GW_DASHBOARD_ORGS, { name: 'SVC_GW_DASHBOARD_ORGS', value: 'a,b' });
});

test('values.schema.json refuses unknown keys and wrong types', async () => {
  for (const set of [
    'colour=blue',
    'port=http',
    'service.type=Magic',
    'tls.certManager.enabled=maybe',
    'dashboard.url=svc-dashboard:3000',
    'gateway.enableJsvm=maybe',
    'gateway.colour=blue',
  ]) {
    const r = await run(tool('helm'), ['template', 'svc-gateway', chart, '--set', set]);
    assert.notEqual(r.code, 0, `helm accepted ${set}`);
  }
});
