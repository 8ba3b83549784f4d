import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { kubeletConfig, kubeletMinor } from './kubelet.ts';
import { binaries, paths, tool, versionOf } from './layout.ts';

const saved = { tools: process.env.SVC_TOOLS_DIR, version: process.env.SVC_KUBE_VERSION };
afterEach(() => {
  if (saved.tools === undefined) delete process.env.SVC_TOOLS_DIR;
  else process.env.SVC_TOOLS_DIR = saved.tools;
  if (saved.version === undefined) delete process.env.SVC_KUBE_VERSION;
  else process.env.SVC_KUBE_VERSION = saved.version;
});

const p = paths('/node');

test('the kubelet of 1.28 gets neither failCgroupV1 (1.31+) nor podLogsDir (1.30+)', () => {
  const config = kubeletConfig(p, '10.0.0.5', 28);
  assert.equal('failCgroupV1' in config, false);
  assert.equal('podLogsDir' in config, false);
  // Everything else is as for the default version.
  const latest = kubeletConfig(p, '10.0.0.5', 36);
  assert.deepEqual(
    Object.keys(config).sort(),
    Object.keys(latest)
      .filter((k) => k !== 'failCgroupV1' && k !== 'podLogsDir')
      .sort(),
  );
  assert.equal(config.address, '10.0.0.5');
  assert.equal(config.staticPodPath, '/node/manifests');
});

test('podLogsDir from 1.30, failCgroupV1 (false: this machine has cgroup v1) from 1.31', () => {
  assert.equal(kubeletConfig(p, '10.0.0.5', 29).podLogsDir, undefined);
  assert.equal(kubeletConfig(p, '10.0.0.5', 30).podLogsDir, '/node/pod-logs');
  assert.equal('failCgroupV1' in kubeletConfig(p, '10.0.0.5', 30), false);
  assert.equal(kubeletConfig(p, '10.0.0.5', 31).failCgroupV1, false);
  assert.equal(kubeletConfig(p, '10.0.0.5', 36).failCgroupV1, false);
  assert.equal(kubeletConfig(p, '10.0.0.5', 36).podLogsDir, '/node/pod-logs');
});

test('versionOf reads the version from a versioned binary name', () => {
  assert.deepEqual(versionOf('kubelet-v1.28.15'), { version: 'v1.28.15', minor: 28 });
  assert.deepEqual(versionOf('kube-controller-manager-v1.36.3'), { version: 'v1.36.3', minor: 36 });
  assert.equal(versionOf('coredns-v1.11.3-0123456789ab'), undefined);
  assert.equal(versionOf('missing'), undefined);
});

test('with SVC_KUBE_VERSION the five Kubernetes binaries come from its folder, the rest from the default', async () => {
  const cache = await mkdtemp(path.join(tmpdir(), 'svc-node-tools-'));
  const bin = path.join(cache, 'bin');
  const v128 = path.join(cache, 'k8s-v1.28.15', 'bin');
  await mkdir(bin, { recursive: true });
  await mkdir(v128, { recursive: true });
  for (const name of ['kubelet', 'kube-apiserver', 'etcd']) {
    await writeFile(path.join(bin, `${name}-v1.36.3`), '');
    await symlink(`${name}-v1.36.3`, path.join(bin, name));
  }
  await writeFile(path.join(v128, 'kubelet-v1.28.15'), '');
  await symlink('kubelet-v1.28.15', path.join(v128, 'kubelet'));
  process.env.SVC_TOOLS_DIR = bin;

  delete process.env.SVC_KUBE_VERSION;
  assert.equal(tool('kubelet'), path.join(bin, 'kubelet'));
  assert.equal(kubeletMinor(), 36);
  assert.equal(binaries().kubelet, 'kubelet-v1.36.3');

  process.env.SVC_KUBE_VERSION = 'v1.28.15';
  for (const name of [
    'kube-apiserver',
    'kube-controller-manager',
    'kube-scheduler',
    'kubelet',
    'kube-proxy',
  ] as const) {
    assert.equal(tool(name), path.join(v128, name));
  }
  for (const name of ['etcd', 'kubectl', 'coredns', 'pause'] as const) {
    assert.equal(tool(name), path.join(bin, name));
  }
  assert.equal(kubeletMinor(), 28);
  // What state.json records: a node started at the default version is seen as running other binaries.
  assert.equal(binaries().kubelet, 'kubelet-v1.28.15');
  assert.equal(binaries()['kube-apiserver'], 'missing');
  assert.equal(binaries().etcd, 'etcd-v1.36.3');
});

test('a kubelet without a version in its name is refused, not configured for a guessed version', async () => {
  const bin = path.join(await mkdtemp(path.join(tmpdir(), 'svc-node-tools-')), 'bin');
  await mkdir(bin);
  await writeFile(path.join(bin, 'kubelet'), '');
  process.env.SVC_TOOLS_DIR = bin;
  delete process.env.SVC_KUBE_VERSION;
  assert.throws(() => kubeletMinor(), /cannot tell the kubelet's version/);
});
