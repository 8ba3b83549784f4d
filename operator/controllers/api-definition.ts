import type * as k8s from '@kubernetes/client-node';
import type { ApiStatus } from '../../schemas/generated/kinds.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { SvcObjects } from '../../lib/k8s/objects.ts';
import { objectKey, splitKey, type InformerEvent } from '../../lib/k8s/informer.ts';
import { derivedId } from '../ids.ts';
import type { ManagementClient } from '../clients/management.ts';
import {
  accessRefs,
  jwtPolicyRefs,
  refKey,
  refOf,
  sameRef,
  sortedRefs,
  type ObjectRef,
} from '../references.ts';
import { internalRefsOf, translateApiDefinition } from '../translate/api-definition.ts';
import { certificateSecretRefs } from '../../schemas/rules/secret-refs.ts';
import { secretWatch, viewChanged, watchOf, type ControllerEnv } from './env.ts';
import {
  readCertificateSecrets,
  certificateHolders,
  retireCertificates,
  uploadCertificates,
} from './certificate-secrets.ts';
import {
  otherNamespaceSecretOf,
  secretGrantReads,
  type SecretGrantReads,
} from './gateway-api/secret-grant.ts';
import {
  byAccessRight,
  byGraphRef,
  byInternalTarget,
  byJwtPolicy,
  bySubgraphRef,
  bySubgraphApiRef,
} from './indexes.ts';
import { resolveGraph, type GraphLookups } from './graph-refs.ts';
import { graphRefOf } from '../../schemas/rules/graphs.ts';
import { callGateway, reportFailure, reportUnresolved, type Fail } from './status.ts';
import { leaveFormerGateway, pushDocument, pushedTo, PushMemory } from './sync.ts';
import { isTemplate } from './template.ts';
import { reportApiSynced } from './served.ts';
import { apiLeaves, sharedApiWatches, type ApiReconcileDeps } from './api-reconcile.ts';
import type { ApiObject, PolicyView, SubGraphObject, SuperGraphObject } from './objects.ts';
import { API_FINALIZER } from '../../schemas/finalizers.ts';
import { effectiveContextRef } from '../../schemas/rules/earlier-names.ts';

/** The finalizer names live in schemas/, which the webhook reads too. */
export { API_FINALIZER };

export type { ApiObject, PolicyView } from './objects.ts';

/** What the reconciler needs; tests pass their own. */
export type ApiDefinitionDeps = ApiReconcileDeps<ApiObject> & {
  /** The SubGraphs, SuperGraphs and subgraph APIs `graphql.graph_ref` resolves through; none without. */
  graphs?: GraphLookups;
  /**
   * The Gateway and ReferenceGrants that let an API generated for a Gateway serve a Secret of
   * another namespace (gateway-api/secret-grant.ts); without them, no API may.
   */
  secretGrants?: SecretGrantReads;
};

const noGraphs: GraphLookups = {
  subGraph: () => undefined,
  superGraph: () => undefined,
  subgraphApis: () => [],
};

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
  const since = deps.now();
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  // A template is never pushed: Ingresses build their APIs from it (template.ts). One that holds
  // this controller's finalizer was served before it became a template (or got the finalizer
  // while the webhooks were off): its API leaves the gateway and the finalizer goes, below, as
  // on a delete; nothing else would ever remove it. Its own finalizer (template.ts) keeps it
  // while Ingresses use it.
  const template = isTemplate(obj);
  if (template && !obj.metadata.finalizers?.includes(API_FINALIZER)) return {};
  const apiId = obj.spec.api_id ?? derivedId(namespace, name);
  const log = deps.log.child({ kind: 'ApiDefinition', object: key, apiId });
  const policies = deps.policies(obj);
  const links = policyLinks(obj, policies);
  const linked = sortedRefs([...links.covering, ...links.named].map(refOf));
  const resolved = await deps.connections.resolve(effectiveContextRef(obj.spec), namespace);

  if (obj.metadata.deletionTimestamp || template) {
    if (!obj.metadata.finalizers?.includes(API_FINALIZER)) return {};
    return apiLeaves(
      obj,
      {
        finalizer: API_FINALIZER,
        namespace,
        apiId,
        template,
        covering: links.covering,
        linked,
        resolved,
        remove: (client, id) => client.deleteApi(id),
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

  if (!resolved.ok) return reportUnresolved(resolved, fail);

  // Internal targets: each ApiDefinition named must exist; its api_id (explicit, else derived)
  // becomes the `svc://` target. A missing one queues this API again when it appears (the
  // ApiDefinition watch of the controller).
  const internalIds = new Map<string, string>();
  for (const { path, ref } of internalRefsOf(current.spec, namespace)) {
    const target = ref === undefined ? undefined : await deps.read(ref.namespace, ref.name);
    if (ref === undefined || target === undefined) {
      const what =
        ref === undefined
          ? 'names no ApiDefinition'
          : `ApiDefinition ${ref.namespace}/${ref.name} does not exist`;
      await fail('ApiNotFound', `${path}: ${what}: create it, or name an existing ApiDefinition`, false);
      return {};
    }
    internalIds.set(`${ref.namespace}/${ref.name}`, target.spec.api_id ?? derivedId(ref.namespace, ref.name));
  }

  // graph_ref: the SubGraph's SDL, or the SuperGraph's composition and its subgraph APIs. Missing,
  // the API waits; the SubGraph, SuperGraph and ApiDefinition watches queue it again.
  const graph = resolveGraph(current, deps.graphs ?? noGraphs);
  if (graph !== undefined && !('graph' in graph)) {
    await fail(graph.reason, graph.message, false);
    return {};
  }

  // Certificates named by Secret (schemas/rules/secret-refs.ts): served, allowed from clients and
  // presented upstream, each read into an upload, its ID known before the upload; pinned, read
  // into a public-key pin (nothing uploaded).
  const certs = await readCertificateSecrets(
    certificateSecretRefs(current.spec),
    namespace,
    resolved.conn.org,
    deps.secret,
    fail,
    deps.secretGrants && otherNamespaceSecretOf(current, deps.secretGrants),
  );
  if (!certs) return {}; // The Secret's watch queues the API when it appears or changes.

  const desired = translateApiDefinition(current, {
    apiId,
    orgId: resolved.conn.org,
    certificateId: (secretName) => certs.uploads.get(secretName)?.id ?? '',
    publicKeyPin: (secretName) => certs.pins.get(secretName) ?? '',
    internalApiId: (ref) =>
      internalIds.get(`${ref.namespace}/${ref.name}`) ?? derivedId(ref.namespace, ref.name),
    ...(graph === undefined ? {} : { graph: graph.graph }),
    // A policy that does not exist yet gets the ID it will be derived to; its watch queues the API.
    policyId: (ref) =>
      policies.find((p) => sameRef(refOf(p), ref))?.spec?.id ?? derivedId(ref.namespace, ref.name),
  });
  const client = resolved.client;
  const updateIfExists = client.updateApiIfExists?.bind(client);
  if (!(await uploadCertificates(client, certs, resolved.conn.org, fail, log))) return {};
  const pushed = await callGateway(
    () =>
      pushDocument<GatewayApiDefinition>(
        {
          get: () => client.getApi(apiId),
          create: (def) => client.createApi(def),
          update: (def) => client.updateApi(apiId, def),
          ...(updateIfExists === undefined ? {} : { updateIfExists: (def) => updateIfExists(apiId, def) }),
        },
        desired,
        old,
        () => client.reload(),
        deps.pushes && { pushes: deps.pushes, uid: current.metadata.uid, id: apiId },
      ),
    fail,
  );
  if (!pushed) return {};
  const { action, hashes } = pushed.value;
  Object.assign(status, hashes);
  // The gateway no longer serves the certificates this API stopped listing.
  if (!(await retireCertificates(client, certs.ids, current, deps.apis, status, fail, log))) return {};
  // When contextRef moved the API to another gateway, it goes from the one it was pushed to
  // before; until then, the status keeps pointing at that one.
  const here = pushedTo(client, effectiveContextRef(current.spec), namespace);
  const leaving = async (c: ManagementClient): Promise<void> => {
    if (await c.deleteApi(apiId)) await c.reload();
  };
  await leaveFormerGateway(
    current,
    { before: old.pushedTo, here, what: `API ${apiId}`, remove: leaving },
    deps,
    fail,
  );
  status.pushedTo = here;
  if (action) log.info(action === 'Created' ? 'api created' : 'api updated', { gateway: client.url });
  // Where clients reach it: its own listen_port and protocol, not the management port (mode ce);
  // where it is held and which gateways serve it (mode pro).
  return reportApiSynced(
    current,
    status,
    { apiId, client, org: resolved.conn.org, api: current.spec, action, since, kind: 'ApiDefinition' },
    deps,
  );
}

/** What of a policy its APIs depend on: its ID, the APIs it covers, whether it is going. */
const policyLinkView = (p: PolicyView): unknown => ({
  id: p.spec?.id,
  refs: accessRefs(p),
  deleting: p.metadata?.deletionTimestamp !== undefined,
});

/**
 * The ApiDefinition controller: APIs are reconciled when they change, when their OperatorContext
 * changes, when a SecurityPolicy that covers them or that they name changes (its ID, its
 * access rights, its deletion), and when a Secret they name for certificates changes
 * (`certificate_secret_names`, `client_certificate_refs`, `upstream_certificate_refs`,
 * `pinned_public_keys_refs`).
 */
export function apiDefinitionController(env: ControllerEnv): ControllerSpec {
  const apiSpec = watchOf(env, 'ApiDefinition');
  const policySpec = watchOf(env, 'SecurityPolicy');
  const apis = env.manager.informer<ApiObject>(apiSpec);
  const policies = env.manager.informer<PolicyView>(policySpec);
  const secretSpec = secretWatch(env);
  const secrets = env.manager.informer<k8s.V1Secret>(secretSpec);
  const objects = new SvcObjects<ApiObject>(env.kc, apiSpec.plural);
  const apisNaming = byJwtPolicy(apis);
  const apisTargeting = byInternalTarget(apis);
  const policiesCovering = byAccessRight(policies);
  const pushes = new PushMemory();
  const holders = certificateHolders(env);
  const secretGrants = secretGrantReads(env);
  const subGraphSpec = watchOf(env, 'SubGraph');
  const superGraphSpec = watchOf(env, 'SuperGraph');
  const subGraphs = env.manager.informer<SubGraphObject>(subGraphSpec);
  const superGraphs = env.manager.informer<SuperGraphObject>(superGraphSpec);
  const apisServing = byGraphRef(apis);
  const superGraphsListing = bySubgraphRef(superGraphs);
  const apisComposing = bySubgraphApiRef(apis);
  /** Keys of the supergraph APIs whose subgraphs_refs name one of these APIs. */
  const composingKeys = (subgraphApis: readonly k8s.KubernetesObject[]): string[] =>
    subgraphApis.flatMap((a) => apisComposing(refOf(a)).map((c) => objectKey(c)));
  /** Keys of the APIs serving the SuperGraphs that list a SubGraph. */
  const supergraphApisOf = (subgraph: ObjectRef): string[] =>
    superGraphsListing(subgraph).flatMap((sg) =>
      apisServing('SuperGraph', refOf(sg)).map((a) => objectKey(a)),
    );
  /** A subgraph API's SubGraph, as the supergraph APIs depend on it. */
  const servedSubgraph = (api: k8s.KubernetesObject | undefined): ObjectRef | undefined => {
    const g = graphRefOf(
      (api as Partial<ApiObject> | undefined)?.spec?.graphql,
      api?.metadata?.namespace ?? '',
    );
    return g?.kind === 'SubGraph' ? g.ref : undefined;
  };

  /** Keys of the APIs linked to a policy. */
  const apisOf = (p: PolicyView | undefined): string[] => {
    if (!p) return [];
    return [
      ...accessRefs(p)
        .filter((r) => r.kind === 'ApiDefinition')
        .map(refKey),
      ...apisNaming(refOf(p)).map((api) => objectKey(api)),
    ];
  };

  return {
    name: 'apidefinition',
    watch: apiSpec,
    // Reconciles mostly wait for the gateway's shared reload (seconds at 10,000 APIs): enough of
    // them that one reload serves a whole burst (docs/design/operator-scale.md).
    workers: 512,
    reconcile: (key) =>
      reconcileApiDefinition(key, {
        read: (namespace, name) => Promise.resolve(apis.get(namespace, name)),
        objects,
        connections: env.connections,
        events: env.events,
        policies: (api) => [
          ...policiesCovering({ kind: 'ApiDefinition', ...refOf(api) }),
          ...jwtPolicyRefs(api).flatMap((r) => policies.get(r.namespace, r.name) ?? []),
        ],
        // The API's namespace is watched, so its Secrets are in the cache.
        secret: (namespace, name) => Promise.resolve(secrets.get(namespace, name)),
        secretGrants,
        apis: holders,
        graphs: {
          subGraph: (namespace, name) => subGraphs.get(namespace, name),
          superGraph: (namespace, name) => superGraphs.get(namespace, name),
          subgraphApis: (subgraph) => apisServing('SubGraph', subgraph),
          api: (namespace, name) => apis.get(namespace, name),
        },
        pushes,
        convergence: env.convergence,
        now: env.now,
        log: env.log,
      }),
    watches: [
      {
        // An ApiDefinition that appears, goes or changes its api_id queues the APIs whose internal
        // targets name it (they wait with ApiNotFound, or write its ID into their svc:// target).
        watch: apiSpec,
        // A subgraph API that appears, goes or changes its ID or SubGraph queues the supergraph
        // APIs whose SuperGraphs list that SubGraph (they call it by its ID).
        map: (api: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const targeting = viewChanged(event, api, old, (a) => (a as Partial<ApiObject>).spec?.api_id)
            ? apisTargeting(refOf(api)).map((a) => objectKey(a))
            : [];
          const view = (a: k8s.KubernetesObject): unknown => ({
            id: (a as Partial<ApiObject>).spec?.api_id,
            graph: servedSubgraph(a),
            deleting: a.metadata?.deletionTimestamp !== undefined,
          });
          // A subgraph API that appears, goes or changes its ID or GraphQL settings queues the
          // supergraph APIs whose subgraphs_refs name it (composed from its SDL, called by its ID).
          const composing = viewChanged(event, api, old, (a) => ({
            ...(view(a) as object),
            graphql: (a as Partial<ApiObject>).spec?.graphql,
          }))
            ? composingKeys([api])
            : [];
          if (!viewChanged(event, api, old, view)) return [...new Set([...targeting, ...composing])];
          const subgraphs = [servedSubgraph(api), servedSubgraph(old)].flatMap((r) => r ?? []);
          return [...new Set([...targeting, ...composing, ...subgraphs.flatMap(supergraphApisOf)])];
        },
      },
      {
        // A SubGraph's SDL feeds the subgraph APIs that serve it.
        watch: subGraphSpec,
        map: (sg: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, sg, old, (g) => ({
            spec: (g as Partial<SubGraphObject>).spec,
            deleting: g.metadata?.deletionTimestamp !== undefined,
          }))
            ? (() => {
                const serving = apisServing('SubGraph', refOf(sg));
                // ...and the supergraph APIs that name those subgraph APIs in subgraphs_refs.
                return [...new Set([...serving.map((a) => objectKey(a)), ...composingKeys(serving)])];
              })()
            : [],
      },
      {
        // A SuperGraph's composition (its status) feeds the supergraph APIs that serve it.
        watch: superGraphSpec,
        map: (sg: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, sg, old, (g) => ({
            schema: (g as Partial<SuperGraphObject>).status?.schema,
            subgraphs: (g as Partial<SuperGraphObject>).status?.subgraphs,
            deleting: g.metadata?.deletionTimestamp !== undefined,
          }))
            ? apisServing('SuperGraph', refOf(sg)).map((a) => objectKey(a))
            : [],
      },
      ...sharedApiWatches(env, apis, { view: policyLinkView, apisOf }),
    ],
  };
}
