import * as k8s from '@kubernetes/client-node';
import type { OasApiStatus } from '../../schemas/generated/kinds.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { SvcObjects } from '../../lib/k8s/objects.ts';
import { objectKey, splitKey } from '../../lib/k8s/informer.ts';
import { derivedId } from '../ids.ts';
import { accessRefs, refKey, refOf, sameRef, sortedRefs } from '../references.ts';
import { translateOasApiDefinition, type ConfigMapContent } from '../translate/oas-api-definition.ts';
import type { OasCertificateSpec } from '../../schemas/oas/secret-refs.ts';
import type { OasApiObject, PolicyView } from './objects.ts';
import { configMapWatch, secretWatch, watchOf, type ControllerEnv } from './env.ts';
import { byAccessRight, byRef } from './indexes.ts';
import { certificateSecretRefs } from '../../schemas/rules/secret-refs.ts';
import {
  certificateHolders,
  readCertificateSecrets,
  retireCertificates,
  uploadCertificates,
} from './certificate-secrets.ts';
import { callGateway, reportFailure, reportUnresolved, type Fail } from './status.ts';
import { reportApiSynced } from './served.ts';
import { apiLeaves, sharedApiWatches, type ApiReconcileDeps } from './api-reconcile.ts';
import { leaveFormerGateway, pushDocument, pushedTo, PushMemory } from './sync.ts';
import type { OasDocument } from '../clients/management.ts';
import { isTemplate } from './template.ts';
import { OAS_FINALIZER, STREAMS_FINALIZER } from '../../schemas/finalizers.ts';

/** The finalizer names live in schemas/, which the webhook reads too. */
export { OAS_FINALIZER, STREAMS_FINALIZER };

/**
 * The two kinds whose API is an OAS document in a ConfigMap: SvcOasApiDefinition, and
 * SvcStreamsApiDefinition (the same, with streams in `x-svc-streaming`). One reconciler serves
 * both; this says which.
 */
export interface DocumentKind {
  kind: 'SvcOasApiDefinition' | 'SvcStreamsApiDefinition';
  finalizer: string;
  /** The spec field holding the ConfigMap reference. */
  field: 'svcOAS' | 'svcStreams';
  /** The controller's name (metrics, logs). */
  controller: string;
}

/** SvcOasApiDefinition. */
export const OAS_KIND: DocumentKind = {
  kind: 'SvcOasApiDefinition',
  finalizer: OAS_FINALIZER,
  field: 'svcOAS',
  controller: 'svcoasapidefinition',
};

/** SvcStreamsApiDefinition. */
export const STREAMS_KIND: DocumentKind = {
  kind: 'SvcStreamsApiDefinition',
  finalizer: STREAMS_FINALIZER,
  field: 'svcStreams',
  controller: 'svcstreamsapidefinition',
};

export type { OasApiObject } from './objects.ts';

/** What the reconciler needs; tests pass their own. */
export interface OasApiDefinitionDeps extends ApiReconcileDeps<OasApiObject> {
  /** Reads a ConfigMap; undefined when it does not exist. */
  configMap: (namespace: string, name: string) => Promise<ConfigMapContent | undefined>;
  /** Which of the two document kinds (default: SvcOasApiDefinition). */
  kind?: DocumentKind;
}

interface ConfigMapRef {
  name: string;
  namespace?: string;
  keyName: string;
}

/** The ConfigMap an OAS or streams API reads, its namespace defaulted to the API's. */
export function configMapRefOf(api: {
  metadata?: { namespace?: string };
  spec?: { svcOAS?: { configmapRef?: ConfigMapRef }; svcStreams?: { configmapRef?: ConfigMapRef } };
}): { namespace: string; name: string; keyName: string } | undefined {
  const ref = api.spec?.svcOAS?.configmapRef ?? api.spec?.svcStreams?.configmapRef;
  if (!ref) return undefined;
  return { namespace: ref.namespace ?? api.metadata?.namespace ?? '', name: ref.name, keyName: ref.keyName };
}

/** The policies whose access rights cover the API of `kind`. */
const coveringPolicies = (
  api: OasApiObject,
  policies: readonly PolicyView[],
  kind: DocumentKind['kind'],
): PolicyView[] =>
  policies.filter((p) => accessRefs(p).some((r) => r.kind === kind && sameRef(r, refOf(api))));

/**
 * Makes the gateway hold the OAS API an SvcOasApiDefinition points at: the document of its
 * ConfigMap key, with the API ID in `x-svc-api-gateway.info.id`, pushed to `/svc/apis/oas`
 * (CREATE when absent, UPDATE on a new document or drift) and reloaded. A document that can't be
 * read or is refused sets `Ready=False` and pushes nothing: the last good version keeps serving
 * (the ConfigMap's watch queues the API when it changes). DELETE through the finalizer, which
 * waits while SecurityPolicies still cover the API (`InUse`). An SvcStreamsApiDefinition (`deps.kind`)
 * is the same with streams: its document must have `x-svc-streaming.streams`.
 */
export async function reconcileSvcOasApiDefinition(
  key: string,
  deps: OasApiDefinitionDeps,
): Promise<WorkResult> {
  const since = deps.now();
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const kind = deps.kind ?? OAS_KIND;
  // A template is never pushed: Ingresses build their APIs from it (template.ts). One that holds
  // this controller's finalizer was served before it became a template (or got the finalizer
  // while the webhooks were off): its API leaves the gateway and the finalizer goes, below, as
  // on a delete; nothing else would ever remove it.
  const template = isTemplate(obj);
  if (template && !obj.metadata.finalizers?.includes(kind.finalizer)) return {};
  const log = deps.log.child({ kind: kind.kind, object: key });
  const covering = coveringPolicies(obj, deps.policies(obj), kind.kind);
  const linked = sortedRefs(covering.map(refOf));
  const resolved = await deps.connections.resolve(obj.spec.contextRef, namespace);

  if (obj.metadata.deletionTimestamp || template) {
    if (!obj.metadata.finalizers?.includes(kind.finalizer)) return {};
    // The API is what was pushed last; before any push, the ID it would have had.
    const apiId = obj.status?.api_id ?? derivedId(namespace, name);
    return apiLeaves(
      obj,
      {
        finalizer: kind.finalizer,
        namespace,
        apiId,
        template,
        covering,
        linked,
        resolved,
        remove: (client, id) => client.deleteOasApi(id),
      },
      deps,
      log,
    );
  }

  const current = await deps.objects.ensureFinalizer(obj, kind.finalizer);
  const old = current.status ?? {};
  // Until a document is pushed, the status keeps what describes the version being served.
  const status: OasApiStatus = { ...old, observedGeneration: current.metadata.generation };
  if (linked.length > 0) status.linked_by_policies = linked;
  else delete status.linked_by_policies;
  const fail: Fail = (reason, message, call) =>
    reportFailure(current, status, { reason, message, call }, deps);

  const ref = configMapRefOf(current);
  if (!ref) {
    await fail('SpecInvalid', `spec.${kind.field}.configmapRef is required`, false);
    return {};
  }
  if (!resolved.ok) return reportUnresolved(resolved, fail);
  // Certificates named by Secret (the reference's TykOasApiDefinition forms): each read into an
  // upload or a pin, written into the document by the translation (schemas/oas/secret-refs.ts).
  const certSpec = current.spec as OasCertificateSpec;
  const certs = await readCertificateSecrets(
    certificateSecretRefs(certSpec),
    namespace,
    resolved.conn.org,
    deps.secret,
    fail,
  );
  if (!certs) return {}; // The Secret's watch queues the API when it appears or changes.
  const { clientCertificate, mutualTLS, certificatePinning, customDomain } = certSpec;
  const translated = translateOasApiDefinition({
    namespace,
    name,
    orgId: resolved.conn.org,
    ref,
    configMap: await deps.configMap(ref.namespace, ref.name),
    streams: kind === STREAMS_KIND,
    certificates: {
      spec: {
        ...(clientCertificate === undefined ? {} : { clientCertificate }),
        ...(mutualTLS === undefined ? {} : { mutualTLS }),
        ...(certificatePinning === undefined ? {} : { certificatePinning }),
        ...(customDomain === undefined ? {} : { customDomain }),
      },
      values: {
        certificateId: (secretName) => certs.uploads.get(secretName)?.id ?? '',
        publicKeyPin: (secretName) => certs.pins.get(secretName) ?? '',
      },
    },
  });
  if (!translated.ok) {
    const served = old.api_id ? `; API ${old.api_id} keeps serving its last good version` : '';
    await fail(translated.reason, `${translated.message}${served}`, false);
    // The ConfigMap's watch queues the API when it changes.
    return {};
  }

  const { apiId, doc } = translated;
  const client = resolved.client;
  if (!(await uploadCertificates(client, certs, resolved.conn.org, fail, log))) return {};
  const updateIfExists = client.updateOasApiIfExists?.bind(client);
  const pushed = await callGateway(async () => {
    const result = await pushDocument<OasDocument>(
      {
        get: () => client.getOasApi(apiId),
        create: (d) => client.createOasApi(d),
        update: (d) => client.updateOasApi(apiId, d),
        ...(updateIfExists === undefined ? {} : { updateIfExists: (d) => updateIfExists(apiId, d) }),
      },
      doc,
      old.api_id === apiId ? old : {},
      () => client.reload(),
      deps.pushes && { pushes: deps.pushes, uid: current.metadata.uid, id: apiId },
    );
    // The document now names another ID: the API under the former one goes.
    if (old.api_id && old.api_id !== apiId && (await client.deleteOasApi(old.api_id))) await client.reload();
    return result;
  }, fail);
  if (!pushed) return {};
  const { action, hashes } = pushed.value;
  Object.assign(status, hashes, {
    api_id: apiId,
    listen_path: translated.listenPath,
    enabled: translated.enabled,
    latestConfigMapHash: translated.configMapHash,
  });
  if (translated.targetUrl === undefined) delete status.target_url;
  else status.target_url = translated.targetUrl;
  // The gateway no longer serves the certificates this API stopped listing.
  if (!(await retireCertificates(client, certs.ids, current, deps.apis, status, fail, log))) return {};
  // When contextRef moved the API to another gateway, it goes from the one it was pushed to
  // before (under the ID it had there); until then, the status keeps pointing at that one.
  const here = pushedTo(client, current.spec.contextRef, namespace);
  const formerId = old.api_id ?? apiId;
  await leaveFormerGateway(
    current,
    {
      before: old.pushedTo,
      here,
      what: `API ${formerId}`,
      remove: async (c) => {
        if (await c.deleteOasApi(formerId)) await c.reload();
      },
    },
    deps,
    fail,
  );
  status.pushedTo = here;
  if (action) log.info(action === 'Created' ? 'api created' : 'api updated', { apiId, gateway: client.url });
  return reportApiSynced(
    current,
    status,
    {
      apiId,
      client,
      org: resolved.conn.org,
      api: { proxy: { listen_path: translated.listenPath } },
      address: false,
      action,
      since,
      kind: kind.kind,
    },
    deps,
  );
}

/** What of a policy its APIs depend on: the APIs it covers, whether it is going. */
const policyLinkView = (p: PolicyView): unknown => ({
  refs: accessRefs(p),
  deleting: p.metadata?.deletionTimestamp !== undefined,
});

/** The SvcOasApiDefinition controller (see `documentController`). */
export const svcOasApiDefinitionController = (env: ControllerEnv): ControllerSpec =>
  documentController(env, OAS_KIND);

/** The SvcStreamsApiDefinition controller (see `documentController`). */
export const svcStreamsApiDefinitionController = (env: ControllerEnv): ControllerSpec =>
  documentController(env, STREAMS_KIND);

/**
 * The controller of a document kind: its APIs are reconciled when they change, when the
 * ConfigMap they point at changes (matched by namespace and name), when their OperatorContext
 * changes, when a SecurityPolicy starts or stops covering them, and when a Secret they name for
 * certificates changes.
 */
function documentController(env: ControllerEnv, kind: DocumentKind): ControllerSpec {
  const oasSpec = watchOf(env, kind.kind);
  const policySpec = watchOf(env, 'SecurityPolicy');
  const cmSpec = configMapWatch(env);
  const apis = env.manager.informer<OasApiObject>(oasSpec);
  const policies = env.manager.informer<PolicyView>(policySpec);
  const configMaps = env.manager.informer<k8s.V1ConfigMap>(cmSpec);
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  const objects = new SvcObjects<OasApiObject>(env.kc, oasSpec.plural);
  const policiesCovering = byAccessRight(policies);
  const apisOfConfigMap = byRef(apis, 'configmap', configMapRefOf);
  const secretSpec = secretWatch(env);
  const secrets = env.manager.informer<k8s.V1Secret>(secretSpec);
  const holders = certificateHolders(env);
  const pushes = new PushMemory();

  /** A ConfigMap from the cache, or read directly when its namespace is not watched. */
  const configMap = async (namespace: string, name: string): Promise<ConfigMapContent | undefined> => {
    if (env.namespaces.length === 0 || env.namespaces.includes(namespace)) {
      return configMaps.get(namespace, name);
    }
    try {
      return await core.readNamespacedConfigMap({ namespace, name });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };

  /** Keys of the APIs of this kind a policy covers. */
  const apisOf = (p: PolicyView | undefined): string[] =>
    p
      ? accessRefs(p)
          .filter((r) => r.kind === kind.kind)
          .map(refKey)
      : [];

  return {
    name: kind.controller,
    watch: oasSpec,
    workers: 64,
    reconcile: (key) =>
      reconcileSvcOasApiDefinition(key, {
        read: (namespace, name) => Promise.resolve(apis.get(namespace, name)),
        configMap,
        objects,
        connections: env.connections,
        events: env.events,
        policies: (api) => policiesCovering({ kind: kind.kind, ...refOf(api) }),
        // The API's namespace is watched, so its Secrets are in the cache.
        secret: (namespace, name) => Promise.resolve(secrets.get(namespace, name)),
        apis: holders,
        pushes,
        convergence: env.convergence,
        now: env.now,
        log: env.log,
        kind,
      }),
    watches: [
      {
        // A ConfigMap queues the APIs that point at it by namespace and name.
        watch: cmSpec,
        map: (cm: k8s.KubernetesObject) => apisOfConfigMap(refOf(cm)).map((api) => objectKey(api)),
      },
      ...sharedApiWatches(env, apis, { view: policyLinkView, apisOf }),
    ],
  };
}
