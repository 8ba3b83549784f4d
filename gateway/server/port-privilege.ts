/**
 * The lowest port this process may open. The chart runs the gateway as a user (65532), which on
 * Linux may open ports below `net.ipv4.ip_unprivileged_port_start` (1024 unless the runtime
 * lowers it) only with CAP_NET_BIND_SERVICE. An API on such a port was stored (200), then every
 * reload failed on it (EACCES) and kept the previous routes, deleted APIs included: the routes
 * check refuses it instead, naming listen_port, at write time and at reload.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** CAP_NET_BIND_SERVICE's bit in the capability sets of /proc/self/status. */
const CAP_NET_BIND_SERVICE = 10n;

/** The lowest port this process can bind (1 when it can bind any). */
export function lowestBindablePort(): number {
  if (process.platform !== 'linux') return process.getuid?.() === 0 ? 1 : 1024;
  if (process.getuid?.() === 0) return 1;
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m?.[1] !== undefined && ((BigInt(`0x${m[1]}`) >> CAP_NET_BIND_SERVICE) & 1n) === 1n) return 1;
  } catch {
    // no /proc: the kernel's default below
  }
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').trim());
    if (Number.isInteger(start) && start >= 0) return Math.max(start, 1);
  } catch {
    // an older kernel without the setting
  }
  return 1024;
}

/**
 * `lowestBindablePort` checked by the kernel: a port just below it is bound once (and closed).
 * Linux refuses a privileged port (EACCES) before it looks whether the port is taken, so anything
 * but EACCES means this process may open ports below the predicted floor (a runtime that lowers
 * the pod's `ip_unprivileged_port_start` where /proc does not show it, a capability granted by
 * other means): then any port. The prediction stays when the probe is refused, or fails otherwise.
 */
export async function probedLowestPort(host: string, predicted: number): Promise<number> {
  if (predicted <= 1) return predicted;
  const server = createServer();
  const code = await new Promise<string | undefined>((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      resolve(err.code ?? 'error');
    });
    server.listen({ port: predicted - 1, host, exclusive: true }, () => {
      resolve(undefined);
    });
  });
  if (code === undefined)
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
  return code === undefined || code === 'EADDRINUSE' ? 1 : predicted;
}
