/**
 * Entry point of `make node` and `make node-stop`: starts the single-node cluster of node.ts (or
 * reuses the one running) and prints how to use it; `stop` ends it; `status` says whether one runs.
 *
 *   node e2e/harness/node-main.ts start|stop|status
 */
import { nodeStatus, startNode, stopNode } from './node.ts';

async function main(): Promise<void> {
  const command = process.argv[2] ?? 'start';
  if (command === 'stop') {
    await stopNode({ verbose: true });
    return;
  }
  if (command === 'status') {
    const s = await nodeStatus();
    process.stdout.write(
      s.running ? `running: ${s.server ?? ''}\nexport KUBECONFIG=${s.kubeconfig ?? ''}\n` : 'not running\n',
    );
    process.exitCode = s.running ? 0 : 1;
    return;
  }
  if (command !== 'start') throw new Error(`unknown command ${command}: start, stop or status`);
  const node = await startNode({ verbose: true });
  process.stdout.write(
    [
      '',
      `Kubernetes ${node.kubeVersion} node ${node.reused ? 'already running' : `ready after ${(node.readyAfterMs / 1000).toFixed(1)}s`} at ${node.server}`,
      `  data and logs: ${node.dir}`,
      `  containerd: ctr -a ${node.containerdSocket} -n k8s.io images ls`,
      '',
      'Use it with:',
      `  export KUBECONFIG=${node.kubeconfig}`,
      '',
      'Stop it with: make node-stop',
      '',
    ].join('\n'),
  );
}

try {
  await main();
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
