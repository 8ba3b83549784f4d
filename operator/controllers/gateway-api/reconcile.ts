/**
 * The reconcilers of the Gateway API: a GatewayClass of ours is Accepted; a Gateway of such a
 * class has its generated ApiDefinitions made to match its listeners and attached HTTPRoutes
 * (translate/gateway-api.ts; the ApiDefinition controller pushes them like any other), and the
 * status of the Gateway, its listeners and its routes' parents written truthfully: Programmed
 * only when every generated API is Programmed (served by every gateway at its revision:
 * controllers/programmed.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import { API_VERSION } from '../../../schemas/common.ts';
import { API_FINALIZER } from '../../../schemas/finalizers.ts';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import { statusOf } from '../../../lib/k8s/client.ts';
import { splitKey } from '../../../lib/k8s/informer.ts';
import { hashOf } from '../../ids.ts';
import {
  GATEWAY_CONTROLLER,
  GATEWAY_GROUP,
  GATEWAY_LABEL,
  GATEWAY_ROUTES_ANNOTATION,
  translateGateway,
  type Condition,
  type GeneratedApi,
} from '../../translate/gateway-api.ts';
import { contains } from '../ingress/generated-api.ts';
import { writeGeneratedApis } from '../generated-apis.ts';
import { addressServiceName, gatewayOwner } from './addresses.ts';
import type { ApiObject } from '../objects.ts';
import {
  GATEWAY_FINALIZER,
  GATEWAY_SPEC_HASH_ANNOTATION,
  type GatewayClassObject,
  type GatewayDeps,
  type GatewayObject,
  type HttpRouteObject,
  type StoredCondition,
  type StoredParentStatus,
} from './types.ts';

/** How soon a Gateway whose APIs are not all served yet is looked at again. */
const PENDING_RECHECK_MS = 2_000;
/** How soon a Gateway whose API writes were refused tries them again. */
const REFUSED_RECHECK_MS = 30_000;

/** `conditions` as stored: the generation observed, and the transition time kept while the status holds. */
export function stamp(
  want: readonly Condition[],
  have: readonly StoredCondition[] | undefined,
  generation: number | undefined,
  now: Date,
): StoredCondition[] {
  return want.map((c) => {
    const old = have?.find((h) => h.type === c.type);
    return {
      ...c,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
      lastTransitionTime:
        old?.status === c.status && old.lastTransitionTime !== undefined
          ? old.lastTransitionTime
          : now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
  });
}

/** Whether two stored condition lists say the same (times aside). */
const sameConditions = (a: readonly StoredCondition[] | undefined, b: readonly StoredCondition[]): boolean =>
  isDeepStrictEqual(
    (a ?? []).map(({ lastTransitionTime: _t, ...c }) => c),
    b.map(({ lastTransitionTime: _t, ...c }) => c),
  );

/** A GatewayClass: Accepted when its controllerName is ours (others are left alone). */
export async function reconcileGatewayClass(
  cls: GatewayClassObject | undefined,
  deps: Pick<GatewayDeps, 'writer' | 'now'>,
): Promise<WorkResult> {
  if (cls?.spec.controllerName !== GATEWAY_CONTROLLER || cls.metadata.deletionTimestamp) return {};
  const want = stamp(
    [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'served by the svc gateway' }],
    cls.status?.conditions,
    cls.metadata.generation,
    deps.now(),
  );
  const others = (cls.status?.conditions ?? []).filter((c) => c.type !== 'Accepted');
  if (
    !sameConditions(
      cls.status?.conditions?.filter((c) => c.type === 'Accepted'),
      want,
    )
  ) {
    await deps.writer.patchClassStatus(cls, [...want, ...others]);
  }
  return {};
}

/** The ApiDefinition resource of a generated API, owned by its Gateway. */
export function gatewayApiObject(gw: GatewayObject, api: GeneratedApi): ApiObject {
  return {
    apiVersion: API_VERSION,
    kind: 'ApiDefinition',
    metadata: {
      name: api.name,
      namespace: gw.metadata.namespace,
      labels: { [GATEWAY_LABEL]: gw.metadata.name },
      finalizers: [API_FINALIZER],
      annotations: {
        [GATEWAY_SPEC_HASH_ANNOTATION]: hashOf(api.spec),
        // The routes it serves: access rights naming an HTTPRoute find its APIs by it.
        ...(api.routes.length > 0 ? { [GATEWAY_ROUTES_ANNOTATION]: api.routes.join(',') } : {}),
      },
      ownerReferences: [gatewayOwner(gw)],
    },
    spec: api.spec,
  };
}

const upToDate = (have: ApiObject, want: ApiObject): boolean =>
  have.metadata.annotations?.[GATEWAY_SPEC_HASH_ANNOTATION] ===
    want.metadata.annotations?.[GATEWAY_SPEC_HASH_ANNOTATION] &&
  have.metadata.annotations?.[GATEWAY_ROUTES_ANNOTATION] ===
    want.metadata.annotations?.[GATEWAY_ROUTES_ANNOTATION] &&
  contains(have.spec, want.spec) &&
  have.metadata.labels?.[GATEWAY_LABEL] === want.metadata.labels?.[GATEWAY_LABEL];

/** Whether a generated API is served at the spec written: Programmed for its generation. */
function programmed(api: ApiObject): boolean {
  const c = api.status?.conditions?.find((x) => x.type === 'Programmed');
  return c?.status === 'True' && c.observedGeneration === api.metadata.generation;
}

/** Whether a stored parent status is ours and for this Gateway. */
function ourParent(p: StoredParentStatus, gw: GatewayObject, routeNamespace: string): boolean {
  return (
    p.controllerName === GATEWAY_CONTROLLER &&
    (p.parentRef.group ?? GATEWAY_GROUP) === GATEWAY_GROUP &&
    (p.parentRef.kind ?? 'Gateway') === 'Gateway' &&
    (p.parentRef.namespace ?? routeNamespace) === gw.metadata.namespace &&
    p.parentRef.name === gw.metadata.name
  );
}

/**
 * Writes a route's parent statuses; false when another writer (another Gateway's reconcile) wrote
 * the route meanwhile (409): its event queues this Gateway again.
 */
async function routeParentsWritten(
  deps: GatewayDeps,
  route: HttpRouteObject,
  parents: StoredParentStatus[],
): Promise<boolean> {
  try {
    await deps.writer.patchRouteParents(route, parents);
    return true;
  } catch (err) {
    if (statusOf(err) === 409) return false;
    throw err;
  }
}

/**
 * Deletes the APIs of a Gateway that is gone from us (deleted, or no longer of our class) and our
 * parent statuses for it on its routes (nothing serves them there any more), then lets it go.
 */
async function release(gw: GatewayObject, deps: GatewayDeps): Promise<WorkResult> {
  for (const api of deps.generated(gw)) {
    if (!api.metadata.deletionTimestamp) await deps.apis.delete(api.metadata.namespace, api.metadata.name);
  }
  let conflict = false;
  for (const route of deps.routes(`${gw.metadata.namespace}/${gw.metadata.name}`)) {
    const old = route.status?.parents ?? [];
    const kept = old.filter((p) => !ourParent(p, gw, route.metadata.namespace));
    if (kept.length === old.length) continue;
    if (!(await routeParentsWritten(deps, route, kept))) conflict = true;
  }
  if (conflict) return { requeueAfterMs: 250 };
  // Its own Service and EndpointSlices (per-Gateway addresses): the ownerReference would have
  // the garbage collector delete them too; deleted here, the gateway ports are free at once.
  await deps.ownAddress?.release(gw);
  await deps.writer.removeFinalizer(gw);
  return {};
}

/**
 * One Gateway: its ApiDefinitions made to match its listeners and routes, then its status and
 * its routes' parent statuses. A Gateway of another controller's class is left alone.
 */
export async function reconcileGateway(key: string, deps: GatewayDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const gw = deps.read(namespace, name);
  if (!gw) return {};
  const log = deps.log.child({ kind: 'Gateway', object: key });
  const cls = deps.gatewayClass(gw.spec.gatewayClassName);
  const ours = cls?.spec.controllerName === GATEWAY_CONTROLLER;
  if (gw.metadata.deletionTimestamp || !ours) {
    if (!gw.metadata.finalizers?.includes(GATEWAY_FINALIZER)) return {};
    return release(gw, deps);
  }
  const routes = deps.routes(key);

  let current = gw;
  if (!gw.metadata.finalizers?.includes(GATEWAY_FINALIZER)) {
    try {
      current = await deps.writer.addFinalizer(gw);
    } catch (err) {
      if (statusOf(err) === 409) return { requeueAfterMs: 250 };
      throw err;
    }
  }
  // Per-Gateway addresses: its Service first (owned by it, hence after the finalizer), whose
  // gateway ports its APIs listen on.
  const own = deps.ownAddress === undefined ? undefined : await deps.ownAddress.ensure(current);
  const t = translateGateway(
    gw,
    routes,
    own === undefined ? deps.context() : { ...deps.context(), ownPorts: own.ports },
  );

  const writeErrors: string[] = [];
  const wanted = await writeGeneratedApis(
    current,
    t.apis.map((api) => gatewayApiObject(current, api)),
    deps,
    {
      upToDate,
      log,
      failed: (apiName, err) => {
        const status = statusOf(err);
        if (status === undefined || status >= 500 || status === 409 || status === 429) throw err;
        writeErrors.push(
          `ApiDefinition ${namespace}/${apiName}: ${err instanceof Error ? err.message : String(err)}`,
        );
      },
    },
  );

  // Programmed: every generated API is served at its revision by every gateway.
  const generated = deps.generated(current).filter((a) => wanted.has(a.metadata.name));
  // A generated API the gateway refused (Ready=False GatewayRejected at its generation, a port it
  // cannot open, say) is not coming: Invalid with the gateway's reason, not Pending forever.
  const pending: GeneratedApi[] = [];
  const refused = new Map<string, { port: number | undefined; message: string }>();
  for (const a of t.apis) {
    const stored = generated.find((g) => g.metadata.name === a.name);
    if (stored === undefined || !upToDate(stored, gatewayApiObject(current, a))) {
      pending.push(a);
      continue;
    }
    if (!programmed(stored)) pending.push(a);
    const ready = stored.status?.conditions?.find((x) => x.type === 'Ready');
    if (
      ready?.status === 'False' &&
      ready.reason === 'GatewayRejected' &&
      ready.observedGeneration === stored.metadata.generation
    ) {
      refused.set(a.name, { port: a.spec.listen_port, message: ready.message });
    }
  }
  const refusals = [...refused].map(([name, r]) => `ApiDefinition ${namespace}/${name}: ${r.message}`);
  const served = writeErrors.length === 0 && pending.length === 0;
  /** A listener port left without a gateway port of its own (per-Gateway addresses). */
  const fullMessage = (port: number): string =>
    `no gateway port is left for listener port ${String(port)}: every port of the operator's SVC_GATEWAY_API_PORT_RANGE is allocated`;
  const addressProblem =
    own === undefined
      ? undefined
      : (own.problem ??
        (own.addresses.length === 0
          ? `Service ${namespace}/${addressServiceName(name)} has no ClusterIP yet`
          : own.full.length > 0
            ? own.full.map(fullMessage).join('; ')
            : undefined));
  const programmedCondition: Condition =
    addressProblem !== undefined
      ? { type: 'Programmed', status: 'False', reason: 'AddressNotAssigned', message: addressProblem }
      : writeErrors.length > 0 || refusals.length > 0
        ? {
            type: 'Programmed',
            status: 'False',
            reason: 'Invalid',
            message: [...writeErrors, ...refusals].join('; '),
          }
        : served
          ? {
              type: 'Programmed',
              status: 'True',
              reason: 'Programmed',
              message: `${t.apis.length} APIs served by every gateway`,
            }
          : {
              type: 'Programmed',
              status: 'False',
              reason: 'Pending',
              message: `${pending.length} of ${t.apis.length} APIs not yet served by every gateway: ${pending
                .slice(0, 3)
                .map((a) => a.name)
                .join(', ')}${pending.length > 3 ? ', ...' : ''}`,
            };
  const now = deps.now();
  const generation = current.metadata.generation;
  const accepted = t.conditions[0]?.status === 'True';
  const status: NonNullable<GatewayObject['status']> = {
    conditions: stamp(
      [
        ...t.conditions,
        accepted
          ? programmedCondition
          : {
              ...programmedCondition,
              status: 'False',
              reason: 'Invalid',
              message: 'the Gateway is not accepted',
            },
      ],
      current.status?.conditions,
      generation,
      now,
    ),
    listeners: t.listeners.map((l) => {
      const usable = l.conditions.every((c) =>
        c.type === 'Conflicted' ? c.status === 'False' : c.status === 'True',
      );
      const port = current.spec.listeners.find((x) => x.name === l.name)?.port;
      // Where its APIs listen: its gateway port (per-Gateway addresses), else its own.
      const listenPort = port === undefined ? undefined : (own?.ports[port] ?? port);
      const refusedHere = [...refused].filter(([, r]) => r.port !== undefined && r.port === listenPort);
      const lp: Condition = !usable
        ? { type: 'Programmed', status: 'False', reason: 'Invalid', message: 'the listener is not served' }
        : port !== undefined && own?.full.includes(port) === true
          ? { type: 'Programmed', status: 'False', reason: 'Invalid', message: fullMessage(port) }
          : refusedHere.length > 0
            ? {
                type: 'Programmed',
                status: 'False',
                reason: 'Invalid',
                message: refusedHere.map(([, r]) => r.message).join('; '),
              }
            : { ...programmedCondition };
      return {
        ...l,
        conditions: stamp(
          [...l.conditions, lp],
          current.status?.listeners?.find((o) => o.name === l.name)?.conditions,
          generation,
          now,
        ),
      };
    }),
    addresses: own === undefined ? deps.addresses() : own.addresses,
  };
  const sameStatus =
    sameConditions(current.status?.conditions, status.conditions ?? []) &&
    isDeepStrictEqual(current.status?.addresses ?? [], status.addresses) &&
    isDeepStrictEqual(
      (current.status?.listeners ?? []).map((l) => ({
        ...l,
        conditions: l.conditions.map(({ lastTransitionTime: _t, ...c }) => c),
      })),
      (status.listeners ?? []).map((l) => ({
        ...l,
        conditions: l.conditions.map(({ lastTransitionTime: _t, ...c }) => c),
      })),
    );
  if (!sameStatus) await deps.writer.patchStatus(current, status);

  // Each route's parents naming this Gateway: ours replaced, the others' kept.
  let conflict = false;
  for (const route of routes) {
    const rkey = `${route.metadata.namespace}/${route.metadata.name}`;
    const mine = t.routes[rkey] ?? [];
    const old = route.status?.parents ?? [];
    const kept = old.filter((p) => !ourParent(p, current, route.metadata.namespace));
    const parents: StoredParentStatus[] = [
      ...kept,
      ...mine.map((p) => ({
        parentRef: p.parentRef,
        controllerName: GATEWAY_CONTROLLER,
        conditions: stamp(
          p.conditions,
          old.find(
            (o) =>
              ourParent(o, current, route.metadata.namespace) && isDeepStrictEqual(o.parentRef, p.parentRef),
          )?.conditions,
          route.metadata.generation,
          now,
        ),
      })),
    ];
    const strip = (list: readonly StoredParentStatus[]) =>
      list.map((p) => ({ ...p, conditions: p.conditions.map(({ lastTransitionTime: _t, ...c }) => c) }));
    if (isDeepStrictEqual(strip(old), strip(parents))) continue;
    if (!(await routeParentsWritten(deps, route, parents))) conflict = true;
  }
  if (conflict) return { requeueAfterMs: 250 };
  if (!served && writeErrors.length === 0) return { requeueAfterMs: PENDING_RECHECK_MS };
  // A refused write (a route another API claims) is tried again when an API frees its route
  // (gateway-api/retry.ts); this recheck also covers a claim the operator does not watch.
  if (writeErrors.length > 0) return { requeueAfterMs: REFUSED_RECHECK_MS };
  return {};
}
