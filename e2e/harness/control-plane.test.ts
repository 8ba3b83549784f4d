import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { kubeVersion, startControlPlane } from './control-plane.ts';
import type { ControlPlane } from './control-plane.ts';

let cp: ControlPlane | undefined;

function plane(): ControlPlane {
  assert.ok(cp, 'control plane did not start');
  return cp;
}

before(async () => {
  cp = await startControlPlane();
});

after(async () => {
  await cp?.stop();
});

void test('apiserver reports ready', async () => {
  const { stdout } = await plane().kubectl(['get', '--raw', '/readyz']);
  assert.equal(stdout.trim(), 'ok');
});

void test('apiserver is the pinned Kubernetes version (or SVC_KUBE_VERSION)', async () => {
  const { stdout } = await plane().kubectl(['version', '-o', 'json']);
  const version = JSON.parse(stdout) as { serverVersion?: { gitVersion?: string } };
  assert.equal(version.serverVersion?.gitVersion, kubeVersion() ?? 'v1.36.3');
});

void test('a ConfigMap round-trips through the API', async () => {
  const ns = 'harness-test';
  await plane().kubectl(['create', 'namespace', ns]);
  const manifest = JSON.stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'greeting', namespace: ns },
    data: { hello: 'world' },
  });
  await plane().kubectl(['apply', '-f', '-'], { input: manifest });
  const { stdout } = await plane().kubectl(['get', 'configmap', 'greeting', '-n', ns, '-o', 'json']);
  const cm = JSON.parse(stdout) as { data?: Record<string, string> };
  assert.deepEqual(cm.data, { hello: 'world' });
});

void test('kubectl reports failures with their exit code', async () => {
  const res = await plane().kubectl(['get', 'configmap', 'absent', '-n', 'default'], { allowFailure: true });
  assert.notEqual(res.code, 0);
  assert.match(res.stderr, /not found/);
  await assert.rejects(plane().kubectl(['get', 'configmap', 'absent', '-n', 'default']), /not found/);
});

void test('a restart keeps the address, the credentials and the data', async () => {
  const cp = plane();
  const before = { server: cp.server, token: cp.token, kubeconfig: cp.kubeconfig };
  await cp.kubectl(['create', 'namespace', 'harness-restart']);
  await cp.kubectl(['create', 'configmap', 'kept', '-n', 'harness-restart', '--from-literal=k=v']);
  await cp.restart({ downMs: 500 });
  assert.deepEqual({ server: cp.server, token: cp.token, kubeconfig: cp.kubeconfig }, before);
  const { stdout } = await cp.kubectl(['get', 'configmap', 'kept', '-n', 'harness-restart', '-o', 'json']);
  assert.deepEqual((JSON.parse(stdout) as { data?: Record<string, string> }).data, { k: 'v' });
  const ready = await cp.kubectl(['get', '--raw', '/readyz']);
  assert.equal(ready.stdout.trim(), 'ok');
});
