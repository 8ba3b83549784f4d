/**
 * The node killed, not stopped (issue 28 item 6): when a machine's session ends, every process it
 * started dies at once (SIGKILL), the node's daemons, containerd's shims and the containers
 * included, and its state.json, mounts, bridge and iptables rules stay behind. The next
 * `make node` (startNode) must find that node unhealthy, clear what is left of it and start a
 * working one: Ready, CoreDNS answering, a pod scheduled and run. This is what CI meets after a
 * session. Run first by `make e2e-node` (it restarts the node the other files then use); not with
 * SVC_E2E_KUBECONFIG (a cluster that is not ours to kill).
 */
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nodeDir, startNode } from '../harness/node.ts';
import { readState } from '../harness/node/layout.ts';
import { alive, processIdentity, procsWithCmdline } from '../harness/node/processes.ts';
import { podProcesses } from '../harness/node/stop.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { PULL_POLICY, kubectl, nodeImage, runPod } from './helpers.ts';

/** Made after the restart: the killed node's objects went with its etcd data. */
const ns = `svc-node-restart-${randomBytes(3).toString('hex')}`;

test(
  'every process of the node SIGKILLed: the next start clears what is left and runs a working node',
  { timeout: 600_000 },
  async () => {
    const first = await startNode({ verbose: true });
    const dir = nodeDir();
    const state = await readState(dir);
    assert.ok(state !== undefined, 'the running node has a state.json');
    const pods = podProcesses();
    assert.ok(pods.length > 0, 'containers run on the node (CoreDNS at least)');

    // As the end of a session does it: everything at once, no daemon told.
    const victims = [
      ...Object.values(state.pids),
      ...procsWithCmdline((c) => c.includes('containerd-shim') && c.includes(first.containerdSocket)),
      ...pods,
    ];
    // Each as itself: a new process may get a killed one's pid (the counter wraps here).
    const killed = new Set(victims.map(processIdentity).filter((id) => id !== undefined));
    for (const pid of victims) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await waitFor('every node process dead', () => victims.every((pid) => !alive(pid)), 30_000);

    const second = await startNode({ verbose: true });
    assert.equal(second.reused, false, 'a dead node is not reused');
    const after = await readState(dir);
    assert.ok(after !== undefined);
    for (const [name, pid] of Object.entries(after.pids)) {
      const id = processIdentity(pid);
      assert.ok(id !== undefined && alive(pid), `${name} runs`);
      assert.ok(!killed.has(id), `${name} is a new process, not a killed one (${id})`);
    }
    assert.equal(
      await kubectl([
        'get',
        'node',
        '-o',
        'jsonpath={.items[0].status.conditions[?(@.type=="Ready")].status}',
      ]),
      'True',
    );
    // One CoreDNS on the host: the killed node's container is not left running beside the new one.
    await waitFor(
      'exactly one CoreDNS process',
      () => procsWithCmdline((c) => c.startsWith('/coredns')).length === 1,
      60_000,
    );

    // The new node schedules, pulls (imports) and runs a pod that resolves a cluster name.
    await kubectl(['create', 'namespace', ns]);
    const image = await nodeImage();
    const probe = `require('node:dns/promises').lookup('kubernetes.default.svc').then((a) => console.log(a.address))`;
    const { phase, logs } = await runPod(
      ns,
      'after-restart',
      {
        securityContext: { runAsNonRoot: true, runAsUser: 65532 },
        containers: [{ name: 'probe', image, imagePullPolicy: PULL_POLICY, command: ['node', '-e', probe] }],
      },
      180_000,
    );
    assert.equal(phase, 'Succeeded', logs);
    assert.equal(logs.trim(), '10.96.0.1');
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
  },
);
