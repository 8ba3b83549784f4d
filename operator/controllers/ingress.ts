/**
 * The ingress controller: Ingresses of our class become ApiDefinitions the Ingress owns (one per
 * rule host and path, translate/ingress.ts), which the ApiDefinition controller pushes to the
 * gateway like any other. The Ingress's finalizer deletes them with it (a cluster without the
 * garbage collector, such as a bare API server, included); its status carries the load balancer
 * address, an annotation lists the generated APIs, and Events say what was done and what failed.
 */
import * as k8s from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { API_VERSION, GROUP, VERSION } from '../../schemas/common.ts';
import type { ApiDefinitionSpec } from '../../schemas/generated/kinds.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { errorMessage } from '../../lib/errors.ts';
import { statusOf } from '../../lib/k8s/client.ts';
import { objectKey, splitKey, type InformerEvent, type WatchSpec } from '../../lib/k8s/informer.ts';
import type { EventRecorder } from '../../lib/k8s/events.ts';
import {
  INGRESS_LABEL,
  TEMPLATE_ANNOTATION,
  translateIngress,
  type GeneratedApi,
  oasTemplateSpec,
  type IngressProblem,
  type OasTemplateSpec,
  type ServiceInput,
} from '../translate/ingress.ts';
import { hashOf } from '../ids.ts';
import { API_FINALIZER, type ApiObject } from './api-definition.ts';
import { configMapWatch, secretWatch, viewChanged, watchOf, type ControllerEnv } from './env.ts';
import { byRef } from './indexes.ts';
import { configMapRefOf, type OasApiObject } from './oas-api-definition.ts';
import { translateOasApiDefinition } from '../translate/oas-api-definition.ts';
import { refOf } from '../references.ts';
import { isTemplate } from './template.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

/** The finalizer that keeps an Ingress until its generated ApiDefinitions are deleted. */
export const INGRESS_FINALIZER = 'finalizers.svc.svc.io/ingress';
/** `spec.controller` of our IngressClass. */
export const INGRESS_CONTROLLER = 'svc.io/ingress-controller';
/** The legacy class annotation, compared with `WATCH_INGRESS_CLASS`. */
export const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
/** The annotation that makes an IngressClass the default one. */
export const DEFAULT_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';
/** Annotation on a generated ApiDefinition: the hash of the spec the Ingress controller wrote. */
export const SPEC_HASH_ANNOTATION = 'svc.io/ingress-spec-hash';
/** Annotation on the Ingress listing its generated ApiDefinitions (`name=apiID`, comma-separated). */
export const APIS_ANNOTATION = 'svc.io/apis';

/** An Ingress as the controller reads it. */
export type IngressObject = k8s.V1Ingress & {
  metadata: k8s.V1ObjectMeta & { name: string; namespace: string };
};

/** An IngressClass, as much of it as the controller reads. */
export interface IngressClassView {
  metadata?: { name?: string; annotations?: Record<string, string> };
  spec?: { controller?: string };
}

/**
 * Whether an Ingress is ours: `spec.ingressClassName` names an IngressClass whose controller is
 * ours; else the legacy annotation equals `watchClass`; else (no class at all) one of our
 * IngressClasses is the default.
 */
export function isOurIngress(
  ingress: Pick<k8s.V1Ingress, 'metadata' | 'spec'>,
  classes: readonly IngressClassView[],
  watchClass: string,
): boolean {
  const ours = (c: IngressClassView): boolean => c.spec?.controller === INGRESS_CONTROLLER;
  const className = ingress.spec?.ingressClassName;
  if (className !== undefined && className !== '') {
    return classes.some((c) => c.metadata?.name === className && ours(c));
  }
  const legacy = ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION];
  if (legacy !== undefined) return legacy === watchClass;
  return classes.some((c) => ours(c) && c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true');
}

/** Writes to ApiDefinitions, as the Ingress controller does them. */
export interface GeneratedApiWriter {
  /** Creates; false when it exists already (409). */
  create: (obj: ApiObject) => Promise<boolean>;
  replace: (obj: ApiObject) => Promise<void>;
  /** Deletes; absent counts as done. */
  delete: (namespace: string, name: string) => Promise<void>;
}

/** Writes to Ingresses. */
export interface IngressWriter {
  /**
   * Adds the finalizer and sets the annotation listing the generated APIs (undefined removes it),
   * in one write, with the object's resourceVersion; returns the updated object.
   */
  prepare: (obj: IngressObject, apis: string | undefined) => Promise<IngressObject>;
  removeFinalizer: (obj: IngressObject) => Promise<void>;
  patchLoadBalancer: (obj: IngressObject, ingress: k8s.V1IngressLoadBalancerIngress[]) => Promise<void>;
}

/** What the reconciler needs; tests pass their own. */
export interface IngressDeps {
  read: (namespace: string, name: string) => Promise<IngressObject | undefined>;
  classes: () => readonly IngressClassView[];
  watchClass: string;
  httpPort: number;
  httpsPort: number;
  /** The gateway's own port (see `IngressTranslationContext.gatewayPort`). */
  gatewayPort?: number;
  service: (namespace: string, name: string) => ServiceInput | undefined;
  secretExists: (namespace: string, name: string) => boolean;
  /** An ApiDefinition of the cluster (the template an Ingress names). */
  apiDefinition: (namespace: string, name: string) => ApiObject | undefined;
  /** An SvcOasApiDefinition of the cluster, as a template (when the name is no ApiDefinition). */
  oasTemplate: (namespace: string, name: string) => OasTemplateView | undefined;
  /** The ApiDefinitions generated for an Ingress (labelled with its name, owned by it). */
  generated: (ingress: IngressObject) => readonly ApiObject[];
  apis: GeneratedApiWriter;
  ingresses: IngressWriter;
  /** The addresses for `status.loadBalancer.ingress`; empty leaves the status as it is. */
  loadBalancer: () => Promise<k8s.V1IngressLoadBalancerIngress[]>;
  events: Pick<EventRecorder, 'record'>;
  /** The problems last reported per Ingress, so that a retry loop records no new Events. */
  reported: Map<string, string>;
  log: Logger;
}

/** The ApiDefinition resource of a generated API, owned by its Ingress. */
function apiObjectOf(ingress: IngressObject, api: GeneratedApi): ApiObject {
  return {
    apiVersion: API_VERSION,
    kind: 'ApiDefinition',
    metadata: {
      name: api.name,
      namespace: ingress.metadata.namespace,
      labels: { [INGRESS_LABEL]: ingress.metadata.name },
      // Created with the finalizer its controller would add: one API-server write fewer per API.
      finalizers: [API_FINALIZER],
      annotations: { [SPEC_HASH_ANNOTATION]: hashOf(api.spec) },
      ownerReferences: [
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          name: ingress.metadata.name,
          uid: ingress.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: api.spec,
  };
}

/**
 * Whether `want` is contained in `have`: every field it sets has the same value there (objects
 * compared field by field, anything else whole). The API server adds the CRD's defaults to what
 * it stores, so the stored spec is a superset of the one written.
 */
export function contains(have: unknown, want: unknown): boolean {
  if (isPlainObject(want) && isPlainObject(have))
    return Object.entries(want).every(([k, v]) => contains(have[k], v));
  return isDeepStrictEqual(have, want);
}

/**
 * Whether a generated ApiDefinition already says what `want` says: the hash of the spec last
 * written (a field the Ingress or template dropped changes it) and the stored spec (someone
 * else's edit of a field the Ingress sets is put back).
 */
function upToDate(have: ApiObject, want: ApiObject): boolean {
  return (
    have.metadata.annotations?.[SPEC_HASH_ANNOTATION] === want.metadata.annotations?.[SPEC_HASH_ANNOTATION] &&
    contains(have.spec, want.spec) &&
    have.metadata.labels?.[INGRESS_LABEL] === want.metadata.labels?.[INGRESS_LABEL] &&
    isDeepStrictEqual(
      have.metadata.ownerReferences?.map((o) => o.uid),
      want.metadata.ownerReferences?.map((o) => o.uid),
    )
  );
}

/** Deletes every ApiDefinition generated for an Ingress, then lets the Ingress go. */
async function releaseIngress(ingress: IngressObject, deps: IngressDeps, log: Logger): Promise<WorkResult> {
  for (const api of deps.generated(ingress)) {
    if (api.metadata.deletionTimestamp) continue;
    await deps.apis.delete(api.metadata.namespace, api.metadata.name);
    await deps.events.record(
      ingress,
      'Normal',
      'Deleted',
      `ApiDefinition ${api.metadata.name} (API ${api.spec.api_id ?? ''}) deleted`,
    );
    log.info('generated api deleted', { api: api.metadata.name });
  }
  deps.reported.delete(objectKey(ingress));
  await deps.ingresses.removeFinalizer(ingress);
  return {};
}

/** Records a Warning Event for each problem, unless the same ones were reported last time. */
async function reportProblems(
  ingress: IngressObject,
  problems: readonly { reason: string; message: string }[],
  deps: IngressDeps,
): Promise<void> {
  const key = objectKey(ingress);
  const text = problems.map((p) => `${p.reason}: ${p.message}`).join('\n');
  if ((deps.reported.get(key) ?? '') === text) return;
  if (text === '') deps.reported.delete(key);
  else deps.reported.set(key, text);
  for (const p of problems) await deps.events.record(ingress, 'Warning', p.reason, p.message);
}

/** An SvcOasApiDefinition an Ingress may name as its template, as the controller resolved it. */
export interface OasTemplateView {
  labelled: boolean;
  deleting: boolean;
  /** Its document as a classic spec, or why it can't be one. */
  spec: OasTemplateSpec;
}

/**
 * The spec of the template `name`: an ApiDefinition labelled as a template, else an
 * SvcOasApiDefinition labelled as one (its document converted); or the problem to report.
 */
function resolveTemplate(
  namespace: string,
  name: string,
  deps: Pick<IngressDeps, 'apiDefinition' | 'oasTemplate'>,
): { spec: ApiDefinitionSpec } | { reason: 'TemplateNotFound' | 'TemplateInvalid'; message: string } {
  const field = `metadata.annotations[${TEMPLATE_ANNOTATION}]`;
  const label = 'label it svc.io/template: "true"';
  const api = deps.apiDefinition(namespace, name);
  if (api && !api.metadata.deletionTimestamp) {
    if (!isTemplate(api)) {
      return {
        reason: 'TemplateInvalid',
        message: `${field}: Invalid value: ApiDefinition ${namespace}/${name} is not a template: ${label}`,
      };
    }
    return { spec: api.spec };
  }
  const oas = deps.oasTemplate(namespace, name);
  if (!oas || oas.deleting) {
    return {
      reason: 'TemplateNotFound',
      message: `${field}: Not found: no ApiDefinition or SvcOasApiDefinition ${namespace}/${name}: create one, labelled svc.io/template: "true"`,
    };
  }
  if (!oas.labelled) {
    return {
      reason: 'TemplateInvalid',
      message: `${field}: Invalid value: SvcOasApiDefinition ${namespace}/${name} is not a template: ${label}`,
    };
  }
  if (!oas.spec.ok) {
    return {
      reason: 'TemplateInvalid',
      message: `${field}: Invalid value: SvcOasApiDefinition ${namespace}/${name}: ${oas.spec.message}`,
    };
  }
  return { spec: oas.spec.spec };
}

/** A problem reported on the Ingress: one of the translation's, or a write of a generated API that failed. */
interface Problem {
  reason: IngressProblem['reason'] | 'ApiRefused' | 'ApiWriteFailed';
  message: string;
  retry: boolean;
}

/**
 * A failed write of a generated ApiDefinition: refused (the webhook: a route another API claims,
 * say) waits for a change; anything else is retried with backoff.
 */
function writeProblem(what: string, err: unknown): Problem {
  const status = statusOf(err);
  const refused = status !== undefined && status < 500 && status !== 409 && status !== 429;
  return {
    reason: refused ? 'ApiRefused' : 'ApiWriteFailed',
    message: `${what}: ${errorMessage(err)}`,
    retry: !refused,
  };
}

/**
 * Makes the ApiDefinitions of an Ingress of our class match its rules: creates the missing ones,
 * replaces the changed ones, deletes those it no longer asks for. A path whose Service, port or
 * Secret is missing is left out with a Warning Event and retried; an Ingress that is not (or no
 * longer) ours, or is being deleted, has its ApiDefinitions deleted.
 */
export async function reconcileIngress(key: string, deps: IngressDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const log = deps.log.child({ kind: 'Ingress', object: key });
  const ours = isOurIngress(obj, deps.classes(), deps.watchClass);
  if (obj.metadata.deletionTimestamp || !ours) {
    if (!obj.metadata.finalizers?.includes(INGRESS_FINALIZER)) return {};
    return releaseIngress(obj, deps, log);
  }
  const current = obj;

  // The template, in the Ingress's namespace. Until it is there (and is one), nothing changes:
  // serving without its authentication would open the APIs. Its watch queues the Ingress.
  let template: ApiDefinitionSpec | undefined;
  const templateName = current.metadata.annotations?.[TEMPLATE_ANNOTATION];
  if (templateName !== undefined && templateName !== '') {
    const resolved = resolveTemplate(namespace, templateName, deps);
    if ('reason' in resolved) {
      await reportProblems(current, [resolved], deps);
      return {};
    }
    template = resolved.spec;
  }

  const translated = translateIngress(current, {
    service: (svc) => deps.service(namespace, svc),
    secretExists: (secret) => deps.secretExists(namespace, secret),
    template,
    httpPort: deps.httpPort,
    httpsPort: deps.httpsPort,
    gatewayPort: deps.gatewayPort,
  });
  const problems: Problem[] = [...translated.problems];

  // The finalizer and the list of APIs in one write, before the APIs are created: an Ingress
  // deleted meanwhile still has its APIs deleted.
  const list = translated.apis.map((a) => `${a.name}=${a.spec.api_id ?? ''}`).join(',');
  let prepared = current;
  if (
    !current.metadata.finalizers?.includes(INGRESS_FINALIZER) ||
    (current.metadata.annotations?.[APIS_ANNOTATION] ?? '') !== list
  ) {
    try {
      prepared = await deps.ingresses.prepare(current, list === '' ? undefined : list);
    } catch (err) {
      // The cache is behind our own last write (another watch's event queued this reconcile
      // first): the Ingress's own event is on its way; try again shortly, without a backoff.
      if (statusOf(err) === 409) return { requeueAfterMs: 250 };
      throw err;
    }
  }

  const have = new Map(deps.generated(current).map((a) => [a.metadata.name, a]));
  const wanted = new Set<string>();
  for (const api of translated.apis) {
    const desired = apiObjectOf(prepared, api);
    wanted.add(api.name);
    const existing = have.get(api.name);
    try {
      if (!existing) {
        // False: created already, by a reconcile the cache has not caught up with.
        if (!(await deps.apis.create(desired))) continue;
        await deps.events.record(
          current,
          'Normal',
          'Created',
          `ApiDefinition ${api.name} (API ${api.spec.api_id ?? ''}) created for ${api.spec.name}`,
        );
        log.info('generated api created', { api: api.name });
      } else if (!existing.metadata.deletionTimestamp && !upToDate(existing, desired)) {
        // A replace keeps what others added to the metadata (finalizers).
        desired.metadata.resourceVersion = existing.metadata.resourceVersion;
        desired.metadata.finalizers = existing.metadata.finalizers;
        await deps.apis.replace(desired);
        await deps.events.record(
          current,
          'Normal',
          'Updated',
          `ApiDefinition ${api.name} (API ${api.spec.api_id ?? ''}) updated for ${api.spec.name}`,
        );
        log.info('generated api updated', { api: api.name });
      }
    } catch (err) {
      problems.push(writeProblem(`ApiDefinition ${namespace}/${api.name}`, err));
    }
  }
  for (const [apiName, api] of have) {
    if (wanted.has(apiName) || api.metadata.deletionTimestamp) continue;
    await deps.apis.delete(namespace, apiName);
    await deps.events.record(
      current,
      'Normal',
      'Deleted',
      `ApiDefinition ${apiName} (API ${api.spec.api_id ?? ''}) deleted: the Ingress no longer asks for it`,
    );
    log.info('generated api deleted', { api: apiName });
  }
  await reportProblems(current, problems, deps);

  const addresses = await deps.loadBalancer();
  if (addresses.length > 0 && !isDeepStrictEqual(current.status?.loadBalancer?.ingress ?? [], addresses)) {
    await deps.ingresses.patchLoadBalancer(current, addresses);
  }
  if (problems.some((p) => p.retry)) {
    if (problems.some((p) => p.reason === 'ApiWriteFailed')) {
      throw new Error(`Ingress ${key}: ${problems.map((p) => p.message).join('; ')}`);
    }
    // Watches bring most fixes at once (a Service or Secret created); this is the backstop.
    return { requeueAfterMs: 30_000 };
  }
  return {};
}

/** Settings of the ingress controller (operator/config.ts). */
export interface IngressSettings {
  watchClass: string;
  httpPort: number;
  httpsPort: number;
  /** A fixed address for `status.loadBalancer` (an IP or a host name); empty: none. */
  address: string;
  /** `namespace/name` of the gateway's Service, whose address goes into `status.loadBalancer`. */
  publishService: string;
  /** The operator's management URL (`SVC_URL`): its port is the gateway's own. */
  managementUrl?: string;
}

/** The port of a URL (the scheme's default when it names none); undefined when it does not parse. */
export function urlPort(url: string | undefined): number | undefined {
  if (url === undefined) return undefined;
  try {
    const u = new URL(url);
    return u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  } catch {
    return undefined;
  }
}

/** The addresses of a Service for `status.loadBalancer.ingress`, as other ingress controllers report them. */
export function serviceAddresses(svc: k8s.V1Service | undefined): k8s.V1IngressLoadBalancerIngress[] {
  if (!svc) return [];
  const lb = (svc.status?.loadBalancer?.ingress ?? []).flatMap((i): k8s.V1IngressLoadBalancerIngress[] =>
    i.ip ? [{ ip: i.ip }] : i.hostname ? [{ hostname: i.hostname }] : [],
  );
  if (lb.length > 0) return lb;
  const external = svc.spec?.externalIPs ?? [];
  if (external.length > 0) return external.map((ip) => ({ ip }));
  if (svc.spec?.type === 'ExternalName' && svc.spec.externalName)
    return [{ hostname: svc.spec.externalName }];
  const ip = svc.spec?.clusterIP;
  return ip && ip !== 'None' ? [{ ip }] : [];
}

/** An address as a load balancer entry: an IP, or a host name. */
export function addressEntry(address: string): k8s.V1IngressLoadBalancerIngress {
  return /^[0-9.]+$|:/.test(address) ? { ip: address } : { hostname: address };
}

const ingressWatch = (env: Pick<ControllerEnv, 'namespaces'>): WatchSpec => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  plural: 'ingresses',
  namespaces: env.namespaces,
});
const classWatch: WatchSpec = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  plural: 'ingressclasses',
  namespaces: [],
};
const serviceWatch = (env: Pick<ControllerEnv, 'namespaces'>): WatchSpec => ({
  apiVersion: 'v1',
  kind: 'Service',
  plural: 'services',
  namespaces: env.namespaces,
});

/** The Services an Ingress's backends name (`namespace/name`). */
function servicesOf(ing: k8s.V1Ingress): string[] {
  const ns = ing.metadata?.namespace ?? '';
  const names = [
    ing.spec?.defaultBackend?.service?.name,
    ...(ing.spec?.rules ?? []).flatMap((r) => (r.http?.paths ?? []).map((p) => p.backend.service?.name)),
  ];
  return [...new Set(names.filter((n): n is string => n !== undefined).map((n) => `${ns}/${n}`))];
}

/** The TLS Secrets an Ingress names (`namespace/name`). */
function secretsOf(ing: k8s.V1Ingress): string[] {
  const ns = ing.metadata?.namespace ?? '';
  return [...new Set((ing.spec?.tls ?? []).flatMap((t) => (t.secretName ? [`${ns}/${t.secretName}`] : [])))];
}

/** The template an Ingress names (`namespace/name`). */
function templateOf(ing: k8s.V1Ingress): string[] {
  const t = ing.metadata?.annotations?.[TEMPLATE_ANNOTATION];
  return t ? [`${ing.metadata?.namespace ?? ''}/${t}`] : [];
}

/** The Ingresses using a template ApiDefinition (`namespace/name`), as a lookup the template controller shares. */
export type TemplateUsers = (templateKey: string) => string[];
/** The same, listed from the API server rather than the informer's cache. */
export type FreshTemplateUsers = (templateKey: string) => Promise<string[]>;

/**
 * The Ingress controller: Ingresses are reconciled when they change, when an IngressClass
 * changes (every Ingress: which ones are ours may change), when a Service or TLS Secret they name
 * changes, when the template they name changes, and when one of their generated ApiDefinitions is
 * changed or deleted by someone else. Returns the spec and the lookup of template users.
 */
export function ingressController(
  env: ControllerEnv,
  settings: IngressSettings,
): { spec: ControllerSpec; templateUsers: TemplateUsers; freshTemplateUsers: FreshTemplateUsers } {
  const ingSpec = ingressWatch(env);
  const apiSpec = watchOf(env, 'ApiDefinition');
  const svcSpec = serviceWatch(env);
  const secSpec = secretWatch(env);
  const ingresses = env.manager.informer<IngressObject>(ingSpec);
  const classes = env.manager.informer<IngressClassView & k8s.KubernetesObject>(classWatch);
  const services = env.manager.informer<k8s.V1Service>(svcSpec);
  const secrets = env.manager.informer<k8s.V1Secret>(secSpec);
  const apis = env.manager.informer<ApiObject>(apiSpec);
  const oasSpec = watchOf(env, 'SvcOasApiDefinition');
  const oasApis = env.manager.informer<OasApiObject>(oasSpec);
  const cmSpec = configMapWatch(env);
  const configMaps = env.manager.informer<k8s.V1ConfigMap>(cmSpec);
  const oasOfConfigMap = byRef(oasApis, 'configmap', configMapRefOf);
  ingresses.addIndex('service', servicesOf);
  ingresses.addIndex('tls-secret', secretsOf);
  ingresses.addIndex('template', templateOf);
  apis.addIndex('ingress', (a) => {
    const owner = a.metadata.labels?.[INGRESS_LABEL];
    return owner ? [`${a.metadata.namespace}/${owner}`] : [];
  });
  const networking = env.kc.makeApiClient(k8s.NetworkingV1Api);
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  const custom = env.kc.makeApiClient(k8s.CustomObjectsApi);
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  const collection = (namespace: string) => ({
    group: GROUP,
    version: VERSION,
    plural: apiSpec.plural,
    namespace,
  });
  const ref = (namespace: string, name: string) => ({ ...collection(namespace), name });
  const reported = new Map<string, string>();
  const patchIngress = async (obj: IngressObject, body: object): Promise<IngressObject> =>
    (await networking.patchNamespacedIngress(
      { namespace: obj.metadata.namespace, name: obj.metadata.name, body, fieldManager: 'svc-operator' },
      merge,
    )) as IngressObject;

  const publishNamespace = splitKey(settings.publishService).namespace;
  const publishWatched =
    settings.publishService !== '' &&
    (env.namespaces.length === 0 || env.namespaces.includes(publishNamespace));
  const loadBalancer = async (): Promise<k8s.V1IngressLoadBalancerIngress[]> => {
    if (settings.address !== '') return settings.address.split(',').map((a) => addressEntry(a.trim()));
    if (settings.publishService === '') return [];
    const { namespace, name } = splitKey(settings.publishService);
    // In a watched namespace, the cache has it (and its changes queue every Ingress).
    if (publishWatched) return serviceAddresses(services.get(namespace, name));
    try {
      return serviceAddresses(await core.readNamespacedService({ namespace, name }));
    } catch (err) {
      if (statusOf(err) === 404) return [];
      throw err;
    }
  };

  const spec: ControllerSpec = {
    name: 'ingress',
    watch: ingSpec,
    workers: 64,
    reconcile: (key) =>
      reconcileIngress(key, {
        read: (namespace, name) => Promise.resolve(ingresses.get(namespace, name)),
        classes: () => classes.list(),
        watchClass: settings.watchClass,
        httpPort: settings.httpPort,
        httpsPort: settings.httpsPort,
        gatewayPort: urlPort(settings.managementUrl),
        service: (namespace, name) => services.get(namespace, name),
        secretExists: (namespace, name) => secrets.get(namespace, name) !== undefined,
        apiDefinition: (namespace, name) => apis.get(namespace, name),
        oasTemplate: (namespace, name) => {
          const oas = oasApis.get(namespace, name);
          if (!oas) return undefined;
          const ref = configMapRefOf(oas);
          let spec: OasTemplateSpec = { ok: false, message: 'spec.svcOAS.configmapRef: Required value' };
          if (ref) {
            // The document read and checked as for any OAS API (the cache holds the watched
            // namespaces' ConfigMaps), then converted as the gateway converts it.
            const doc = translateOasApiDefinition({
              namespace,
              name,
              orgId: '',
              ref,
              configMap: configMaps.get(ref.namespace, ref.name),
            });
            spec = doc.ok ? oasTemplateSpec(doc.doc) : { ok: false, message: doc.message };
          }
          return { labelled: isTemplate(oas), deleting: oas.metadata.deletionTimestamp !== undefined, spec };
        },
        generated: (ing) => apis.byIndex('ingress', objectKey(ing)),
        apis: {
          create: async (obj) => {
            try {
              await custom.createNamespacedCustomObject({
                ...collection(obj.metadata.namespace),
                body: obj,
                fieldManager: 'svc-operator',
              });
              return true;
            } catch (err) {
              if (statusOf(err) === 409) return false;
              throw err;
            }
          },
          replace: async (obj) => {
            await custom.replaceNamespacedCustomObject({
              ...ref(obj.metadata.namespace, obj.metadata.name),
              body: obj,
              fieldManager: 'svc-operator',
            });
          },
          delete: async (namespace, name) => {
            try {
              await custom.deleteNamespacedCustomObject(ref(namespace, name));
            } catch (err) {
              if (statusOf(err) !== 404) throw err;
            }
          },
        },
        ingresses: {
          prepare: async (obj, list) => {
            const current = obj.metadata.finalizers ?? [];
            return patchIngress(obj, {
              metadata: {
                ...(current.includes(INGRESS_FINALIZER)
                  ? {}
                  : { finalizers: [...current, INGRESS_FINALIZER] }),
                annotations: { [APIS_ANNOTATION]: list ?? null },
                resourceVersion: obj.metadata.resourceVersion,
              },
            });
          },
          removeFinalizer: async (obj) => {
            const current = obj.metadata.finalizers ?? [];
            if (!current.includes(INGRESS_FINALIZER)) return;
            try {
              await patchIngress(obj, {
                metadata: {
                  finalizers: current.filter((f) => f !== INGRESS_FINALIZER),
                  resourceVersion: obj.metadata.resourceVersion,
                },
              });
            } catch (err) {
              if (statusOf(err) !== 404) throw err;
            }
          },
          patchLoadBalancer: async (obj, ingress) => {
            await networking.patchNamespacedIngressStatus(
              {
                namespace: obj.metadata.namespace,
                name: obj.metadata.name,
                body: { status: { loadBalancer: { ingress } } },
                fieldManager: 'svc-operator',
              },
              merge,
            );
          },
        },
        loadBalancer,
        events: env.events,
        reported,
        log: env.log,
      }),
    watches: [
      {
        // An OAS template's change (or its document's) re-builds its users.
        watch: oasSpec,
        map: (o: k8s.KubernetesObject) =>
          ingresses.byIndex('template', objectKey(o)).map((i) => objectKey(i)),
      },
      {
        watch: cmSpec,
        map: (cm: k8s.KubernetesObject) =>
          oasOfConfigMap(refOf(cm)).flatMap((o) =>
            ingresses.byIndex('template', objectKey(o)).map((i) => objectKey(i)),
          ),
      },
      {
        // Which Ingresses are ours may change with any IngressClass.
        watch: classWatch,
        map: (c: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, c, old, (x) => ({
            spec: (x as IngressClassView).spec,
            a: x.metadata?.annotations,
          }))
            ? ingresses.list().map((i) => objectKey(i))
            : [],
      },
      {
        watch: svcSpec,
        map: (svc: k8s.V1Service, old: k8s.V1Service | undefined, event: InformerEvent) => {
          // The gateway's Service getting (or changing) its address: every Ingress's status.
          if (
            settings.address === '' &&
            objectKey(svc) === settings.publishService &&
            viewChanged(event, svc, old, serviceAddresses)
          ) {
            return ingresses.list().map((i) => objectKey(i));
          }
          return viewChanged(event, svc, old, (s) =>
            s.spec?.ports?.map((p) => [p.name, p.port]).concat([[s.spec.type, s.spec.externalName]]),
          )
            ? ingresses.byIndex('service', objectKey(svc)).map((i) => objectKey(i))
            : [];
        },
      },
      {
        // A TLS Secret appearing or going; its rotation is the generated APIs' business.
        watch: secSpec,
        map: (_s: k8s.KubernetesObject, _old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          event === 'update' ? [] : ingresses.byIndex('tls-secret', objectKey(_s)).map((i) => objectKey(i)),
      },
      {
        // A template's change re-builds its users; a generated API changed or deleted by
        // someone else is put back.
        watch: apiSpec,
        map: (obj: k8s.KubernetesObject, prev: k8s.KubernetesObject | undefined, event: InformerEvent) => {
          const a = obj as ApiObject;
          const old = prev as ApiObject | undefined;
          const keys = ingresses.byIndex('template', objectKey(a)).map((i) => objectKey(i));
          const owner = a.metadata.labels?.[INGRESS_LABEL];
          if (owner && (event !== 'update' || !isDeepStrictEqual(a.spec, old?.spec))) {
            keys.push(`${a.metadata.namespace}/${owner}`);
          }
          if (
            !viewChanged(event, a, old, (x) => ({
              spec: x.spec,
              labels: x.metadata.labels,
              deleting: x.metadata.deletionTimestamp,
            }))
          )
            return [];
          return keys;
        },
      },
    ],
  };
  const uses = (i: IngressObject): boolean =>
    !i.metadata.deletionTimestamp && isOurIngress(i, classes.list(), settings.watchClass);
  const templateUsers: TemplateUsers = (templateKey) =>
    ingresses
      .byIndex('template', templateKey)
      .filter(uses)
      .map((i) => objectKey(i))
      .sort();
  const freshTemplateUsers: FreshTemplateUsers = async (templateKey) => {
    const { namespace } = splitKey(templateKey);
    const list = await networking.listNamespacedIngress({ namespace });
    return (list.items as IngressObject[])
      .filter((i) => templateOf(i).includes(templateKey) && uses(i))
      .map((i) => objectKey(i))
      .sort();
  };
  return { spec, templateUsers, freshTemplateUsers };
}
