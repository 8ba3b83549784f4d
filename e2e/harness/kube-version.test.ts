/**
 * SVC_KUBE_VERSION: `tools/build.sh` builds another Kubernetes version into a folder of its own and
 * the local control plane runs the kube-apiserver of that folder (docs/e2e-cluster.md, "Older
 * Kubernetes minors"). The two must name the same folder, refuse the same malformed versions, and
 * the default binaries must stay where they were.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { kubeToolsDir, toolPath, toolsDir } from './control-plane.ts';

const exec = promisify(execFile);
const BUILD = path.join(import.meta.dirname, '..', '..', 'tools', 'build.sh');

/** Runs `fn` with SVC_KUBE_VERSION (and optionally SVC_TOOLS_DIR) set, then puts them back. */
function withEnv<T>(env: Record<string, string | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const put = (values: Record<string, string | undefined>): void => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) Reflect.deleteProperty(process.env, k);
      else process.env[k] = v;
    }
  };
  put(env);
  try {
    return fn();
  } finally {
    put(saved);
  }
}

async function printed(env: Record<string, string>): Promise<string> {
  const { stdout } = await exec(BUILD, ['--print'], { env: { ...process.env, ...env } });
  return stdout.trim();
}

void test('tools/build.sh and the harness name the same folder for SVC_KUBE_VERSION, beside the default one', async () => {
  const env = { SVC_KUBE_VERSION: 'v1.28.15' };
  const dir = withEnv(env, kubeToolsDir);
  assert.equal(await printed(env), dir);
  assert.equal(dir, path.join(path.dirname(toolsDir()), 'k8s-v1.28.15', 'bin'));
  assert.equal(
    withEnv({ SVC_KUBE_VERSION: undefined }, kubeToolsDir),
    toolsDir(),
    'without SVC_KUBE_VERSION the default binaries',
  );
});

void test('a malformed SVC_KUBE_VERSION is refused by both', async () => {
  const env = { SVC_KUBE_VERSION: '1.28' };
  await assert.rejects(printed(env), /SVC_KUBE_VERSION=1\.28 is not a k8s\.io\/kubernetes tag/);
  assert.throws(() => withEnv(env, kubeToolsDir), /SVC_KUBE_VERSION=1\.28 is not a k8s\.io\/kubernetes tag/);
});

void test('only kube-apiserver is taken from the version folder; a missing one names its build command', async () => {
  const tools = await mkdtemp(path.join(os.tmpdir(), 'svc-kube-version-'));
  try {
    const env = { SVC_KUBE_VERSION: 'v1.28.15', SVC_TOOLS_DIR: path.join(tools, 'bin') };
    assert.throws(
      () => withEnv(env, () => toolPath('kube-apiserver')),
      (err: Error) =>
        err.message.includes(path.join(tools, 'k8s-v1.28.15', 'bin', 'kube-apiserver')) &&
        err.message.includes('SVC_KUBE_VERSION=v1.28.15 tools/build.sh'),
    );
    assert.throws(
      () => withEnv(env, () => toolPath('kubectl')),
      (err: Error) =>
        err.message.includes(path.join(tools, 'bin', 'kubectl')) && err.message.includes('make deps'),
    );
  } finally {
    await rm(tools, { recursive: true, force: true });
  }
});
