/**
 * Per-Gateway addresses (SVC_GATEWAY_API_ADDRESSES=per-gateway, docs/gateway-api.md): each
 * Gateway of our class gets a Service of its own in its namespace, owned by it, whose ClusterIP is
 * the Gateway's address. Each listener port of the Service leads to a gateway port allocated to
 * that Gateway from a configured range, where its generated APIs listen (translate/gateway-api
 * `ownPorts`), so two Gateways with the same port, host and path never meet on the gateway.
 *
 * A Service selects pods of its own namespace only, and the gateway's pods are in another: the
 * Service has no selector, and the EndpointSlices the operator writes beside it hold the ready
 * endpoints of the gateway's own Service (the chart's svc-gateway) with the allocated ports.
 * The allocation is recorded on the Service (each port's targetPort): it survives restarts. Pure
 * functions here; own-address.ts does the writes.
 */
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { GATEWAY_GROUP } from '../../translate/gateway-api.ts';
import type { GatewayObject, PortRange } from './types.ts';

/** `endpointslice.kubernetes.io/managed-by` of the EndpointSlices written here. */
export const ADDRESS_SLICE_MANAGER = 'gateway-controller.svc.io';

/** The name of a Gateway's Service: `svc-gw-<name>`, or a hash where that is no DNS label. */
export function addressServiceName(gatewayName: string): string {
  const plain = `svc-gw-${gatewayName}`;
  if (plain.length <= 63 && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(plain)) return plain;
  return `svc-gw-${createHash('sha256').update(gatewayName).digest('hex').slice(0, 16)}`;
}

/** The ownerReference of what a Gateway owns (deleted with it). */
export function gatewayOwner(gw: GatewayObject): k8s.V1OwnerReference {
  return {
    apiVersion: `${GATEWAY_GROUP}/v1`,
    kind: 'Gateway',
    name: gw.metadata.name,
    uid: gw.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The Gateway (`namespace/name`) that owns an object, if one does. */
export function owningGateway(obj: k8s.KubernetesObject): string | undefined {
  const ref = obj.metadata?.ownerReferences?.find(
    (o) => o.kind === 'Gateway' && o.apiVersion.startsWith(`${GATEWAY_GROUP}/`) && o.controller === true,
  );
  return ref === undefined ? undefined : `${obj.metadata?.namespace ?? ''}/${ref.name}`;
}

/** Whether an object is owned by this Gateway (its uid, not only its name). */
export const ownedBy = (obj: k8s.KubernetesObject, gw: GatewayObject): boolean =>
  (obj.metadata?.ownerReferences ?? []).some(
    (o) => o.kind === 'Gateway' && o.uid === gw.metadata.uid && o.controller === true,
  );

/** The allocation a Service records: listener port -> gateway port (its targetPort). */
export function recordedPorts(svc: k8s.V1Service | undefined): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of svc?.spec?.ports ?? []) {
    if (typeof p.targetPort === 'number') out.set(p.port, p.targetPort);
  }
  return out;
}

/** Another Gateway's allocation: its key, its age (older keeps a port both record), its ports. */
export interface OtherAllocation {
  gateway: string;
  created: string;
  ports: ReadonlySet<number>;
}

/** The result of an allocation: listener port -> gateway port, and the listener ports left without. */
export interface Allocation {
  ports: Map<number, number>;
  full: number[];
}

/**
 * A Gateway's gateway ports: each listener port keeps the port its Service records when that is
 * in the range and no older Gateway records it too (two never share one); the others get the
 * lowest port of the range no other Gateway holds. Stable: the same input gives the same output.
 */
export function allocatePorts(
  listenerPorts: readonly number[],
  recorded: ReadonlyMap<number, number>,
  self: { gateway: string; created: string },
  others: readonly OtherAllocation[],
  range: PortRange,
): Allocation {
  const older = (o: OtherAllocation): boolean =>
    o.created < self.created || (o.created === self.created && o.gateway < self.gateway);
  const heldByOlder = new Set(others.filter(older).flatMap((o) => [...o.ports]));
  const held = new Set(others.flatMap((o) => [...o.ports]));
  const ports = new Map<number, number>();
  const wanted = [...new Set(listenerPorts)].sort((a, b) => a - b);
  for (const lp of wanted) {
    const have = recorded.get(lp);
    if (
      have !== undefined &&
      have >= range.first &&
      have <= range.last &&
      !heldByOlder.has(have) &&
      ![...ports.values()].includes(have)
    ) {
      ports.set(lp, have);
    }
  }
  const full: number[] = [];
  let next = range.first;
  const mine = new Set(ports.values());
  for (const lp of wanted) {
    if (ports.has(lp)) continue;
    while (next <= range.last && (held.has(next) || mine.has(next) || [...recorded.values()].includes(next)))
      next++;
    if (next > range.last) {
      full.push(lp);
      continue;
    }
    ports.set(lp, next);
    mine.add(next);
    next++;
  }
  return { ports, full };
}

/** The name of a Service port for a listener port. */
const portName = (listenerPort: number): string => `port-${String(listenerPort)}`;

/** A Gateway's Service: no selector (its EndpointSlices are written), one port per listener port. */
export function addressService(gw: GatewayObject, ports: ReadonlyMap<number, number>): k8s.V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: addressServiceName(gw.metadata.name),
      namespace: gw.metadata.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'svc-operator' },
      ownerReferences: [gatewayOwner(gw)],
    },
    spec: {
      type: 'ClusterIP',
      ports: [...ports]
        .sort(([a], [b]) => a - b)
        .map(([port, targetPort]) => ({ name: portName(port), protocol: 'TCP', port, targetPort })),
    },
  };
}

/**
 * The EndpointSlices of a Gateway's Service: the endpoints of the gateway's own Service (its
 * EndpointSlices, by address type, each address once), with the Gateway's gateway ports.
 */
export function addressSlices(
  gw: GatewayObject,
  ports: ReadonlyMap<number, number>,
  gatewaySlices: readonly k8s.V1EndpointSlice[],
): k8s.V1EndpointSlice[] {
  const service = addressServiceName(gw.metadata.name);
  const byType = new Map<string, Map<string, k8s.V1Endpoint>>();
  for (const s of gatewaySlices) {
    const list = byType.get(s.addressType) ?? new Map<string, k8s.V1Endpoint>();
    byType.set(s.addressType, list);
    for (const e of s.endpoints ?? []) {
      const key = [...e.addresses].sort().join(',');
      if (list.has(key)) continue;
      list.set(key, {
        addresses: e.addresses,
        conditions: {
          ready: e.conditions?.ready ?? true,
          serving: e.conditions?.serving ?? e.conditions?.ready ?? true,
          terminating: e.conditions?.terminating ?? false,
        },
        ...(e.nodeName ? { nodeName: e.nodeName } : {}),
        ...(e.zone ? { zone: e.zone } : {}),
        ...(e.targetRef ? { targetRef: e.targetRef } : {}),
      });
    }
  }
  return [...byType]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([addressType, endpoints]) => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${service}-${addressType.toLowerCase()}`,
        namespace: gw.metadata.namespace,
        labels: {
          'kubernetes.io/service-name': service,
          'endpointslice.kubernetes.io/managed-by': ADDRESS_SLICE_MANAGER,
        },
        ownerReferences: [gatewayOwner(gw)],
      },
      addressType,
      ports: [...ports]
        .sort(([a], [b]) => a - b)
        .map(([lp, port]) => ({ name: portName(lp), protocol: 'TCP', port })),
      endpoints: [...endpoints.values()].sort((a, b) =>
        (a.addresses[0] ?? '') < (b.addresses[0] ?? '') ? -1 : 1,
      ),
    }));
}

/** `status.addresses` of a Gateway: its Service's ClusterIPs; none until they are assigned. */
export function serviceAddresses(svc: k8s.V1Service | undefined): { type: string; value: string }[] {
  const ips = svc?.spec?.clusterIPs ?? (svc?.spec?.clusterIP ? [svc.spec.clusterIP] : []);
  return ips.filter((ip) => ip !== '' && ip !== 'None').map((value) => ({ type: 'IPAddress', value }));
}
