/**
 * The kind workflow (.github/workflows/e2e-kind.yaml) cannot run here (no kind), so `make test`
 * checks it statically: it parses, every action is pinned to a commit, every `make` target it runs
 * exists, and it runs what runs here: `make e2e-node` (the same suite files) on the kind cluster
 * (SVC_E2E_KUBECONFIG) with the images tools/images.sh made and loaded into kind
 * (SVC_E2E_IMAGES), and cert-manager at the version tools/cert-manager/go.mod pins (the one the
 * node runs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const root = join(import.meta.dirname, '..', '..');
const text = readFileSync(join(root, '.github', 'workflows', 'e2e-kind.yaml'), 'utf8');
const makefile = readFileSync(join(root, 'Makefile'), 'utf8');

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
  env?: Record<string, string>;
  jobs?: Record<string, { 'runs-on'?: string; steps?: Step[] }>;
}

const workflow = parse(text) as Workflow;
const steps = Object.values(workflow.jobs ?? {}).flatMap((j) => j.steps ?? []);
const scripts = steps.flatMap((s) => (s.run === undefined ? [] : [s.run]));
/** Continued lines joined: one command per line. */
const commands = scripts.flatMap((s) => s.replaceAll('\\\n', ' ').split('\n')).map((l) => l.trim());

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
  // kind, Go (the tools and the gateway's Bento stage) and the checkout are what the job stands on.
  for (const name of ['actions/checkout', 'helm/kind-action', 'actions/setup-go']) {
    assert.ok(
      uses.some((u) => u.startsWith(`${name}@`)),
      name,
    );
  }
});

test('every make target it runs exists in the Makefile', () => {
  const targets = new Set([...makefile.matchAll(/^([a-z0-9-]+):/gm)].map((m) => m[1]));
  const called = commands.flatMap((c) => [...c.matchAll(/\bmake\s+([a-z0-9-]+)/g)].map((m) => m[1] ?? ''));
  assert.ok(called.length >= 2, 'make deps, make e2e-node');
  for (const t of called) assert.ok(targets.has(t), `make ${t}: no such target`);
});

test('it runs make e2e-node, the suites make e2e-node runs here, on the kind cluster', () => {
  const run = commands.find((c) => /\bmake e2e-node\b/.test(c));
  assert.ok(run !== undefined, 'the workflow runs make e2e-node');
  assert.match(run, /\bSVC_E2E_KUBECONFIG=\S+/, 'pointed at the kind cluster by SVC_E2E_KUBECONFIG');
  assert.doesNotMatch(text, /SVC_IMAGES_REUSE/, 'never reuses stale images');
  // No separate list of suites: the target's own (e2e/node/*.node.ts) is what runs.
  const recipe = /^e2e-node:.*\n((?:\t.*\n)+)/m.exec(makefile)?.[1] ?? '';
  assert.match(recipe, /\$\(NODE_SUITES\)/);
  assert.match(makefile, /^NODE_SUITES = .*\$\(wildcard e2e\/node\/\*\.node\.ts\)/m);
  assert.match(
    makefile,
    /^e2e-node: \$\(if \$\(SVC_E2E_KUBECONFIG\),deps,node\)/m,
    'no node started on kind',
  );
});

test('the images are the ones tools/images.sh makes, loaded into kind and named by SVC_E2E_IMAGES', () => {
  const build = commands.find((c) => c.includes('tools/images.sh kind '));
  assert.ok(build !== undefined, 'tools/images.sh kind CLUSTER');
  assert.match(text, /SVC_E2E_IMAGES=.*>> "\$GITHUB_ENV"/, 'SVC_E2E_IMAGES from its output');
  const images = readFileSync(join(root, 'tools', 'images.sh'), 'utf8');
  assert.match(images, /kind load image-archive/);
  const helpers = readFileSync(join(root, 'e2e', 'node', 'helpers.ts'), 'utf8');
  assert.match(helpers, /process\.env\.SVC_E2E_IMAGES/);
  assert.match(helpers, /process\.env\.SVC_E2E_KUBECONFIG/);
});

test("cert-manager's version is the one tools/cert-manager/go.mod pins (the node's)", () => {
  const step = steps.find((s) => s.run?.includes('cert-manager.yaml') === true);
  assert.ok(step?.run !== undefined, 'a cert-manager step');
  assert.match(step.run, /tools\/cert-manager\/go\.mod/);
  assert.match(step.run, /releases\/download\/\$\{version\}\/cert-manager\.yaml/);
  assert.doesNotMatch(text, /CERT_MANAGER_VERSION: v/, 'no second, hard-coded version');
  const gomod = readFileSync(join(root, 'tools', 'cert-manager', 'go.mod'), 'utf8');
  assert.match(gomod, /^require github\.com\/cert-manager\/cert-manager v\d+\.\d+\.\d+$/m);
});
