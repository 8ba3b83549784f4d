/**
 * Backends of a rule: each `backendRef` resolved to the upstream addresses the gateway calls (a
 * Service's ready endpoints from its EndpointSlices; its cluster name `<svc>.<ns>.svc:<port>`
 * while no EndpointSlice is known; an ExternalName Service's host), or the reason it is not
 * (BackendNotFound, RefNotPermitted, InvalidKind, UnsupportedProtocol: a port whose appProtocol
 * the gateway cannot speak), and the weights turned into the round-robin
 * list of the gateway's load balancing.
 */
import { referenceGranted } from './grants.ts';
import type { BackendRef, GatewayTranslationContext } from './types.ts';

/** Why a backendRef is not resolved: a ResolvedRefs reason of the spec. */
export interface BackendProblem {
  reason: 'BackendNotFound' | 'RefNotPermitted' | 'InvalidKind' | 'UnsupportedProtocol';
  message: string;
}

/** A backendRef resolved: its addresses (`http://host:port`), empty when it has none ready. */
export interface ResolvedBackend {
  weight: number;
  targets: string[];
}

/**
 * Why the gateway cannot call a Service port of this `appProtocol`, if it cannot. It calls
 * backends in clear with HTTP/1.1 and passes WebSocket upgrades through: no appProtocol, `http`
 * and `kubernetes.io/ws` are served. HTTP/2 (`kubernetes.io/h2c`, `h2c`, `http2`, `grpc`) and TLS
 * to the backend (`kubernetes.io/wss`, `https`, `tls`) are not. Another value is
 * implementation-specific (another controller's name for a protocol): called with HTTP/1.1.
 */
export function unsupportedAppProtocol(appProtocol: string | undefined): string | undefined {
  switch (appProtocol?.toLowerCase()) {
    case 'kubernetes.io/h2c':
    case 'h2c':
    case 'http2':
    case 'grpc':
      return 'the gateway calls backends with HTTP/1.1, not HTTP/2';
    case 'kubernetes.io/wss':
    case 'https':
    case 'tls':
      return 'the gateway calls backends in clear, not over TLS';
    default:
      return undefined;
  }
}

/** One backendRef of a route of `routeNamespace` at field path `at`: its addresses or its problem. */
export function resolveBackend(
  ref: BackendRef,
  routeNamespace: string,
  at: string,
  ctx: GatewayTranslationContext,
): ResolvedBackend | BackendProblem {
  const weight = ref.weight ?? 1;
  if ((ref.group ?? '') !== '' || (ref.kind ?? 'Service') !== 'Service') {
    return {
      reason: 'InvalidKind',
      message: `${at}: Unsupported value: ${ref.group ?? ''}/${ref.kind ?? ''}: svc sends requests to Services (group "", kind Service)`,
    };
  }
  const ns = ref.namespace ?? routeNamespace;
  const from = { kind: 'HTTPRoute', namespace: routeNamespace };
  if (!referenceGranted(ctx.grants, from, { group: '', kind: 'Service', namespace: ns, name: ref.name })) {
    return {
      reason: 'RefNotPermitted',
      message: `${at}.namespace: Forbidden: no ReferenceGrant in namespace ${ns} lets HTTPRoutes of ${routeNamespace} name Service ${ref.name}`,
    };
  }
  const svc = ctx.service(ns, ref.name);
  if (svc === undefined) {
    return { reason: 'BackendNotFound', message: `${at}.name: Not found: Service ${ns}/${ref.name}` };
  }
  if (ref.port === undefined) {
    return { reason: 'BackendNotFound', message: `${at}.port: Required value: name the Service port` };
  }
  const port = (svc.spec?.ports ?? []).find((p) => p.port === ref.port);
  const problem = unsupportedAppProtocol(port?.appProtocol);
  if (port !== undefined && problem !== undefined) {
    return {
      reason: 'UnsupportedProtocol',
      message: `${at}.port: Unsupported value: Service ${ns}/${ref.name} port ${ref.port} has appProtocol "${port.appProtocol ?? ''}": ${problem}`,
    };
  }
  if (svc.spec?.type === 'ExternalName') {
    return { weight, targets: [`http://${svc.spec.externalName ?? ''}:${ref.port}`] };
  }
  if (port === undefined) {
    return {
      reason: 'BackendNotFound',
      message: `${at}.port: Not found: Service ${ns}/${ref.name} has no port ${ref.port}`,
    };
  }
  const slices = ctx.endpointSlices(ns, ref.name);
  // No EndpointSlice known (a cluster without the controller that writes them): the cluster name.
  if (slices.length === 0) return { weight, targets: [`http://${ref.name}.${ns}.svc:${ref.port}`] };
  const targets = new Set<string>();
  for (const slice of slices) {
    // The slice's port of this Service port: by name (an unnamed Service port: the slice's only one).
    const sp = (slice.ports ?? []).find((p) => (p.name ?? '') === (port.name ?? ''));
    const number = sp?.port ?? (typeof port.targetPort === 'number' ? port.targetPort : undefined);
    if (number === undefined) continue;
    for (const e of slice.endpoints ?? []) {
      if (e.conditions?.ready === false) continue;
      for (const a of e.addresses) targets.add(`http://${a.includes(':') ? `[${a}]` : a}:${number}`);
    }
  }
  return { weight, targets: [...targets].sort() };
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * The round-robin list of weighted backends: each backend's addresses repeated in proportion to
 * its weight (divided by the weights' greatest common divisor), interleaved so that a short run
 * of requests already spreads. `unavailable` stands for a backend without an address (its share
 * of requests gets 500, as the spec says).
 */
export function weightedTargets(backends: readonly ResolvedBackend[], unavailable: string): string[] {
  const used = backends.filter((b) => b.weight > 0);
  if (used.length === 0) return [];
  // Each backend's share of the list: its weight over the weights' divisor, per address.
  const divisor = used.reduce((d, b) => gcd(d, b.weight), 0);
  const lists = used.map((b) => {
    const each = b.weight / divisor;
    const addrs = b.targets.length === 0 ? [unavailable] : b.targets;
    // A backend's weight is shared by its addresses: the list holds each address `each` times,
    // and every backend as many slots as its weight says (scaled by the addresses' count).
    return { addrs, slots: each };
  });
  const perAddress = lists.reduce((l, b) => l * (b.addrs.length / gcd(l, b.addrs.length)), 1);
  const out: string[] = [];
  const queues = lists.map((b) => {
    const q: string[] = [];
    const times = (b.slots * perAddress) / b.addrs.length;
    for (let i = 0; i < times; i++) q.push(...b.addrs);
    return q;
  });
  // Interleave: one from each backend in turn, while any has some left.
  for (let round = 0; queues.some((q) => round < q.length); round++) {
    for (const q of queues) {
      const t = q[round];
      if (t !== undefined) out.push(t);
    }
  }
  return out;
}
