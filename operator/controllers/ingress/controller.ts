/**
 * The ingress controller's wiring: the informers and their indexes, the watches that queue an
 * Ingress when something it depends on changes (IngressClasses, Services, TLS Secrets,
 * templates, its generated ApiDefinitions), the cluster-backed dependencies of the reconciler,
 * and the lookups of template users the template controller shares.
 */
import * as k8s from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { isTemplate } from '../../../schemas/templates.ts';
import type { ControllerSpec } from '../../../lib/k8s/manager.ts';
import { statusOf } from '../../../lib/k8s/client.ts';
import { objectKey, splitKey, type InformerEvent, type WatchSpec } from '../../../lib/k8s/informer.ts';
import {
  INGRESS_LABEL,
  TEMPLATE_ANNOTATION,
  oasTemplateSpec,
  type OasTemplateSpec,
} from '../../translate/ingress.ts';
import { translateOasApiDefinition } from '../../translate/oas-api-definition.ts';
import { refOf } from '../../references.ts';
import { configMapWatch, secretWatch, viewChanged, watchOf, type ControllerEnv } from '../env.ts';
import { byRef } from '../indexes.ts';
import { configMapRefOf } from '../oas-api-definition.ts';
import type { ApiObject, OasApiObject } from '../objects.ts';
import { isOurIngress } from './class.ts';
import { addressEntry, serviceAddresses } from './load-balancer.ts';
import { reconcileIngress } from './reconcile.ts';
import type {
  FreshTemplateUsers,
  IngressClassView,
  IngressObject,
  IngressSettings,
  TemplateUsers,
} from './types.ts';
import { clusterWriters } from './writers.ts';

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
  const writers = clusterWriters(env, apiSpec.plural);
  const reported = new Map<string, string>();

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
        apis: writers.apis,
        ingresses: writers.ingresses,
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
