/**
 * Per-Gateway addresses, the writes (addresses.ts says what and why): a Gateway's Service and its
 * EndpointSlices made to match its listener ports and the gateway's endpoints, and deleted when
 * the Gateway goes. Allocations run one at a time (the Gateway controller has several workers)
 * and are remembered until the cache shows the Service written, so two Gateways never get one port.
 */
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { statusOf } from '../../../lib/k8s/client.ts';
import type { ControllerEnv } from '../env.ts';
import {
  ADDRESS_SLICE_MANAGER,
  addressService,
  addressServiceName,
  addressSlices,
  allocatePorts,
  owningGateway,
  ownedBy,
  recordedPorts,
  serviceAddresses,
  type OtherAllocation,
} from './addresses.ts';
import type { GatewayObject, OwnAddress, OwnAddresses, PortRange } from './types.ts';

/** The writes of Services and EndpointSlices. */
export interface AddressWriter {
  createService: (svc: k8s.V1Service) => Promise<k8s.V1Service>;
  replaceService: (svc: k8s.V1Service) => Promise<k8s.V1Service>;
  deleteService: (namespace: string, name: string) => Promise<void>;
  createSlice: (slice: k8s.V1EndpointSlice) => Promise<void>;
  replaceSlice: (slice: k8s.V1EndpointSlice) => Promise<void>;
  deleteSlice: (namespace: string, name: string) => Promise<void>;
}

/** What per-Gateway addresses read and write. */
export interface OwnAddressDeps {
  range: PortRange;
  /** The Service `namespace/name` (cache). */
  service: (namespace: string, name: string) => k8s.V1Service | undefined;
  /** Every Service a Gateway owns (cache). */
  ownedServices: () => readonly k8s.V1Service[];
  /** The creation time of the Gateway `namespace/name` (older Gateways keep contested ports). */
  gatewayCreated: (key: string) => string | undefined;
  /** The EndpointSlices of the Service `namespace/name` (cache). */
  slices: (namespace: string, service: string) => readonly k8s.V1EndpointSlice[];
  /** The EndpointSlices of the gateway's own Service: its pods. */
  gatewaySlices: () => readonly k8s.V1EndpointSlice[];
  writer: AddressWriter;
}

const created = (t: Date | string | undefined): string =>
  t === undefined ? '' : typeof t === 'string' ? t : t.toISOString();

/** A Service's ports as compared (the API server adds nothing to them but defaults we set). */
const portsView = (s: k8s.V1Service): unknown =>
  (s.spec?.ports ?? []).map((p) => [p.name, p.port, p.targetPort, p.protocol ?? 'TCP']);

/** An EndpointSlice as compared. */
const sliceView = (s: k8s.V1EndpointSlice): unknown =>
  JSON.parse(
    JSON.stringify({
      addressType: s.addressType,
      labels: s.metadata?.labels,
      owner: s.metadata?.ownerReferences?.map((o) => o.uid),
      ports: (s.ports ?? []).map((p) => [p.name, p.port, p.protocol ?? 'TCP']),
      endpoints: (s.endpoints ?? []).map((e) => ({
        addresses: e.addresses,
        conditions: e.conditions,
        nodeName: e.nodeName,
        zone: e.zone,
        targetRef: e.targetRef && {
          kind: e.targetRef.kind,
          namespace: e.targetRef.namespace,
          name: e.targetRef.name,
          uid: e.targetRef.uid,
        },
      })),
    }),
  ) as unknown;

/** Runs `fn` after every `fn` before it has finished. */
function serially(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** Per-Gateway addresses over `deps`. */
export function ownAddresses(deps: OwnAddressDeps): OwnAddresses {
  const exclusive = serially();
  /** Allocations written, by Gateway, until the Gateway is released (the cache may lag). */
  const claims = new Map<string, OtherAllocation>();

  const othersThan = (key: string): OtherAllocation[] => {
    const byGateway = new Map<string, OtherAllocation>();
    for (const svc of deps.ownedServices()) {
      const gw = owningGateway(svc);
      if (gw === undefined || gw === key) continue;
      const prev = byGateway.get(gw);
      const ports = new Set([...(prev?.ports ?? []), ...recordedPorts(svc).values()]);
      byGateway.set(gw, { gateway: gw, created: deps.gatewayCreated(gw) ?? '', ports });
    }
    for (const [gw, claim] of claims) {
      if (gw === key) continue;
      const prev = byGateway.get(gw);
      byGateway.set(gw, { ...claim, ports: new Set([...(prev?.ports ?? []), ...claim.ports]) });
    }
    return [...byGateway.values()];
  };

  const ensureSlices = async (gw: GatewayObject, ports: ReadonlyMap<number, number>): Promise<void> => {
    const ns = gw.metadata.namespace;
    const want = addressSlices(gw, ports, deps.gatewaySlices());
    const have = deps
      .slices(ns, addressServiceName(gw.metadata.name))
      .filter(
        (s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] === ADDRESS_SLICE_MANAGER,
      );
    for (const slice of want) {
      const old = have.find((h) => h.metadata?.name === slice.metadata?.name);
      if (old === undefined) {
        try {
          await deps.writer.createSlice(slice);
        } catch (err) {
          if (statusOf(err) !== 409) throw err; // Written already: the cache catches up.
        }
      } else if (!isDeepStrictEqual(sliceView(old), sliceView(slice))) {
        await deps.writer.replaceSlice({
          ...slice,
          metadata: { ...slice.metadata, resourceVersion: old.metadata?.resourceVersion },
        });
      }
    }
    for (const old of have) {
      if (want.some((w) => w.metadata?.name === old.metadata?.name)) continue;
      await deps.writer.deleteSlice(ns, old.metadata?.name ?? '');
    }
  };

  const ensure = (gw: GatewayObject): Promise<OwnAddress> =>
    exclusive(async () => {
      const { namespace: ns, name } = gw.metadata;
      const key = `${ns}/${name}`;
      const svcName = addressServiceName(name);
      const existing = deps.service(ns, svcName);
      // Another's Service of that name is left alone; one of a Gateway of the same name deleted
      // before (another uid) is taken over.
      if (existing !== undefined && !ownedBy(existing, gw) && owningGateway(existing) !== key) {
        return {
          ports: {},
          full: [],
          addresses: [],
          problem: `Service ${ns}/${svcName} exists and is not this Gateway's: svc leaves it alone (rename or delete it)`,
        };
      }
      const self = { gateway: key, created: created(gw.metadata.creationTimestamp) };
      const alloc = allocatePorts(
        gw.spec.listeners.map((l) => l.port),
        recordedPorts(existing),
        self,
        othersThan(key),
        deps.range,
      );
      claims.set(key, { ...self, ports: new Set(alloc.ports.values()) });
      const want = addressService(gw, alloc.ports);
      let svc = existing;
      if (existing === undefined) {
        // A 409 (created meanwhile, the cache behind) fails this reconcile: it is tried again.
        svc = await deps.writer.createService(want);
      } else if (
        !isDeepStrictEqual(portsView(existing), portsView(want)) ||
        !ownedBy(existing, gw) ||
        existing.spec?.selector !== undefined
      ) {
        svc = await deps.writer.replaceService({
          ...want,
          metadata: { ...want.metadata, resourceVersion: existing.metadata?.resourceVersion },
          // The API server keeps the addresses it assigned; a replace must name them.
          spec: {
            ...want.spec,
            ...(existing.spec?.clusterIP ? { clusterIP: existing.spec.clusterIP } : {}),
            ...(existing.spec?.clusterIPs ? { clusterIPs: existing.spec.clusterIPs } : {}),
            ...(existing.spec?.ipFamilies ? { ipFamilies: existing.spec.ipFamilies } : {}),
            ...(existing.spec?.ipFamilyPolicy ? { ipFamilyPolicy: existing.spec.ipFamilyPolicy } : {}),
          },
        });
      }
      await ensureSlices(gw, alloc.ports);
      return {
        ports: Object.fromEntries(alloc.ports),
        full: alloc.full,
        addresses: serviceAddresses(svc),
      };
    });

  const release = (gw: GatewayObject): Promise<void> =>
    exclusive(async () => {
      const { namespace: ns, name } = gw.metadata;
      const svcName = addressServiceName(name);
      const svc = deps.service(ns, svcName);
      for (const slice of deps.slices(ns, svcName)) {
        if (ownedBy(slice, gw)) await deps.writer.deleteSlice(ns, slice.metadata?.name ?? '');
      }
      if (svc !== undefined && ownedBy(svc, gw)) await deps.writer.deleteService(ns, svcName);
      claims.delete(`${ns}/${name}`);
    });

  return { ensure, release };
}

/** The writer over the API server (a 404 on delete: gone already). */
export function addressWriter(env: Pick<ControllerEnv, 'kc'>): AddressWriter {
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  const discovery = env.kc.makeApiClient(k8s.DiscoveryV1Api);
  const gone = (err: unknown): void => {
    if (statusOf(err) !== 404) throw err;
  };
  const where = (o: k8s.KubernetesObject) => ({
    namespace: o.metadata?.namespace ?? '',
    name: o.metadata?.name ?? '',
  });
  return {
    createService: (body) => core.createNamespacedService({ namespace: where(body).namespace, body }),
    replaceService: (body) => core.replaceNamespacedService({ ...where(body), body }),
    deleteService: (namespace, name) =>
      core.deleteNamespacedService({ namespace, name }).then(() => undefined, gone),
    createSlice: async (body) => {
      await discovery.createNamespacedEndpointSlice({ namespace: where(body).namespace, body });
    },
    replaceSlice: async (body) => {
      await discovery.replaceNamespacedEndpointSlice({ ...where(body), body });
    },
    deleteSlice: (namespace, name) =>
      discovery.deleteNamespacedEndpointSlice({ namespace, name }).then(() => undefined, gone),
  };
}
