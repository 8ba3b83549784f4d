/**
 * The Gateway API controllers (docs/gateway-api.md): GatewayClasses of controllerName
 * `svc.io/gateway-controller` are Accepted; each Gateway of such a class becomes ApiDefinitions
 * it owns (translate/gateway-api.ts), pushed by the ApiDefinition controller like any other, and
 * carries the status of its listeners and of its HTTPRoutes' parents. Without the Gateway API
 * CRDs the controllers wait (the manager says so) and start when they are installed.
 *
 * One job per file in gateway-api/: types.ts (names, objects, deps), reconcile.ts (a class, a
 * Gateway), writers.ts (writes to the cluster). This module wires informers and watches.
 */
import type * as k8s from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import { objectKey, type InformerEvent, type WatchSpec } from '../../lib/k8s/informer.ts';
import {
  GATEWAY_CONTROLLER,
  GATEWAY_GROUP,
  GATEWAY_LABEL,
  type ReferenceGrantInput,
} from '../translate/gateway-api.ts';
import { secretWatch, viewChanged, watchOf, type ControllerEnv } from './env.ts';
import { reconcileGateway, reconcileGatewayClass } from './gateway-api/reconcile.ts';
import type {
  GatewayApiSettings,
  GatewayClassObject,
  GatewayObject,
  HttpRouteObject,
} from './gateway-api/types.ts';
import { gatewayWriter } from './gateway-api/writers.ts';
import { urlPort } from './ingress/controller.ts';
import { clusterWriters } from './ingress/writers.ts';
import type { ApiObject } from './objects.ts';

export type { GatewayApiSettings } from './gateway-api/types.ts';

const gatewayApi = (kind: string, plural: string, namespaces: readonly string[]): WatchSpec => ({
  apiVersion: `${GATEWAY_GROUP}/v1`,
  kind,
  plural,
  namespaces,
});

/**
 * The Gateways (`namespace/name`) a route's parentRefs name, and those its status holds a parent
 * of ours for: a Gateway the route no longer names takes its stale parent status away.
 */
function gatewaysOf(route: HttpRouteObject): string[] {
  const isGateway = (p: { group?: string; kind?: string }): boolean =>
    (p.group ?? GATEWAY_GROUP) === GATEWAY_GROUP && (p.kind ?? 'Gateway') === 'Gateway';
  return [
    ...new Set([
      ...(route.spec.parentRefs ?? [])
        .filter(isGateway)
        .map((p) => `${p.namespace ?? route.metadata.namespace}/${p.name}`),
      ...(route.status?.parents ?? [])
        .filter((p) => p.controllerName === GATEWAY_CONTROLLER && isGateway(p.parentRef))
        .map((p) => `${p.parentRef.namespace ?? route.metadata.namespace}/${p.parentRef.name}`),
    ]),
  ];
}

/** The Services (`namespace/name`) a route's backendRefs name. */
function servicesOf(route: HttpRouteObject): string[] {
  return [
    ...new Set(
      (route.spec.rules ?? []).flatMap((r) =>
        (r.backendRefs ?? [])
          .filter((b) => (b.group ?? '') === '' && (b.kind ?? 'Service') === 'Service')
          .map((b) => `${b.namespace ?? route.metadata.namespace}/${b.name}`),
      ),
    ),
  ];
}

/** The GatewayClass and Gateway controllers. */
export function gatewayApiControllers(env: ControllerEnv, settings: GatewayApiSettings): ControllerSpec[] {
  const classSpec = gatewayApi('GatewayClass', 'gatewayclasses', []);
  const gwSpec = gatewayApi('Gateway', 'gateways', env.namespaces);
  const routeSpec = gatewayApi('HTTPRoute', 'httproutes', env.namespaces);
  const grantSpec: WatchSpec = {
    apiVersion: `${GATEWAY_GROUP}/v1beta1`,
    kind: 'ReferenceGrant',
    plural: 'referencegrants',
    namespaces: env.namespaces,
  };
  const svcSpec: WatchSpec = {
    apiVersion: 'v1',
    kind: 'Service',
    plural: 'services',
    namespaces: env.namespaces,
  };
  const sliceSpec: WatchSpec = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    plural: 'endpointslices',
    namespaces: env.namespaces,
  };
  const nsSpec: WatchSpec = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaces: [] };
  const secSpec = secretWatch(env);
  const apiSpec = watchOf(env, 'ApiDefinition');

  const classes = env.manager.informer<GatewayClassObject & k8s.KubernetesObject>(classSpec);
  const gateways = env.manager.informer<GatewayObject & k8s.KubernetesObject>(gwSpec);
  const routes = env.manager.informer<HttpRouteObject & k8s.KubernetesObject>(routeSpec);
  const grants = env.manager.informer<ReferenceGrantInput & k8s.KubernetesObject>(grantSpec);
  const services = env.manager.informer<k8s.V1Service>(svcSpec);
  const slices = env.manager.informer<k8s.V1EndpointSlice>(sliceSpec);
  const namespaces = env.manager.informer<k8s.V1Namespace>(nsSpec);
  const secrets = env.manager.informer<k8s.V1Secret>(secSpec);
  const apis = env.manager.informer<ApiObject>(apiSpec);

  routes.addIndex('gateway', (r) => gatewaysOf(r));
  routes.addIndex('service', (r) => servicesOf(r));
  gateways.addIndex('class', (g) => [g.spec.gatewayClassName]);
  gateways.addIndex('secret', (g) =>
    g.spec.listeners.flatMap((l) =>
      (l.tls?.certificateRefs ?? []).map((c) => `${c.namespace ?? g.metadata.namespace}/${c.name}`),
    ),
  );
  slices.addIndex('service', (s) => {
    const svc = s.metadata?.labels?.['kubernetes.io/service-name'];
    return svc ? [`${s.metadata?.namespace ?? ''}/${svc}`] : [];
  });
  apis.addIndex('gateway', (a) => {
    const owner = a.metadata.labels?.[GATEWAY_LABEL];
    return owner ? [`${a.metadata.namespace}/${owner}`] : [];
  });

  const writer = gatewayWriter(env);
  const apiWriter = clusterWriters(env, apiSpec.plural).apis;
  const gatewayPort = urlPort(settings.managementUrl);
  const addresses = settings.address
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '')
    .map((value) => ({ type: /^[0-9.]+$|:/.test(value) ? 'IPAddress' : 'Hostname', value }));
  /** The Gateways a set of routes name. */
  const gatewaysOfRoutes = (list: readonly HttpRouteObject[]): string[] => [
    ...new Set(list.flatMap(gatewaysOf)),
  ];
  const all = (): string[] => gateways.list().map((g) => objectKey(g));

  const classController: ControllerSpec = {
    name: 'gatewayclass',
    watch: classSpec,
    reconcile: (key) =>
      reconcileGatewayClass(classes.get('', key.slice(key.indexOf('/') + 1)), { writer, now: env.now }),
  };

  const gatewayController: ControllerSpec = {
    name: 'gateway',
    watch: gwSpec,
    workers: 16,
    reconcile: (key) =>
      reconcileGateway(key, {
        read: (namespace, name) => gateways.get(namespace, name),
        gatewayClass: (name) => classes.get('', name),
        routes: (gatewayKey) => routes.byIndex('gateway', gatewayKey),
        context: () => ({
          service: (ns, name) => services.get(ns, name),
          endpointSlices: (ns, name) => slices.byIndex('service', `${ns}/${name}`),
          secretExists: (ns, name) => secrets.get(ns, name) !== undefined,
          namespaceLabels: (ns) => namespaces.get('', ns)?.metadata?.labels,
          grants: grants.list(),
          ...(gatewayPort === undefined ? {} : { gatewayPort }),
        }),
        generated: (gw) => apis.byIndex('gateway', `${gw.metadata.namespace}/${gw.metadata.name}`),
        apis: apiWriter,
        writer,
        addresses: () => addresses,
        now: env.now,
        log: env.log,
      }),
    watches: [
      {
        watch: classSpec,
        map: (c: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, c, old, (x) => (x as GatewayClassObject).spec)
            ? gateways.byIndex('class', c.metadata?.name ?? '').map((g) => objectKey(g))
            : [],
      },
      {
        // A route's change (or its old parents', when it moved): the Gateways it names.
        watch: routeSpec,
        map: (r: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const route = r as HttpRouteObject;
          const prev = old as HttpRouteObject | undefined;
          if (!viewChanged(event, route, prev, (x) => x.spec)) return [];
          return gatewaysOfRoutes(prev ? [route, prev] : [route]);
        },
      },
      {
        watch: svcSpec,
        map: (s: k8s.V1Service, old: k8s.V1Service | undefined, event: InformerEvent) =>
          viewChanged(event, s, old, (x) => x.spec)
            ? gatewaysOfRoutes(routes.byIndex('service', objectKey(s)))
            : [],
      },
      {
        watch: sliceSpec,
        map: (obj: k8s.KubernetesObject, prev: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const s = obj as k8s.V1EndpointSlice;
          const old = prev as k8s.V1EndpointSlice | undefined;
          const svc = s.metadata?.labels?.['kubernetes.io/service-name'];
          if (!svc || !viewChanged(event, s, old, (x) => [x.endpoints, x.ports])) return [];
          return gatewaysOfRoutes(routes.byIndex('service', `${s.metadata?.namespace ?? ''}/${svc}`));
        },
      },
      {
        // Grants are few and rarely change: every Gateway looks again.
        watch: grantSpec,
        map: (g: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, g, old, (x) => (x as ReferenceGrantInput).spec) ? all() : [],
      },
      {
        watch: nsSpec,
        map: (n: k8s.V1Namespace, old: k8s.V1Namespace | undefined, event: InformerEvent) =>
          event === 'update' && !isDeepStrictEqual(n.metadata?.labels, old?.metadata?.labels) ? all() : [],
      },
      {
        watch: secSpec,
        map: (s: k8s.KubernetesObject, _old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          event === 'update' ? [] : gateways.byIndex('secret', objectKey(s)).map((g) => objectKey(g)),
      },
      {
        // A generated API's status (Programmed) or a change by someone else: its Gateway.
        watch: apiSpec,
        map: (a: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const api = a as ApiObject;
          const owner = api.metadata.labels?.[GATEWAY_LABEL];
          if (!owner) return [];
          const view = (x: ApiObject) => ({
            spec: x.spec,
            generation: x.metadata.generation,
            programmed: x.status?.conditions?.find((c) => c.type === 'Programmed'),
            deleting: x.metadata.deletionTimestamp,
          });
          return viewChanged(event, api, old as ApiObject | undefined, view)
            ? [`${api.metadata.namespace}/${owner}`]
            : [];
        },
      },
    ],
  };
  return [classController, gatewayController];
}
