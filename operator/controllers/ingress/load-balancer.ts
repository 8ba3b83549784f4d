/** The addresses an Ingress's `status.loadBalancer` reports: a fixed one, or the gateway Service's. */
import type * as k8s from '@kubernetes/client-node';

/** The addresses of a Service for `status.loadBalancer.ingress`, as other ingress controllers report them. */
export function serviceAddresses(svc: k8s.V1Service | undefined): k8s.V1IngressLoadBalancerIngress[] {
  if (!svc) return [];
  const lb = (svc.status?.loadBalancer?.ingress ?? []).flatMap((i): k8s.V1IngressLoadBalancerIngress[] =>
    i.ip ? [{ ip: i.ip }] : i.hostname ? [{ hostname: i.hostname }] : [],
  );
  if (lb.length > 0) return lb;
  const external = svc.spec?.externalIPs ?? [];
  if (external.length > 0) return external.map((ip) => ({ ip }));
  if (svc.spec?.type === 'ExternalName' && svc.spec.externalName)
    return [{ hostname: svc.spec.externalName }];
  const ip = svc.spec?.clusterIP;
  return ip && ip !== 'None' ? [{ ip }] : [];
}

/** An address as a load balancer entry: an IP, or a host name. */
export function addressEntry(address: string): k8s.V1IngressLoadBalancerIngress {
  return /^[0-9.]+$|:/.test(address) ? { ip: address } : { hostname: address };
}
