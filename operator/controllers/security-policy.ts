import type * as k8s from '@kubernetes/client-node';
import type {
  ApiResourceRef,
  NamespacedRef,
  SecurityPolicy,
  SecurityPolicyStatus,
} from '../../schemas/generated/kinds.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { SvcObjects, type SvcObject } from '../../lib/k8s/objects.ts';
import { objectKey, splitKey } from '../../lib/k8s/informer.ts';
import type { ManagementClient } from '../clients/management.ts';
import type { GatewayPolicy } from '../../schemas/generated/models.ts';
import type { Connections } from '../connections.ts';
import { derivedId } from '../ids.ts';
import {
  accessRef,
  accessRefs,
  apiRefText,
  apiRights,
  jwtPolicyRefs,
  refKey,
  routeRightKeys,
  sortedRefs,
  type ObjectRef,
} from '../references.ts';
import {
  byRouteRight,
  byServedRoute,
  expandRouteRights,
  servedRoutes,
  unservedMessage,
} from './route-rights.ts';
import { translateSecurityPolicy } from '../translate/security-policy.ts';
import {
  apiInformers,
  apiKindWatches,
  contextWatch,
  watchOf,
  type ApiKind,
  type ControllerEnv,
} from './env.ts';
import { byAccessRight, byContext, byJwtPolicy } from './indexes.ts';
import { resolveApis } from './api-refs.ts';
import {
  callGateway,
  reportFailure,
  reportSuccess,
  reportUnresolved,
  type Fail,
  type ReportDeps,
} from './status.ts';
import { finalizeInGateway, leaveFormerGateway, pushDocument, pushedTo, PushMemory } from './sync.ts';
import { reportProgrammed } from './programmed.ts';
import type { Convergence } from './convergence.ts';
import { POLICY_FINALIZER } from '../../schemas/finalizers.ts';
import { effectiveContextRef } from '../../schemas/rules/earlier-names.ts';

/** The finalizer names live in schemas/, which the webhook reads too. */
export { POLICY_FINALIZER };

/** A SecurityPolicy with the metadata every stored object has. */
export type PolicyObject = SecurityPolicy & SvcObject<SecurityPolicy['spec'], SecurityPolicyStatus>;

/** An API resource of any kind, as much of it as the policy controller reads. */
export interface ApiView extends k8s.KubernetesObject {
  spec?: { jwt_default_policies?: (string | NamespacedRef)[] };
  /** `api_id` is written by the API's controller once it has pushed the API. */
  status?: { api_id?: string };
}

/** What the reconciler needs; tests pass their own. */
export interface SecurityPolicyDeps extends ReportDeps<PolicyObject> {
  /** Reads the policy; the informer cache in production. */
  read: (namespace: string, name: string) => Promise<PolicyObject | undefined>;
  objects: Pick<SvcObjects<PolicyObject>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  connections: Pick<Connections, 'resolve'>;
  /** The API resource a reference names, or undefined when it does not exist. */
  api: (ref: ApiResourceRef) => ApiView | undefined;
  /**
   * The ApiDefinitions that may name the policy in `jwt_default_policies` (they use it; a
   * superset will do): the informer's index in production.
   */
  apiDefinitions: (policy: ObjectRef) => readonly ApiView[];
  /**
   * The generated ApiDefinitions serving an HTTPRoute (`namespace/name`) an access right names
   * (route-rights.ts); without it, no route is served.
   */
  routeApis?: (route: string) => readonly ApiView[];
  /** The pushes this process made, by object (sync.ts); without it, the status alone says. */
  pushes?: PushMemory;
  /** `svc_config_convergence_seconds` (convergence.ts); one per operator in production. */
  convergence?: Convergence | undefined;
  log: Logger;
}

const nameOf = (o: k8s.KubernetesObject): string => o.metadata?.name ?? '';
const namespaceOf = (o: k8s.KubernetesObject): string => o.metadata?.namespace ?? '';

/**
 * Makes the gateway hold the policy a SecurityPolicy describes. The API of each access right is
 * resolved to the `api_id` in its status (missing: `ApiNotFound`; no ID yet: `ApiNotReady`; the
 * API's watch queues the policy again). State `active` and `draft` are pushed (CREATE, UPDATE on
 * a new translation or drift), `deny` deletes it from the gateway. When `contextRef` moves the
 * policy to another gateway, it is deleted from the one in `status.pushedTo`. The finalizer
 * deletes it, unless an ApiDefinition still names it in `jwt_default_policies` (`InUse`). A
 * published policy is `Ready` and `Programmed` once every gateway applies the revision pushed
 * (programmed.ts), `Pending` naming the others until then.
 */
export async function reconcileSecurityPolicy(key: string, deps: SecurityPolicyDeps): Promise<WorkResult> {
  const since = deps.now();
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const polId = obj.spec.id ?? derivedId(namespace, name);
  const log = deps.log.child({ kind: 'SecurityPolicy', object: key, polId });
  const users = deps
    .apiDefinitions({ namespace, name })
    .filter((api) => jwtPolicyRefs(api).some((r) => r.namespace === namespace && r.name === name));

  if (obj.metadata.deletionTimestamp) return finalize(obj, polId, users, deps, log);
  const current = await deps.objects.ensureFinalizer(obj, POLICY_FINALIZER);
  const old = current.status ?? {};
  const refs = accessRefs(current, namespace);
  const status: SecurityPolicyStatus = {
    ...old,
    pol_id: polId,
    linked_apis: sortedRefs([
      ...refs,
      ...users.map((u) => ({ kind: 'ApiDefinition' as const, name: nameOf(u), namespace: namespaceOf(u) })),
    ]),
    observedGeneration: current.metadata.generation,
  };
  const fail: Fail = (reason, message, call) =>
    reportFailure(current, status, { reason, message, call }, deps);

  const texts = [
    ...refs.map(apiRefText),
    ...routeRightKeys(current.spec.access_rights_array, namespace).map((r) => `HTTPRoute ${r}`),
  ];
  const repeated = texts.find((t, i) => texts.indexOf(t) !== i);
  if (repeated !== undefined) {
    await fail('SpecInvalid', `access_rights_array lists ${repeated} twice: merge the two entries`, false);
    return {};
  }
  const resolved = await deps.connections.resolve(effectiveContextRef(current.spec), namespace);
  if (!resolved.ok) return reportUnresolved(resolved, fail);
  const client = resolved.client;
  const here = pushedTo(client, effectiveContextRef(current.spec), namespace);

  const denied = current.spec.state === 'deny';
  const ids = new Map<string, string>();
  // HTTPRoute entries: the same rights on each ApiDefinition generated to serve the route.
  let rights = current.spec.access_rights_array;
  if (!denied) {
    const expanded = expandRouteRights(rights, namespace, deps.routeApis ?? (() => []));
    if (expanded.missing) {
      await fail(
        'ApiNotFound',
        unservedMessage(expanded.missing, 'access_rights_array', 'the policy is pushed'),
        false,
      );
      return {};
    }
    rights = expanded.rights;
    const apiRefs = apiRights(rights).map((r) => accessRef(r, namespace));
    status.linked_apis = sortedRefs([...apiRefs, ...(status.linked_apis ?? [])]);
    const unresolved = resolveApis(apiRefs, deps.api, ids, {
      field: 'access_rights_array',
      then: 'the policy is pushed',
    });
    if (unresolved) {
      await fail(unresolved.reason, unresolved.message, false);
      return {};
    }
  }

  const done = await callGateway(async (): Promise<'Created' | 'Updated' | 'Deleted' | undefined> => {
    if (denied) return (await client.deletePolicy(polId)) ? 'Deleted' : undefined;
    const desired = translateSecurityPolicy(
      {
        ...current,
        spec: { ...current.spec, ...(rights === undefined ? {} : { access_rights_array: rights }) },
      },
      {
        polId,
        orgId: resolved.conn.org,
        apiId: (ref) => ids.get(apiRefText(ref)) ?? '',
      },
    );
    const updateIfExists = client.updatePolicyIfExists?.bind(client);
    const pushed = await pushDocument<GatewayPolicy>(
      {
        get: () => client.getPolicy(polId),
        create: (p) => client.createPolicy(p),
        update: (p) => client.updatePolicy(polId, p),
        ...(updateIfExists === undefined ? {} : { updateIfExists: (p) => updateIfExists(polId, p) }),
      },
      desired,
      old,
      undefined,
      deps.pushes && { pushes: deps.pushes, uid: current.metadata.uid, id: polId },
    );
    Object.assign(status, pushed.hashes);
    return pushed.action;
  }, fail);
  if (!done) return {};
  const action = done.value;
  // Until the former gateway no longer holds the policy, the status keeps pointing at it.
  await leaveFormerGateway(
    current,
    { before: old.pushedTo, here, what: `policy ${polId}`, remove: (c) => c.deletePolicy(polId) },
    deps,
    fail,
  );
  if (denied) {
    delete status.pushedTo;
    delete status.latestCRDSpecHash;
    delete status.latestSvcSpecHash;
  } else {
    status.pushedTo = here;
  }
  if (action) log.info(`policy ${action.toLowerCase()}`, { gateway: client.url });
  if (denied) {
    delete status.gateways;
    const message = `policy ${polId} is not published (state deny): ${action ? 'deleted from' : 'absent from'} ${client.url}; its keys are refused`;
    await reportSuccess(
      current,
      status,
      { reason: 'Denied', message, action, what: `policy ${polId}`, where: client.url },
      deps,
    );
    return {};
  }
  const draft = current.spec.state === 'draft' ? ' (state draft: its keys are disabled)' : '';
  return reportProgrammed(
    current,
    status,
    {
      of: { kind: 'policies', id: polId },
      what: `policy ${polId}`,
      client,
      synced: { message: `policy ${polId} is held by ${client.url}${draft}` },
      action: action === 'Deleted' ? undefined : action,
      since,
      kind: 'SecurityPolicy',
    },
    { ...deps, log },
  );
}

async function finalize(
  obj: PolicyObject,
  polId: string,
  users: readonly ApiView[],
  deps: SecurityPolicyDeps,
  log: Logger,
): Promise<WorkResult> {
  if (!obj.metadata.finalizers?.includes(POLICY_FINALIZER)) return {};
  // APIs being deleted don't hold the policy: both can go (and neither waits for the other).
  const holding = users.filter((u) => !u.metadata?.deletionTimestamp);
  if (holding.length > 0) {
    const list = holding.map((u) => `ApiDefinition ${namespaceOf(u)}/${nameOf(u)}`).join(', ');
    const message = `still used by ${list} (jwt_default_policies): remove it from there, or delete those APIs, first`;
    await reportFailure(obj, { ...obj.status }, { reason: 'InUse', message, call: false }, deps);
    // An API that stops naming the policy queues it again (the ApiDefinition watch).
    return {};
  }
  // The policy is where it was last pushed; without a record, where the spec says.
  const where = obj.status?.pushedTo ? obj.status.pushedTo.contextRef : effectiveContextRef(obj.spec);
  return finalizeInGateway(
    obj,
    {
      finalizer: POLICY_FINALIZER,
      what: `policy ${polId}`,
      resolved: await deps.connections.resolve(where, obj.metadata.namespace),
      remove: (client: ManagementClient) => client.deletePolicy(polId),
    },
    deps,
    log,
  );
}

/** What of an API the policies depend on: its ID, whether it is going, the policies it names. */
const apiLinkView = (api: ApiView): unknown => ({
  apiId: api.status?.api_id,
  deleting: api.metadata?.deletionTimestamp !== undefined,
  jwt: api.spec?.jwt_default_policies,
  routes: servedRoutes(api),
});

/**
 * The SecurityPolicy controller: policies are reconciled when they change, when an API they name
 * (or that names them) appears, goes, or gets its ID, and when their OperatorContext changes.
 */
export function securityPolicyController(env: ControllerEnv): ControllerSpec {
  const policySpec = watchOf(env, 'SecurityPolicy');
  const policies = env.manager.informer<PolicyObject>(policySpec);
  const apis = apiInformers<ApiView>(env);
  const objects = new SvcObjects<PolicyObject>(env.kc, policySpec.plural);
  const policiesCovering = byAccessRight(policies);
  const policiesOfContext = byContext(policies);
  const apisNaming = byJwtPolicy(apis.ApiDefinition);
  const apisServing = byServedRoute(apis.ApiDefinition);
  const policiesNamingRoute = byRouteRight(policies, (p) =>
    routeRightKeys(p.spec.access_rights_array, namespaceOf(p)),
  );
  const pushes = new PushMemory();

  /** Keys of the policies an API of `kind` is linked to. */
  const policiesOf = (kind: ApiKind, api: ApiView | undefined): string[] => {
    if (!api) return [];
    const covering = policiesCovering({ kind, namespace: namespaceOf(api), name: nameOf(api) }).map((p) =>
      objectKey(p),
    );
    if (kind !== 'ApiDefinition') return covering;
    // A generated API serving a route: the policies naming the route (route-rights.ts).
    const viaRoutes = servedRoutes(api).flatMap((r) => policiesNamingRoute(r).map((p) => objectKey(p)));
    return [...covering, ...jwtPolicyRefs(api).map(refKey), ...viaRoutes];
  };

  return {
    name: 'securitypolicy',
    watch: policySpec,
    workers: 64,
    reconcile: (key) =>
      reconcileSecurityPolicy(key, {
        read: (namespace, name) => Promise.resolve(policies.get(namespace, name)),
        objects,
        connections: env.connections,
        events: env.events,
        api: (ref) => apis[ref.kind].get(ref.namespace, ref.name),
        apiDefinitions: (policy) => apisNaming(policy),
        routeApis: (route) => apisServing(route),
        pushes,
        convergence: env.convergence,
        now: env.now,
        log: env.log,
      }),
    watches: [
      ...apiKindWatches(env, apiLinkView, policiesOf),
      // A context that appears or changes queues the policies that use it.
      contextWatch(env, policiesOfContext),
    ],
  };
}
