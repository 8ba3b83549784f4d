/**
 * Entry point of `make cluster`: a local control plane with our CRDs installed, kept running until
 * Ctrl-C, for poking at the operator's resources with kubectl.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { startControlPlane, toolPath } from './control-plane.ts';
import type { ControlPlane } from './control-plane.ts';

const HEALTH_INTERVAL_MS = 5_000;

const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const crdDir = path.join(repoRoot, 'charts', 'svc-operator', 'crds');

/** The chart's CRD directory, if it exists and holds any manifests yet. */
function crdDirWithManifests(): string | undefined {
  if (!existsSync(crdDir)) return undefined;
  return readdirSync(crdDir).some((f) => /\.ya?ml$/.test(f)) ? crdDir : undefined;
}

async function main(): Promise<void> {
  const crds = crdDirWithManifests();
  const relCrds = path.relative(process.cwd(), crdDir) || crdDir;
  process.stderr.write(
    crds !== undefined
      ? `starting etcd + kube-apiserver, then installing CRDs from ${relCrds} ...\n`
      : `starting etcd + kube-apiserver (no CRDs: ${relCrds} has no YAML files) ...\n`,
  );

  let cp: ControlPlane;
  try {
    cp = await startControlPlane(crds !== undefined ? { crdDir: crds, verbose: true } : { verbose: true });
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }

  // An object, not a let: the signal handlers flip it while the loop below awaits.
  const state = { stopping: false };
  const shutdown = async (code: number): Promise<never> => {
    if (!state.stopping) {
      state.stopping = true;
      process.stderr.write('\nstopping control plane ...\n');
      await cp.stop();
      process.stderr.write('stopped\n');
    }
    process.exit(code);
  };
  // The harness also listens and stops its children; having our own listener keeps the exit ours.
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  const kubectl = toolPath('kubectl');
  process.stdout.write(
    [
      '',
      `Kubernetes control plane running at ${cp.server}`,
      `  data and logs: ${cp.dir}`,
      '',
      'Use it with:',
      `  export KUBECONFIG=${cp.kubeconfig}`,
      `  ${kubectl} get crd`,
      '',
      `(kubectl binary: ${kubectl}; there is no controller-manager or scheduler, so no pods run)`,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  // Doubles as the keep-alive: if the apiserver dies we say so instead of idling silently.
  for (;;) {
    await delay(HEALTH_INTERVAL_MS);
    const res = await cp.kubectl(['get', '--raw', '/readyz'], { allowFailure: true });
    // A Ctrl-C during the probe also hits kubectl and the apiserver: that failure is expected.
    if (state.stopping) return;
    if (res.code !== 0 || res.stdout.trim() !== 'ok') {
      process.stderr.write(`control plane is no longer ready: ${res.stderr.trim() || res.stdout.trim()}\n`);
      await shutdown(1);
    }
  }
}

await main();
