/**
 * The kind workflow (.github/workflows/e2e-kind.yaml) cannot run here (no container engine), so
 * `make test` checks it statically: it parses, every action is pinned to a commit, every `make`
 * target it runs exists, every file it builds or installs from exists, and the chart values it
 * sets are ones the charts know.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const root = join(import.meta.dirname, '..', '..');
const text = readFileSync(join(root, '.github', 'workflows', 'e2e-kind.yaml'), 'utf8');

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}
interface Workflow {
  name?: string;
  on?: unknown;
  permissions?: Record<string, string>;
  jobs?: Record<string, { 'runs-on'?: string; steps?: Step[] }>;
}

const workflow = parse(text) as Workflow;
const steps = Object.values(workflow.jobs ?? {}).flatMap((j) => j.steps ?? []);
const scripts = steps.flatMap((s) => (s.run === undefined ? [] : [s.run]));

test('the workflow parses: a name, triggers, read-only permissions, a job with steps', () => {
  assert.equal(workflow.name, 'e2e-kind');
  assert.ok(workflow.on !== undefined);
  assert.deepEqual(workflow.permissions, { contents: 'read' });
  assert.ok(steps.length >= 5, 'steps');
  for (const job of Object.values(workflow.jobs ?? {})) assert.ok(job['runs-on'], 'runs-on');
});

test('every action is pinned to a full commit SHA', () => {
  const uses = steps.flatMap((s) => (s.uses === undefined ? [] : [s.uses]));
  assert.ok(uses.length >= 3);
  for (const u of uses)
    assert.match(u, /^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40}$/, `${u} is not pinned to a commit`);
  // kind, Helm and the checkout are what the job stands on.
  for (const name of ['actions/checkout', 'helm/kind-action', 'azure/setup-helm']) {
    assert.ok(
      uses.some((u) => u.startsWith(`${name}@`)),
      name,
    );
  }
});

test('every make target it runs exists in the Makefile, e2e-cluster among them', () => {
  const makefile = readFileSync(join(root, 'Makefile'), 'utf8');
  const targets = new Set([...makefile.matchAll(/^([a-z0-9-]+):/gm)].map((m) => m[1]));
  const called = scripts.flatMap((s) => [...s.matchAll(/\bmake\s+([a-z0-9-]+)/g)].map((m) => m[1] ?? ''));
  assert.ok(called.includes('e2e-cluster'), 'runs make e2e-cluster');
  for (const t of called) assert.ok(targets.has(t), `make ${t}: no such target`);
});

test('the files it builds and installs from exist', () => {
  const paths = scripts.flatMap((s) => [
    ...[...s.matchAll(/-f\s+(images\/[\w.-]+)/g)].map((m) => m[1] ?? ''),
    ...[...s.matchAll(/\b(charts\/[\w-]+)/g)].map((m) => m[1] ?? ''),
  ]);
  assert.ok(
    paths.includes('images/operator.Containerfile') && paths.includes('images/gateway.Containerfile'),
  );
  assert.ok(paths.includes('charts/svc-operator') && paths.includes('charts/svc-gateway'));
  for (const p of paths) assert.ok(existsSync(join(root, p)), `${p} does not exist`);
  assert.ok(existsSync(join(root, 'e2e', 'cluster', 'ingress.cluster.ts')), 'the cluster suite');
});

test('make e2e-cluster runs the ported suites in cluster mode, each through e2e/harness/world.ts', () => {
  const makefile = readFileSync(join(root, 'Makefile'), 'utf8');
  const suites = /^E2E_CLUSTER_SUITES = (.+)$/m.exec(makefile)?.[1]?.trim().split(/\s+/) ?? [];
  assert.ok(suites.length >= 2, 'E2E_CLUSTER_SUITES');
  const recipe = /^e2e-cluster:.*\n\t(.+)$/m.exec(makefile)?.[1] ?? '';
  assert.match(recipe, /^SVC_E2E_CLUSTER=1 node --test .*\$\(E2E_CLUSTER_SUITES\)/);
  for (const suite of suites) {
    const source = readFileSync(join(root, suite), 'utf8');
    assert.match(source, /from '\.\.\/harness\/world\.ts'/, `${suite} uses the world harness`);
  }
});

test('the chart values it sets are ones the charts know (values.schema.json)', () => {
  let checked = 0;
  for (const script of scripts) {
    // Continued lines joined: one command per line.
    for (const m of script.replaceAll('\\\n', ' ').matchAll(/helm install \S+ (charts\/[\w-]+)[^\n]*/g)) {
      const chart = m[1] ?? '';
      const schema = JSON.parse(readFileSync(join(root, chart, 'values.schema.json'), 'utf8')) as {
        properties?: Record<string, { properties?: Record<string, unknown> }>;
      };
      for (const set of m[0].matchAll(/--set ([\w.]+)=/g)) {
        const path = (set[1] ?? '').split('.');
        interface SchemaNode {
          properties?: Record<string, SchemaNode | undefined>;
        }
        let node: SchemaNode | undefined = schema as SchemaNode;
        for (const key of path) node = node?.properties?.[key];
        assert.ok(node !== undefined, `${chart}: --set ${set[1] ?? ''} is not in values.schema.json`);
        checked++;
      }
    }
  }
  assert.ok(checked >= 6, `${checked} --set values checked`);
});
