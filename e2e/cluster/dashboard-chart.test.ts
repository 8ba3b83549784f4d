/**
 * charts/svc-dashboard: `helm lint --strict`, what it renders with SQLite (the default) and with
 * PostgreSQL given by URL in a Secret, the Secret references, the probes, and values.schema.json.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { root, run, tool } from '../webhooks/helpers.ts';

const chart = join(root, 'charts', 'svc-dashboard');
type Manifest = Record<string, unknown> & { kind: string; metadata: { name: string } };
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: { name: string; key: string } };
}
interface Container {
  env: EnvVar[];
  readinessProbe: { httpGet: { path: string; port: string } };
  livenessProbe: { httpGet: { path: string; port: string } };
  ports: { name: string; containerPort: number }[];
}

async function helm(set: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(tool('helm'), [
    'template',
    'svc-dashboard',
    chart,
    '-n',
    'svc-dashboard',
    ...set.flatMap((s) => ['--set', s]),
  ]);
}

async function render(set: string[] = []): Promise<Manifest[]> {
  const r = await helm(set);
  assert.equal(r.code, 0, r.stderr);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

function container(objs: Manifest[]): Container {
  const dep = objs.find((o) => o.kind === 'Deployment') as
    { spec: { template: { spec: { containers: Container[] } } } } | undefined;
  assert.ok(dep, 'a Deployment');
  const c = dep.spec.template.spec.containers[0];
  assert.ok(c);
  return c;
}

const env = (c: Container): Record<string, string> =>
  Object.fromEntries(
    c.env.map((e) => [
      e.name,
      e.valueFrom
        ? `secret:${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`
        : (e.value ?? ''),
    ]),
  );

test('helm lint --strict', async () => {
  for (const set of [[], ['storage=postgres', 'postgres.urlSecret.name=pg']]) {
    const r = await run(tool('helm'), ['lint', '--strict', chart, ...set.flatMap((s) => ['--set', s])]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  }
});

test('by default: SQLite on a PersistentVolumeClaim, admin and node secrets from Secrets, probes', async () => {
  const objs = await render();
  assert.deepEqual(objs.map((o) => o.kind).sort(), ['Deployment', 'PersistentVolumeClaim', 'Service']);
  const c = container(objs);
  const e = env(c);
  assert.equal(e.SVC_DB_ADMIN_SECRET, 'secret:svc-dashboard-admin/secret');
  assert.equal(e.SVC_DB_NODE_SECRET, 'secret:svc-dashboard-node/secret');
  assert.equal(e.SVC_DB_STORAGE, 'sqlite');
  assert.equal(e.SVC_DB_DATA_DIR, '/var/lib/svc-dashboard');
  assert.equal(e.SVC_DB_POSTGRES_URL, undefined);
  assert.equal(e.SVC_DB_LISTEN_PORT, '3000');
  assert.equal(e.SVC_DB_API_WRITES_SYSTEM_USERS_ONLY, 'true');
  assert.equal(e.SVC_DB_ALLOW_EXPLICIT_POLICY_ID, 'true');
  assert.equal(c.readinessProbe.httpGet.path, '/ready');
  assert.equal(c.livenessProbe.httpGet.path, '/hello');
  assert.deepEqual(c.ports, [{ name: 'http', containerPort: 3000 }]);
  const svc = objs.find((o) => o.kind === 'Service') as { spec: { ports: { port: number }[] } } | undefined;
  assert.deepEqual(
    svc?.spec.ports.map((p) => p.port),
    [3000],
  );
  const text = JSON.stringify(objs);
  assert.match(text, /"claimName":"svc-dashboard-data"/);
  assert.match(text, /"strategy":\{"type":"Recreate"\}/);
  // Nothing secret is written by the chart.
  assert.ok(!objs.some((o) => o.kind === 'Secret'));
});

test('storage=postgres: the URL from a Secret, no volume for data, replicas allowed', async () => {
  const objs = await render([
    'storage=postgres',
    'postgres.urlSecret.name=dashboard-pg',
    'postgres.urlSecret.key=DATABASE_URL',
    'replicaCount=2',
    'nodeSecret.name=',
  ]);
  assert.deepEqual(objs.map((o) => o.kind).sort(), ['Deployment', 'Service']);
  const e = env(container(objs));
  assert.equal(e.SVC_DB_STORAGE, 'postgres');
  assert.equal(e.SVC_DB_POSTGRES_URL, 'secret:dashboard-pg/DATABASE_URL');
  assert.equal(e.SVC_DB_DATA_DIR, undefined);
  assert.equal(e.SVC_DB_NODE_SECRET, undefined, 'no node secret: no gateway connects');
  assert.doesNotMatch(JSON.stringify(objs), /Recreate|claimName/);
});

test('refused: postgres without its URL Secret, SQLite with several replicas', async () => {
  const pg = await helm(['storage=postgres']);
  assert.notEqual(pg.code, 0);
  assert.match(pg.stderr, /postgres\.urlSecret\.name/);
  const many = await helm(['replicaCount=3']);
  assert.notEqual(many.code, 0);
  assert.match(many.stderr, /storage=sqlite runs one replica/);
});

test('values.schema.json refuses unknown keys and wrong types', async () => {
  for (const set of [
    'colour=blue',
    'port=http',
    'storage=mysql',
    'service.type=Magic',
    'settings.streamingEnabled=maybe',
    'adminSecret.name=',
    'sqlite.persistence.size=lots',
  ]) {
    const r = await helm([set]);
    assert.notEqual(r.code, 0, `helm accepted ${set}`);
  }
});
