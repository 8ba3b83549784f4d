/**
 * The lowest port this process may open. The chart runs the gateway as a user (65532), which on
 * Linux may open ports below `net.ipv4.ip_unprivileged_port_start` (1024 unless the runtime
 * lowers it) only with CAP_NET_BIND_SERVICE. An API on such a port was stored (200), then every
 * reload failed on it (EACCES) and kept the previous routes, deleted APIs included: the routes
 * check refuses it instead, naming listen_port, at write time and at reload.
 */
import { readFileSync } from 'node:fs';

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
