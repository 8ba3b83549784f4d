/**
 * IP allow and block lists (`enable_ip_whitelisting`/`allowed_ips`,
 * `enable_ip_blacklisting`/`blacklisted_ips`): IPv4 and IPv6 addresses and CIDR ranges, compiled
 * once per API into a node:net BlockList. The client address is the socket's unless the listener
 * trusts forwarded headers (RequestContext.clientIp). They apply to keyless APIs too.
 */
import { BlockList, isIP } from 'node:net';
import { reject } from '../../pipeline/compose.ts';
import { before } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** Compiles a list of addresses and CIDRs (already validated at write time). */
export function compileIpList(entries: readonly string[]): (ip: string) => boolean {
  const list = new BlockList();
  for (const entry of entries) {
    const e = entry.trim();
    const slash = e.indexOf('/');
    const addr = slash === -1 ? e : e.slice(0, slash);
    const family = isIP(addr);
    if (family === 0) throw new Error(`not an IP address or CIDR: ${entry}`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (slash === -1) list.addAddress(addr, type);
    else list.addSubnet(addr, Number(e.slice(slash + 1)), type);
  }
  return (ip) => {
    const family = isIP(ip);
    return family !== 0 && list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/** Only clients in `allowed_ips` pass (an empty list refuses everyone). */
export const ipAllowList: GatewayMiddleware = {
  name: 'ip-allow-list',
  enabled: (api) => api.enable_ip_whitelisting === true,
  create: (api) => {
    const allowed = compileIpList(api.allowed_ips ?? []);
    return before((ctx) => (allowed(ctx.clientIp) ? undefined : reject(ctx, GatewayError.ipDisallowed())));
  },
};

/** Clients in `blacklisted_ips` are refused. */
export const ipBlockList: GatewayMiddleware = {
  name: 'ip-block-list',
  enabled: (api) => api.enable_ip_blacklisting === true && (api.blacklisted_ips?.length ?? 0) > 0,
  create: (api) => {
    const blocked = compileIpList(api.blacklisted_ips ?? []);
    return before((ctx) => (blocked(ctx.clientIp) ? reject(ctx, GatewayError.ipDisallowed()) : undefined));
  },
};
