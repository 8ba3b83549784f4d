/**
 * `make demo`: a local control plane with the CRDs, `examples/` applied, and the resources shown.
 * Runs until Ctrl-C, then stops everything.
 */
import { join } from 'node:path';
import { startControlPlane } from './control-plane.ts';

const root = join(import.meta.dirname, '..', '..');

const cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds'), verbose: true });
const stop = async (): Promise<void> => {
  await cp.stop();
  process.exit(0);
};
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());

const show = async (title: string, args: string[]): Promise<void> => {
  const out = await cp.kubectl(args);
  console.log(`\n$ kubectl ${args.join(' ')}    # ${title}\n${out.stdout.trimEnd()}`);
};

await show('apply the examples', ['apply', '--server-side', '-f', join(root, 'examples')]);
await show('every svc resource', ['get', 'svc-all', '-A']);
await show('a field, documented', ['explain', 'apidefinitions.spec.proxy.strip_listen_path']);
console.log(`\nThe control plane stays up: export KUBECONFIG=${cp.kubeconfig}\nPress Ctrl-C to stop.`);
