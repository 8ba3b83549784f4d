/**
 * A Gateway and its HTTPRoutes -> the ApiDefinitions that serve them (pure, golden-tested), and
 * the status the spec asks of each.
 *
 * Requests are routed by the gateway's own table: one API per listener port, host and path
 * match. Where several rule matches share a port, host and path and differ by method, headers or
 * query parameters, that API dispatches (URL rewrite triggers, in the spec's precedence) to an
 * internal API per rule (`svc://<api_id>`), which carries the rule's filters and backends; a
 * request no match takes goes on to the next path that covers it (then a 404). A route naming
 * something the gateway cannot serve as the spec says is refused (Accepted=False,
 * UnsupportedValue) with the field named, never served without it. One job a file: routes.ts (a
 * route attached: its parent statuses and candidates), apis.ts (the candidates -> the APIs).
 */
import { buildApis } from './apis.ts';
import { listenersOf } from './listeners.ts';
import { attachRoute, byAge, cond, type Candidate } from './routes.ts';
import {
  GATEWAY_GROUP,
  type Condition,
  type GatewayInput,
  type GatewayTranslation,
  type GatewayTranslationContext,
  type HttpRouteInput,
  type RouteParentStatus,
} from './types.ts';

/**
 * A Gateway with the HTTPRoutes that may name it -> the APIs that serve them and the status of
 * the Gateway, its listeners and each route's parents naming it. Pure: the same input gives the
 * same output.
 */
export function translateGateway(
  gateway: GatewayInput,
  routes: readonly HttpRouteInput[],
  ctx: GatewayTranslationContext,
): GatewayTranslation {
  const listeners = listenersOf(gateway, ctx);
  const attached = new Map<string, Set<string>>();
  const candidates: Candidate[] = [];
  const statuses: Record<string, RouteParentStatus[]> = {};

  for (const route of [...routes].sort(byAge)) {
    const routeKey = `${route.metadata.namespace}/${route.metadata.name}`;
    const { parents, candidates: mine, attachedTo } = attachRoute(route, gateway, listeners, ctx);
    candidates.push(...mine);
    for (const name of attachedTo) {
      const set = attached.get(name) ?? new Set<string>();
      set.add(routeKey);
      attached.set(name, set);
    }
    if (parents.length > 0) statuses[routeKey] = parents;
  }

  const apis = buildApis(gateway, candidates, ctx);
  const acceptedNames = listeners
    .filter((l) => l.conditions[0]?.status === 'True')
    .map((l) => l.listener.name);
  const accepted = acceptedNames.length;
  // Which listeners are conflicted and which accepted, as the spec asks of ListenersNotValid.
  const conflicts = listeners.flatMap((l) => {
    const c = l.conditions.find((x) => x.type === 'Conflicted' && x.status === 'True');
    return c === undefined ? [] : [`${l.listener.name} (${c.reason})`];
  });
  const notValid = [
    `${listeners.length - accepted} of ${listeners.length} listeners are not served`,
    ...(conflicts.length > 0 ? [`conflicted: ${conflicts.join(', ')}`] : []),
    ...(accepted > 0 ? [`accepted: ${acceptedNames.join(', ')}`] : []),
  ].join('; ');
  const addresses = gateway.spec.addresses ?? [];
  const conditions: Condition[] = [
    addresses.length > 0
      ? cond(
          'Accepted',
          false,
          'UnsupportedAddress',
          'spec.addresses: Unsupported value: svc serves on the addresses of its gateway',
        )
      : accepted === listeners.length
        ? cond('Accepted', true, 'Accepted', 'the Gateway is served')
        : cond('Accepted', accepted > 0, 'ListenersNotValid', notValid),
  ];
  return {
    apis,
    conditions,
    listeners: listeners.map((l) => ({
      name: l.listener.name,
      // The kinds allowed that svc serves: HTTPRoute, unless the listener lists only others.
      supportedKinds:
        (l.listener.protocol === 'HTTP' || l.listener.protocol === 'HTTPS') &&
        ((l.listener.allowedRoutes?.kinds ?? []).length === 0 ||
          (l.listener.allowedRoutes?.kinds ?? []).some(
            (k) => (k.group ?? GATEWAY_GROUP) === GATEWAY_GROUP && k.kind === 'HTTPRoute',
          ))
          ? [{ group: GATEWAY_GROUP, kind: 'HTTPRoute' }]
          : [],
      attachedRoutes: attached.get(l.listener.name)?.size ?? 0,
      conditions: l.conditions,
    })),
    routes: statuses,
  };
}
