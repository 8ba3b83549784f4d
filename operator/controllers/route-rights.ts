/**
 * Access rights naming an HTTPRoute (a SecurityPolicy's `access_rights_array`, an ApiKey's
 * `spec.accessRights`) -> the same rights on every ApiDefinition the Gateway controller generated
 * to serve the route: the ones whose annotation lists it (translate/gateway-api/apis.ts), the
 * public API of each group its matches land on and the internal API of each of its rules where
 * the group dispatches. Auth runs on each hop that has it, so the key needs each of them.
 */
import type * as k8s from '@kubernetes/client-node';
import type { AccessRight } from '../../schemas/generated/kinds.ts';
import type { Informer } from '../../lib/k8s/informer.ts';
import { GATEWAY_ROUTES_ANNOTATION } from '../translate/gateway-api.ts';
import { isRouteRight } from '../references.ts';

/** The routes (`namespace/name`) a generated API's annotation says it serves. */
export function servedRoutes(api: k8s.KubernetesObject | undefined): string[] {
  const text = api?.metadata?.annotations?.[GATEWAY_ROUTES_ANNOTATION] ?? '';
  return text === '' ? [] : text.split(',');
}

/** The result of expanding: the rights on API resources, or the routes not served yet. */
export type Expanded =
  { rights: AccessRight[]; missing?: undefined } | { rights?: undefined; missing: string[] };

/**
 * The rights with each HTTPRoute entry replaced by one entry per generated API serving the route
 * (its versions, allowed_urls, limit and endpoints copied), in order. `serving` lists the
 * generated APIs of a route (`namespace/name`); APIs being deleted serve it no more. A route with
 * none (not attached yet, not served, or its Gateway not reconciled yet) is `missing`.
 */
export function expandRouteRights(
  rights: readonly AccessRight[] | undefined,
  namespace: string,
  serving: (route: string) => readonly k8s.KubernetesObject[],
): Expanded {
  const out: AccessRight[] = [];
  const missing: string[] = [];
  for (const right of rights ?? []) {
    if (!isRouteRight(right)) {
      out.push(right);
      continue;
    }
    const route = `${right.namespace ?? namespace}/${right.name}`;
    const apis = serving(route)
      .filter((a) => a.metadata?.deletionTimestamp === undefined)
      .map((a) => ({ name: a.metadata?.name ?? '', namespace: a.metadata?.namespace ?? '' }))
      .sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
    if (apis.length === 0) {
      missing.push(`HTTPRoute ${route}`);
      continue;
    }
    const { kind: _kind, name: _name, namespace: _ns, ...settings } = right;
    for (const api of apis) out.push({ ...settings, kind: 'ApiDefinition', ...api });
  }
  return missing.length > 0 ? { missing } : { rights: out };
}

/**
 * The message of rights whose routes are not served yet (reason `ApiNotFound`, as for an API
 * that does not exist yet); `field` names the list, `then` what happens once they are served.
 */
export function unservedMessage(missing: readonly string[], field: string, then: string): string {
  return `${field} names ${missing.join(', ')}, which no generated ApiDefinition serves yet (the route is not attached to a Gateway of svc, or not translated yet): ${then} once one does`;
}

/** Generated ApiDefinitions by the routes they serve (`namespace/name`), an index of their informer. */
export function byServedRoute<T extends k8s.KubernetesObject>(inf: Informer<T>): (route: string) => T[] {
  inf.addIndex('served-route', (api) => servedRoutes(api));
  return (route) => inf.byIndex('served-route', route);
}

/** Objects whose access rights name an HTTPRoute (`namespace/name`), an index of their informer. */
export function byRouteRight<T extends k8s.KubernetesObject>(
  inf: Informer<T>,
  routesOf: (obj: T) => string[],
): (route: string) => T[] {
  inf.addIndex('route-right', routesOf);
  return (route) => inf.byIndex('route-right', route);
}
