/**
 * Listeners and attachment: which listeners a Gateway can serve, which routes may attach to
 * which listener (parentRef, allowed namespaces and kinds), and the hostnames a route is served
 * on through a listener (the intersection the spec defines).
 */
import { servedSecretName } from '../../../schemas/rules/secret-refs.ts';
import { listenerSecretGranted } from './grants.ts';
import {
  GATEWAY_GROUP,
  type Condition,
  type GatewayInput,
  type GatewayTranslationContext,
  type HttpRouteInput,
  type ListenerInput,
  type ParentRef,
} from './types.ts';

/** A listener svc serves, with what it resolved to. */
export interface ServedListener {
  listener: ListenerInput;
  scheme: 'http' | 'https';
  /**
   * The TLS Secrets an HTTPS listener serves with, as its generated APIs name them
   * (`certificate_secret_names`: a name in the Gateway's namespace, `namespace/name` in another).
   */
  secrets: string[];
  conditions: Condition[];
  /**
   * Whether routes may attach (accepted, not conflicted, HTTPRoutes allowed): they count in its
   * `attachedRoutes` even when it cannot be served (a certificate that does not resolve).
   */
  attachable: boolean;
  /** Whether the routes attached are served on it (attachable, and its certificates resolved). */
  usable: boolean;
}

const ok = (type: string, reason: string, message: string): Condition => ({
  type,
  status: 'True',
  reason,
  message,
});
const bad = (type: string, reason: string, message: string): Condition => ({
  type,
  status: 'False',
  reason,
  message,
});

/** The protocols svc serves: a listener of another protocol is refused, and conflicts with none. */
const SERVED_PROTOCOLS: readonly string[] = ['HTTP', 'HTTPS'];

/**
 * Why the listener `i` conflicts with others of the Gateway (Conflicted=True), if it does:
 * ProtocolConflict when a listener of the other served protocol has its port (the gateway serves
 * a port in clear or with TLS, never both), else HostnameConflict when one has its port,
 * protocol and hostname.
 */
function conflictOf(
  listeners: readonly ListenerInput[],
  i: number,
): { reason: 'ProtocolConflict' | 'HostnameConflict'; message: string } | undefined {
  const l = listeners[i];
  if (l === undefined) return undefined;
  const others = listeners.filter((o, j) => j !== i && o.port === l.port);
  const names = (list: readonly ListenerInput[]): string =>
    list.map((o) => `${o.name} (${o.protocol})`).join(', ');
  const protocols = SERVED_PROTOCOLS.includes(l.protocol)
    ? others.filter((o) => SERVED_PROTOCOLS.includes(o.protocol) && o.protocol !== l.protocol)
    : [];
  if (protocols.length > 0) {
    return {
      reason: 'ProtocolConflict',
      message: `port ${l.port} is also the port of listener${protocols.length > 1 ? 's' : ''} ${names(protocols)}: a port is served with one protocol, HTTP or HTTPS; none of these listeners is served`,
    };
  }
  const hosts = others.filter((o) => o.protocol === l.protocol && (o.hostname ?? '') === (l.hostname ?? ''));
  if (hosts.length > 0) {
    return {
      reason: 'HostnameConflict',
      message: `listener${hosts.length > 1 ? 's' : ''} ${names(hosts)} ha${hosts.length > 1 ? 've' : 's'} this port, protocol and hostname too; none of these listeners is served`,
    };
  }
  return undefined;
}

/** Each listener with its conditions (Accepted, ResolvedRefs, Conflicted; Programmed is the reconciler's). */
export function listenersOf(gateway: GatewayInput, ctx: GatewayTranslationContext): ServedListener[] {
  const ns = gateway.metadata.namespace;
  const listeners = gateway.spec.listeners;
  return listeners.map((l, i) => {
    const at = `spec.listeners[${i}]`;
    const conflict = conflictOf(listeners, i);
    const conflicted = conflict !== undefined;
    const kinds = l.allowedRoutes?.kinds ?? [];
    const badKind = kinds.find((k) => (k.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || k.kind !== 'HTTPRoute');
    const conditions: Condition[] = [];
    let scheme: 'http' | 'https' = 'http';
    const secrets: string[] = [];
    let accepted: Condition = ok('Accepted', 'Accepted', 'the listener is served');
    let resolved: Condition = ok('ResolvedRefs', 'ResolvedRefs', 'every reference is resolved');
    if (l.protocol === 'HTTPS') {
      scheme = 'https';
      if ((l.tls?.mode ?? 'Terminate') !== 'Terminate') {
        accepted = bad(
          'Accepted',
          'UnsupportedValue',
          `${at}.tls.mode: Unsupported value: "${l.tls?.mode ?? ''}": svc terminates TLS (supported values: "Terminate")`,
        );
      }
      for (const [c, ref] of (l.tls?.certificateRefs ?? []).entries()) {
        const where = `${at}.tls.certificateRefs[${c}]`;
        if ((ref.group ?? '') !== '' || (ref.kind ?? 'Secret') !== 'Secret') {
          resolved = bad(
            'ResolvedRefs',
            'InvalidCertificateRef',
            `${where}: Unsupported value: only Secrets`,
          );
        } else if (
          !listenerSecretGranted(ctx.grants, ns, { namespace: ref.namespace ?? ns, name: ref.name })
        ) {
          // Another namespace's Secret needs a ReferenceGrant there (grants.ts, as for backendRefs).
          resolved = bad(
            'ResolvedRefs',
            'RefNotPermitted',
            `${where}.namespace: Forbidden: no ReferenceGrant in namespace ${ref.namespace ?? ns} lets Gateways of ${ns} name Secret ${ref.name}`,
          );
        } else if (!ctx.secretExists(ref.namespace ?? ns, ref.name)) {
          resolved = bad(
            'ResolvedRefs',
            'InvalidCertificateRef',
            `${where}: Not found: Secret ${ref.namespace ?? ns}/${ref.name}`,
          );
        } else {
          const secret = { namespace: ref.namespace ?? ns, name: ref.name };
          const problem = ctx.certificateProblem?.(secret.namespace, secret.name);
          if (problem === undefined) secrets.push(servedSecretName(ns, secret));
          else {
            resolved = bad(
              'ResolvedRefs',
              'InvalidCertificateRef',
              `${where}: Invalid value: Secret ${secret.namespace}/${secret.name}: ${problem}`,
            );
          }
        }
      }
      if ((l.tls?.certificateRefs ?? []).length === 0 && resolved.status === 'True') {
        resolved = bad('ResolvedRefs', 'InvalidCertificateRef', `${at}.tls.certificateRefs: Required value`);
      }
    } else if (l.protocol !== 'HTTP') {
      accepted = bad(
        'Accepted',
        'UnsupportedProtocol',
        `${at}.protocol: Unsupported value: "${l.protocol}": supported values: "HTTP", "HTTPS"`,
      );
    }
    if (badKind !== undefined) {
      resolved = bad(
        'ResolvedRefs',
        'InvalidRouteKinds',
        `${at}.allowedRoutes.kinds: Unsupported value: ${badKind.group ?? GATEWAY_GROUP}/${badKind.kind}: supported values: ${GATEWAY_GROUP}/HTTPRoute`,
      );
    }
    // Conflicted listeners are not accepted, none of them (the spec: no winner is picked).
    if (conflict !== undefined && accepted.status === 'True') {
      accepted = bad('Accepted', conflict.reason, conflict.message);
    }
    conditions.push(accepted, resolved);
    conditions.push(
      conflict !== undefined
        ? ok('Conflicted', conflict.reason, conflict.message)
        : bad('Conflicted', 'NoConflicts', 'no conflict'),
    );
    const httpRoutes =
      kinds.length === 0 ||
      kinds.some((k) => (k.group ?? GATEWAY_GROUP) === GATEWAY_GROUP && k.kind === 'HTTPRoute');
    const attachable = accepted.status === 'True' && !conflicted && httpRoutes;
    const usable = attachable && (l.protocol !== 'HTTPS' || secrets.length > 0);
    return { listener: l, scheme, secrets, conditions, attachable, usable };
  });
}

/** Whether a route's namespace is allowed by a listener. */
export function namespaceAllowed(
  listener: ListenerInput,
  gatewayNamespace: string,
  routeNamespace: string,
  ctx: Pick<GatewayTranslationContext, 'namespaceLabels'>,
): boolean {
  const from = listener.allowedRoutes?.namespaces?.from ?? 'Same';
  if (from === 'All') return true;
  if (from === 'Same') return routeNamespace === gatewayNamespace;
  const selector = listener.allowedRoutes?.namespaces?.selector;
  // matchExpressions are not read: a selector with them allows nothing rather than too much.
  if ((selector?.matchExpressions ?? []).length > 0) return false;
  const labels = ctx.namespaceLabels(routeNamespace) ?? {};
  return Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}

/** Whether a parentRef names this Gateway (group, kind, namespace defaulted as the spec says). */
export function namesGateway(ref: ParentRef, route: HttpRouteInput, gateway: GatewayInput): boolean {
  return (
    (ref.group ?? GATEWAY_GROUP) === GATEWAY_GROUP &&
    (ref.kind ?? 'Gateway') === 'Gateway' &&
    (ref.namespace ?? route.metadata.namespace) === gateway.metadata.namespace &&
    ref.name === gateway.metadata.name
  );
}

/** Whether `host` (no wildcard) is covered by the wildcard `wild` (`*.example.com`): one or more labels. */
function underWildcard(host: string, wild: string): boolean {
  const suffix = wild.slice(1);
  return host.endsWith(suffix) && host.length > suffix.length;
}

/**
 * The hostnames a route is served on through a listener: undefined when they do not intersect
 * (the route does not attach there); `['']` for any host.
 */
export function intersectHostnames(
  listenerHost: string | undefined,
  routeHosts: readonly string[],
): string[] | undefined {
  const l = (listenerHost ?? '').toLowerCase();
  const routes = routeHosts.map((h) => h.toLowerCase());
  if (routes.length === 0) return [l];
  if (l === '') return [...new Set(routes)];
  const out = new Set<string>();
  for (const r of routes) {
    if (r === l) out.add(r);
    else if (l.startsWith('*.') && !r.startsWith('*.') && underWildcard(r, l)) out.add(r);
    else if (l.startsWith('*.') && r.startsWith('*.') && underWildcard(r.slice(2), l)) out.add(r);
    else if (r.startsWith('*.') && !l.startsWith('*.') && underWildcard(l, r)) out.add(l);
  }
  return out.size === 0 ? undefined : [...out].sort();
}
