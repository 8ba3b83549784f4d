import type * as k8s from '@kubernetes/client-node';
import type { ApiDefinition, ApiStatus, SecurityPolicySpec } from '../../schemas/generated/kinds.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { SvcObjects, type SvcObject } from '../../lib/k8s/objects.ts';
import { objectKey, splitKey, type InformerEvent } from '../../lib/k8s/informer.ts';
import { derivedId } from '../ids.ts';
import type { Connections } from '../connections.ts';
import { accessRefs, jwtPolicyRefs, refKey, sameRef, sortedRefs, type ObjectRef } from '../references.ts';
import { translateApiDefinition } from '../translate/api-definition.ts';
import { contextKeyOf, viewChanged, watchOf, type ControllerEnv } from './env.ts';
import { callGateway, reportFailure, reportSuccess, type Fail, type ReportDeps } from './status.ts';
import { finalizeInGateway, pushDocument } from './sync.ts';

/** The finalizer that keeps an ApiDefinition until its API is gone from the gateway. */
export const API_FINALIZER = 'finalizers.svc.svc.io/apidefinition';

/** An ApiDefinition with the metadata every stored object has. */
export type ApiObject = ApiDefinition & SvcObject<ApiDefinition['spec'], ApiStatus>;

/** A SecurityPolicy, as much of it as the API controller reads. */
export interface PolicyView extends k8s.KubernetesObject {
  spec?: Pick<SecurityPolicySpec, 'id' | 'access_rights_array'>;
}

/** What the reconciler needs; tests pass their own. */
export interface ApiDefinitionDeps extends ReportDeps<ApiObject> {
  /** Reads the object; the informer cache in production (a write that raced it gets a 409 and a retry). */
  read: (namespace: string, name: string) => Promise<ApiObject | undefined>;
  objects: Pick<SvcObjects<ApiObject>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  connections: Pick<Connections, 'resolve'>;
  /** Every SecurityPolicy: those that cover the API, or that it names, are linked to it. */
  policies: () => readonly PolicyView[];
  log: Logger;
}

const refOf = (o: k8s.KubernetesObject): ObjectRef => ({
  name: o.metadata?.name ?? '',
  namespace: o.metadata?.namespace ?? '',
});

/**
 * The policies linked to an API: those whose access rights cover it (they hold it: deleting it
 * would leave their keys without it), and those it names in `jwt_default_policies`.
 */
function policyLinks(
  api: ApiObject,
  policies: readonly PolicyView[],
): { covering: PolicyView[]; named: PolicyView[] } {
  const self = refOf(api);
  const jwt = jwtPolicyRefs(api);
  return {
    covering: policies.filter((p) =>
      accessRefs(p).some((r) => r.kind === 'ApiDefinition' && sameRef(r, self)),
    ),
    named: policies.filter((p) => jwt.some((r) => sameRef(r, refOf(p)))),
  };
}

/**
 * Makes the gateway hold the API an ApiDefinition describes: CREATE when absent, UPDATE when
 * the translation's hash differs from the last push or the gateway's copy differs from what it
 * held after that push (drift), DELETE through the finalizer, which waits while SecurityPolicies
 * still cover the API (`InUse`). Writes status once, at the end, only when it changed.
 */
export async function reconcileApiDefinition(key: string, deps: ApiDefinitionDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const apiId = obj.spec.api_id ?? derivedId(namespace, name);
  const log = deps.log.child({ kind: 'ApiDefinition', key, apiId });
  const policies = deps.policies();
  const links = policyLinks(obj, policies);
  const linked = sortedRefs([...links.covering, ...links.named].map(refOf));
  const resolved = await deps.connections.resolve(obj.spec.contextRef, namespace);

  if (obj.metadata.deletionTimestamp) {
    if (!obj.metadata.finalizers?.includes(API_FINALIZER)) return {};
    // Policies being deleted don't hold the API: both can go.
    const holding = links.covering.filter((p) => p.metadata?.deletionTimestamp === undefined);
    if (holding.length > 0) {
      const list = holding.map((p) => `SecurityPolicy ${refKey(refOf(p))}`).join(', ');
      const message = `still used by ${list}: remove it from the access_rights_array of these policies (or delete them) first`;
      const status = { ...obj.status, linked_by_policies: linked };
      await reportFailure(obj, status, { reason: 'InUse', message, call: false }, deps);
      // A policy that stops covering the API queues it again (the SecurityPolicy watch).
      return {};
    }
    return finalizeInGateway(
      obj,
      {
        finalizer: API_FINALIZER,
        what: `API ${apiId}`,
        resolved,
        remove: async (client) => {
          const removed = await client.deleteApi(apiId);
          if (removed) await client.reload();
          return removed;
        },
      },
      deps,
      log,
    );
  }
  const current = await deps.objects.ensureFinalizer(obj, API_FINALIZER);
  const old = current.status ?? {};
  const status: ApiStatus = {
    ...old,
    api_id: apiId,
    listen_path: current.spec.proxy.listen_path,
    observedGeneration: current.metadata.generation,
  };
  if (linked.length > 0) status.linked_by_policies = linked;
  else delete status.linked_by_policies;
  const fail: Fail = (reason, message, call) =>
    reportFailure(current, status, { reason, message, call }, deps);

  if (!resolved.ok) {
    await fail(resolved.reason, resolved.message, false);
    // A missing context is queued again when it appears; a broken one may be fixed in its Secret.
    return resolved.reason === 'ContextNotFound' ? {} : { requeueAfterMs: 60_000 };
  }

  const desired = translateApiDefinition(current, {
    apiId,
    orgId: resolved.conn.org,
    // A policy that does not exist yet gets the ID it will be derived to; its watch queues the API.
    policyId: (ref) =>
      policies.find((p) => sameRef(refOf(p), ref))?.spec?.id ?? derivedId(ref.namespace, ref.name),
  });
  const client = resolved.client;
  const pushed = await callGateway(
    () =>
      pushDocument(
        {
          get: () => client.getApi(apiId),
          create: (def) => client.createApi(def),
          update: (def) => client.updateApi(apiId, def),
        },
        desired,
        old,
        () => client.reload(),
      ),
    fail,
  );
  if (!pushed) return {};
  const { action, hashes } = pushed.value;
  Object.assign(status, hashes);
  if (action) log.info(action === 'Created' ? 'api created' : 'api updated', { gateway: client.url });
  const message = `API ${apiId} is served by ${client.url}`;
  await reportSuccess(
    current,
    status,
    { reason: 'Synced', message, action, what: `API ${apiId}`, where: client.url },
    deps,
  );
  return {};
}

/** What of a policy its APIs depend on: its ID, the APIs it covers, whether it is going. */
const policyLinkView = (p: PolicyView): unknown => ({
  id: p.spec?.id,
  refs: accessRefs(p),
  deleting: p.metadata?.deletionTimestamp !== undefined,
});

/**
 * The ApiDefinition controller: APIs are reconciled when they change, when their OperatorContext
 * changes, and when a SecurityPolicy that covers them or that they name changes (its ID, its
 * access rights, its deletion).
 */
export function apiDefinitionController(env: ControllerEnv): ControllerSpec {
  const apiSpec = watchOf(env, 'ApiDefinition');
  const policySpec = watchOf(env, 'SecurityPolicy');
  const apis = env.manager.informer<ApiObject>(apiSpec);
  const policies = env.manager.informer<PolicyView>(policySpec);
  const objects = new SvcObjects<ApiObject>(env.kc, apiSpec.plural);

  /** Keys of the APIs linked to a policy. */
  const apisOf = (p: PolicyView | undefined): string[] => {
    if (!p) return [];
    const self = refOf(p);
    return [
      ...accessRefs(p)
        .filter((r) => r.kind === 'ApiDefinition')
        .map(refKey),
      ...apis
        .list()
        .filter((api) => jwtPolicyRefs(api).some((r) => sameRef(r, self)))
        .map((api) => objectKey(api)),
    ];
  };

  return {
    name: 'apidefinition',
    watch: apiSpec,
    workers: 32,
    reconcile: (key) =>
      reconcileApiDefinition(key, {
        read: (namespace, name) => Promise.resolve(apis.get(namespace, name)),
        objects,
        connections: env.connections,
        events: env.events,
        policies: () => policies.list(),
        now: env.now,
        log: env.log,
      }),
    watches: [
      {
        // A context that appears or changes queues the APIs that use it.
        watch: watchOf(env, 'OperatorContext'),
        map: (ctx: k8s.KubernetesObject) =>
          apis
            .list()
            .filter((api) => contextKeyOf(api)[0] === objectKey(ctx))
            .map((api) => objectKey(api)),
      },
      {
        watch: policySpec,
        map: (p: PolicyView, old: PolicyView | undefined, event: InformerEvent) =>
          viewChanged(event, p, old, policyLinkView) ? [...new Set([...apisOf(p), ...apisOf(old)])] : [],
      },
    ],
  };
}
