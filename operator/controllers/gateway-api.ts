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
import type { PolicyStatusContext } from '../translate/gateway-api/policies.ts';
import { secretWatch, viewChanged, watchOf, type ControllerEnv } from './env.ts';
import { reconcileGateway, reconcileGatewayClass } from './gateway-api/reconcile.ts';
import {
  reconcileRoutePolicy,
  routePolicyWriter,
  type RoutePolicyObject,
} from './gateway-api/policy-status.ts';
import { owningGateway } from './gateway-api/addresses.ts';
import { addressWriter, ownAddresses } from './gateway-api/own-address.ts';
import { gatewaysForApiEvent } from './gateway-api/retry.ts';
import { tlsSecretProblem } from './gateway-api/tls-secret.ts';
import type {
  GatewayApiSettings,
  GatewayClassObject,
  GatewayObject,
  HttpRouteObject,
  OwnAddresses,
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

/** The targets (`namespace/Kind/name`) of a policy, sections aside. */
function targetsOf(policy: RoutePolicyObject): string[] {
  return [
    ...new Set(
      policy.spec.targetRefs
        .filter((t) => t.group === GATEWAY_GROUP)
        .map((t) => `${policy.metadata.namespace}/${t.kind}/${t.name}`),
    ),
  ];
}

/** The GatewayClass, Gateway and SvcRoutePolicy controllers. */
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
  const policySpec = watchOf(env, 'SvcRoutePolicy');

  const classes = env.manager.informer<GatewayClassObject & k8s.KubernetesObject>(classSpec);
  const gateways = env.manager.informer<GatewayObject & k8s.KubernetesObject>(gwSpec);
  const routes = env.manager.informer<HttpRouteObject & k8s.KubernetesObject>(routeSpec);
  const grants = env.manager.informer<ReferenceGrantInput & k8s.KubernetesObject>(grantSpec);
  const services = env.manager.informer<k8s.V1Service>(svcSpec);
  const slices = env.manager.informer<k8s.V1EndpointSlice>(sliceSpec);
  const namespaces = env.manager.informer<k8s.V1Namespace>(nsSpec);
  const secrets = env.manager.informer<k8s.V1Secret>(secSpec);
  const apis = env.manager.informer<ApiObject>(apiSpec);
  const policies = env.manager.informer<RoutePolicyObject & k8s.KubernetesObject>(policySpec);
  // Per-Gateway addresses: the EndpointSlices of the gateway's own Service (its pods).
  const perGateway = settings.perGateway;
  const gatewaySliceSpec: WatchSpec | undefined =
    perGateway === undefined
      ? undefined
      : { ...sliceSpec, namespaces: [perGateway.gatewayService.namespace] };
  const gatewaySlices =
    gatewaySliceSpec === undefined ? undefined : env.manager.informer<k8s.V1EndpointSlice>(gatewaySliceSpec);

  routes.addIndex('gateway', (r) => gatewaysOf(r));
  services.addIndex('gateway', (s) => {
    const owner = owningGateway(s);
    return owner === undefined ? [] : [owner];
  });
  routes.addIndex('service', (r) => servicesOf(r));
  gateways.addIndex('class', (g) => [g.spec.gatewayClassName]);
  gateways.addIndex('secret', (g) =>
    g.spec.listeners.flatMap((l) =>
      (l.tls?.certificateRefs ?? []).map((c) => `${c.namespace ?? g.metadata.namespace}/${c.name}`),
    ),
  );
  const sliceService = (s: k8s.V1EndpointSlice): string[] => {
    const svc = s.metadata?.labels?.['kubernetes.io/service-name'];
    return svc ? [`${s.metadata?.namespace ?? ''}/${svc}`] : [];
  };
  slices.addIndex('service', sliceService);
  if (gatewaySlices !== undefined && gatewaySlices !== slices)
    gatewaySlices.addIndex('service', sliceService);
  policies.addIndex('target', targetsOf);
  apis.addIndex('gateway', (a) => {
    const owner = a.metadata.labels?.[GATEWAY_LABEL];
    return owner ? [`${a.metadata.namespace}/${owner}`] : [];
  });

  const ownAddress: OwnAddresses | undefined =
    perGateway === undefined || gatewaySlices === undefined
      ? undefined
      : ownAddresses({
          range: perGateway.range,
          service: (ns, name) => services.get(ns, name),
          ownedServices: () => services.list().filter((s) => owningGateway(s) !== undefined),
          gatewayCreated: (key) => {
            const [ns = '', name = ''] = key.split('/');
            const t = gateways.get(ns, name)?.metadata.creationTimestamp;
            return t === undefined ? undefined : typeof t === 'string' ? t : t.toISOString();
          },
          slices: (ns, name) => slices.byIndex('service', `${ns}/${name}`),
          gatewaySlices: () =>
            gatewaySlices.byIndex(
              'service',
              `${perGateway.gatewayService.namespace}/${perGateway.gatewayService.name}`,
            ),
          writer: addressWriter(env),
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
  /** Whether a Gateway is of a class svc serves. */
  const served = (g: GatewayObject | undefined): g is GatewayObject =>
    g !== undefined && classes.get('', g.spec.gatewayClassName)?.spec.controllerName === GATEWAY_CONTROLLER;
  /** The Gateways a policy reaches: those it targets, and those its target routes name. */
  const gatewaysOfPolicy = (p: RoutePolicyObject): string[] =>
    p.spec.targetRefs.flatMap((t) => {
      if (t.kind === 'Gateway') return [`${p.metadata.namespace}/${t.name}`];
      if (t.kind !== 'HTTPRoute') return [];
      const route = routes.get(p.metadata.namespace, t.name);
      return route === undefined ? [] : gatewaysOf(route);
    });
  /** The policies of a target (`namespace/Kind/name`), as keys. */
  const policiesOf = (target: string): string[] =>
    policies.byIndex('target', target).map((p) => objectKey(p));
  const policyContext = (): PolicyStatusContext => ({
    gateway: (ns, name) => {
      const g = gateways.get(ns, name);
      return served(g) && !g.metadata.deletionTimestamp ? g : undefined;
    },
    route: (ns, name) => routes.get(ns, name),
    policies: policies.list(),
  });

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
          certificateProblem: (ns, name) => {
            const secret = secrets.get(ns, name);
            return secret === undefined ? undefined : tlsSecretProblem(secret);
          },
          namespaceLabels: (ns) => namespaces.get('', ns)?.metadata?.labels,
          grants: grants.list(),
          policies: policies.list(),
          ...(gatewayPort === undefined ? {} : { gatewayPort }),
        }),
        generated: (gw) => apis.byIndex('gateway', `${gw.metadata.namespace}/${gw.metadata.name}`),
        apis: apiWriter,
        writer,
        addresses: () => addresses,
        ...(ownAddress === undefined ? {} : { ownAddress }),
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
        // A backend Service; or a Gateway's own Service (per-Gateway addresses) changed or deleted.
        watch: svcSpec,
        map: (s: k8s.V1Service, old: k8s.V1Service | undefined, event: InformerEvent) => {
          if (!viewChanged(event, s, old, (x) => [x.spec, x.metadata?.ownerReferences])) return [];
          const owner = ownAddress === undefined ? undefined : owningGateway(s);
          // A Gateway's Service deleted frees its gateway ports: a Gateway left without may take them.
          if (owner !== undefined && event === 'delete') return all();
          return [
            ...gatewaysOfRoutes(routes.byIndex('service', objectKey(s))),
            ...(owner === undefined ? [] : [owner]),
          ];
        },
      },
      {
        watch: sliceSpec,
        map: (obj: k8s.KubernetesObject, prev: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const s = obj as k8s.V1EndpointSlice;
          const old = prev as k8s.V1EndpointSlice | undefined;
          const svc = s.metadata?.labels?.['kubernetes.io/service-name'];
          if (!svc || !viewChanged(event, s, old, (x) => [x.endpoints, x.ports])) return [];
          const key = `${s.metadata?.namespace ?? ''}/${svc}`;
          // A Gateway's own EndpointSlice changed by someone else (per-Gateway addresses): its Gateway.
          const owner = ownAddress === undefined ? undefined : owningGateway(s);
          // The gateway's own endpoints moved: every Gateway's Service follows them.
          if (
            perGateway !== undefined &&
            key === `${perGateway.gatewayService.namespace}/${perGateway.gatewayService.name}`
          )
            return all();
          return [
            ...gatewaysOfRoutes(routes.byIndex('service', key)),
            ...(owner === undefined ? [] : [owner]),
          ];
        },
      },
      ...(gatewaySliceSpec === undefined || perGateway === undefined
        ? []
        : [
            {
              // The gateway's own endpoints (its pods), where they are outside the watched namespaces.
              watch: gatewaySliceSpec,
              map: (
                obj: k8s.KubernetesObject,
                prev: k8s.KubernetesObject | undefined,
                event: InformerEvent,
              ) => {
                const s = obj as k8s.V1EndpointSlice;
                const old = prev as k8s.V1EndpointSlice | undefined;
                return s.metadata?.labels?.['kubernetes.io/service-name'] ===
                  perGateway.gatewayService.name && viewChanged(event, s, old, (x) => [x.endpoints, x.ports])
                  ? all()
                  : [];
              },
            },
          ]),
      {
        // A policy's change (or its old targets', when they moved): the Gateways it reaches.
        watch: policySpec,
        map: (p: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const policy = p as RoutePolicyObject;
          const prev = old as RoutePolicyObject | undefined;
          if (!viewChanged(event, policy, prev, (x) => x.spec)) return [];
          return [...new Set([policy, ...(prev ? [prev] : [])].flatMap(gatewaysOfPolicy))];
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
        // A certificate Secret added, deleted, or its certificate or key changed.
        map: (s: k8s.V1Secret, old: k8s.V1Secret | undefined, event: InformerEvent) =>
          viewChanged(event, s, old, (x) => [x.data?.['tls.crt'], x.data?.['tls.key']])
            ? gateways.byIndex('secret', objectKey(s)).map((g) => objectKey(g))
            : [],
      },
      {
        // A generated API's status (Programmed) or a change by someone else: its Gateway; an API
        // that frees its route: the Gateways whose writes were refused (gateway-api/retry.ts).
        watch: apiSpec,
        map: (a: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const api = a as ApiObject;
          const prev = old as ApiObject | undefined;
          const view = (x: ApiObject) => ({
            spec: x.spec,
            generation: x.metadata.generation,
            programmed: x.status?.conditions?.find((c) => c.type === 'Programmed'),
            deleting: x.metadata.deletionTimestamp,
          });
          return gatewaysForApiEvent(event, api, prev, gateways.list(), viewChanged(event, api, prev, view));
        },
      },
    ],
  };
  const policyController: ControllerSpec = {
    name: 'svcroutepolicy',
    watch: policySpec,
    reconcile: (key) =>
      reconcileRoutePolicy(key, {
        read: (namespace, name) => policies.get(namespace, name),
        context: policyContext,
        patchAncestors: routePolicyWriter(env),
        now: env.now,
        log: env.log,
      }),
    watches: [
      {
        // Another policy of the same targets (the older wins): its status may change.
        watch: policySpec,
        map: (p: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const list = [p, ...(old ? [old] : [])] as RoutePolicyObject[];
          if (
            !viewChanged(event, p as RoutePolicyObject, list[1], (x) => [
              x.spec,
              x.metadata.creationTimestamp,
            ])
          )
            return [];
          return [...new Set(list.flatMap(targetsOf).flatMap(policiesOf))];
        },
      },
      {
        // A route created, deleted or moved to other Gateways, or its rules renamed.
        watch: routeSpec,
        map: (r: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const route = r as HttpRouteObject;
          if (!viewChanged(event, route, old as HttpRouteObject | undefined, (x) => x.spec)) return [];
          return policiesOf(`${route.metadata.namespace}/HTTPRoute/${route.metadata.name}`);
        },
      },
      {
        // A Gateway created, deleted or its listeners changed: its policies and its routes' policies.
        watch: gwSpec,
        map: (g: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const gw = g as GatewayObject;
          const view = (x: GatewayObject) => [x.spec, x.metadata.deletionTimestamp];
          if (!viewChanged(event, gw, old as GatewayObject | undefined, view)) return [];
          return [
            ...new Set([
              ...policiesOf(`${gw.metadata.namespace}/Gateway/${gw.metadata.name}`),
              ...routes
                .byIndex('gateway', `${gw.metadata.namespace}/${gw.metadata.name}`)
                .flatMap((r) => policiesOf(`${r.metadata.namespace}/HTTPRoute/${r.metadata.name}`)),
            ]),
          ];
        },
      },
      {
        // A class becoming ours or another's: every policy looks again (classes are few).
        watch: classSpec,
        map: (c: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, c, old, (x) => (x as GatewayClassObject).spec)
            ? policies.list().map((p) => objectKey(p))
            : [],
      },
    ],
  };
  return [classController, gatewayController, policyController];
}
