/**
 * The node's network: its address, the CNI bridge (host-local addresses, portmap), the sysctls
 * and kernel module pods need, and the iptables chains left to remove when it stops.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BRIDGE, CNI_NETWORK, POD_CIDR, paths } from './layout.ts';
import { sh, shOk } from './processes.ts';

/** Writes the CNI configuration: one bridge network with host-local addresses and portmap. */
export async function writeCniConfig(dir: string): Promise<void> {
  const p = paths(dir);
  await writeFile(
    path.join(p.cniConf, '10-svc-node.conflist'),
    JSON.stringify(
      {
        cniVersion: '1.0.0',
        name: CNI_NETWORK,
        plugins: [
          {
            type: 'bridge',
            bridge: BRIDGE,
            isGateway: true,
            ipMasq: true,
            hairpinMode: true,
            ipam: {
              type: 'host-local',
              ranges: [[{ subnet: POD_CIDR }]],
              routes: [{ dst: '0.0.0.0/0' }],
              dataDir: p.cniIpam,
            },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
        ],
      },
      null,
      2,
    ),
  );
}

/**
 * Sets a sysctl, keeping its previous value in `saved` for the stop. The bridge's ones exist only
 * with br_netfilter loaded, which a fresh machine may not have: it is loaded first (kmod).
 */
export async function setSysctl(key: string, value: string, saved: Record<string, string>): Promise<void> {
  const file = path.join('/proc/sys', key.replaceAll('.', '/'));
  if (key.startsWith('net.bridge.') && !existsSync(file)) {
    await sh('modprobe', ['br_netfilter']).catch((err: unknown) => {
      throw new Error(`node: ${key} needs the br_netfilter module, and modprobe failed: ${String(err)}`);
    });
  }
  const before = (await readFile(file, 'utf8')).trim();
  if (before === value) return;
  saved[key] = before;
  await writeFile(file, value);
}

/** Removes the node's bridge. */
export async function removeBridge(): Promise<void> {
  if (await shOk('ip', ['link', 'show', BRIDGE])) await sh('ip', ['link', 'del', BRIDGE]);
}

/** The address of the interface of the default route: the node's InternalIP and the apiserver's. */
export async function detectNodeIp(): Promise<string> {
  const explicit = process.env.SVC_NODE_IP;
  if (explicit !== undefined && explicit !== '') return explicit;
  const route = await sh('ip', ['-4', '-o', 'route', 'show', 'default']);
  const dev = /\bdev (\S+)/.exec(route)?.[1];
  if (dev === undefined)
    throw new Error('node: no IPv4 default route; set SVC_NODE_IP to an address of this machine');
  const addr = await sh('ip', ['-4', '-o', 'addr', 'show', 'dev', dev]);
  const ip = /\binet (\d+\.\d+\.\d+\.\d+)\//.exec(addr)?.[1];
  if (ip === undefined) throw new Error(`node: no IPv4 address on ${dev}; set SVC_NODE_IP`);
  return ip;
}

/**
 * The iptables chains left behind: the kubelet's (KUBE-FIREWALL, KUBE-KUBELET-CANARY, ...), and the
 * bridge plugin's masquerade chains (CNI-<hash>) of pods that died unannounced. kube-proxy's own
 * are gone already (--cleanup). Rules jumping to them are deleted by number, then the chains.
 */
export async function removeChains(): Promise<void> {
  const ours = /^(KUBE|CNI)-/;
  for (const table of ['filter', 'nat', 'mangle']) {
    let rules: string;
    try {
      rules = await sh('iptables', ['-t', table, '-S']);
    } catch {
      continue;
    }
    const chains = new Set<string>();
    const builtin = new Set<string>();
    for (const line of rules.split('\n')) {
      const [verb, chain] = line.split(' ');
      if (chain === undefined) continue;
      if (verb === '-N' && ours.test(chain)) chains.add(chain);
      if (verb === '-P') builtin.add(chain);
    }
    if (chains.size === 0) continue;
    for (const chain of [...builtin, ...[...rules.matchAll(/^-N (\S+)/gm)].map((m) => m[1] ?? '')]) {
      if (chains.has(chain)) continue;
      const listing = await sh('iptables', ['-t', table, '-L', chain, '-n', '--line-numbers']).catch(
        () => '',
      );
      const numbers = listing
        .split('\n')
        .map((l) => l.split(/\s+/))
        .filter(([num, target]) => /^\d+$/.test(num ?? '') && chains.has(target ?? ''))
        .map(([num]) => Number(num))
        .sort((a, b) => b - a);
      for (const n of numbers)
        await sh('iptables', ['-t', table, '-D', chain, String(n)]).catch(() => undefined);
    }
    for (const c of chains) await sh('iptables', ['-t', table, '-F', c]).catch(() => undefined);
    for (const c of chains) await sh('iptables', ['-t', table, '-X', c]).catch(() => undefined);
  }
}
