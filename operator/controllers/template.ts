/**
 * API templates: an ApiDefinition or SvcOasApiDefinition labelled `svc.io/template: "true"` (or the
 * reference's `template: "true"`) is never pushed to the gateway; Ingresses annotated
 * `svc.io/template: <name>` build their APIs from it. Its finalizer holds it while Ingresses use
 * it (the webhook refuses that delete; this is the backstop when webhooks are off), with
 * `Ready=False`, reason `InUse`, naming them.
 */
import type * as k8s from '@kubernetes/client-node';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { SvcObjects } from '../../lib/k8s/objects.ts';
import { splitKey, type InformerEvent } from '../../lib/k8s/informer.ts';
import { TEMPLATE_ANNOTATION } from '../translate/ingress.ts';
import type { ApiObject, OasApiObject } from './objects.ts';
import { viewChanged, watchOf, type ControllerEnv } from './env.ts';
import { reportFailure, reportSuccess, type ReportDeps } from './status.ts';

/** The finalizer that keeps a template while Ingresses use it. */
export const TEMPLATE_FINALIZER = 'finalizers.svc.svc.io/template';

import { isTemplate } from '../../schemas/templates.ts';
export { isTemplate };

/** A template: an ApiDefinition or an SvcOasApiDefinition. */
export type TemplateObject = ApiObject | OasApiObject;

/** What the template reconciler needs; tests pass their own. */
export interface TemplateDeps<T extends TemplateObject = ApiObject> extends ReportDeps<T> {
  read: (namespace: string, name: string) => Promise<T | undefined>;
  objects: Pick<SvcObjects<T>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  /** The Ingresses (`namespace/name`) that use the template, sorted (the informer's cache). */
  users: (templateKey: string) => string[];
  /**
   * The same, listed from the API server: asked before a template being deleted is let go while
   * the cache names no Ingress (the cache may not hold one created a moment ago).
   */
  freshUsers?: (templateKey: string) => Promise<string[]>;
}

/**
 * Keeps a template's finalizer and status: `Ready=True`, reason `Template`, naming its users;
 * being deleted while Ingresses use it, `Ready=False`, reason `InUse`, and the finalizer stays.
 * Not a template: nothing to do (its own controller has it).
 */
export async function reconcileTemplate<T extends TemplateObject>(
  key: string,
  deps: TemplateDeps<T>,
): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  let users = deps.users(key);
  const named = (): string => users.map((u) => `Ingress ${u}`).join(', ');
  if (!isTemplate(obj)) {
    // A label removed: nothing holds it any more.
    if (obj.metadata.finalizers?.includes(TEMPLATE_FINALIZER))
      await deps.objects.removeFinalizer(obj, TEMPLATE_FINALIZER);
    return {};
  }
  if (obj.metadata.deletionTimestamp) {
    if (!obj.metadata.finalizers?.includes(TEMPLATE_FINALIZER)) return {};
    if (users.length === 0 && deps.freshUsers !== undefined) users = await deps.freshUsers(key);
    if (users.length > 0) {
      const message = `still used by ${named()}: remove their ${TEMPLATE_ANNOTATION} annotation (or delete them) first`;
      const status = { ...obj.status } as NonNullable<T['status']>;
      await reportFailure(obj, status, { reason: 'InUse', message, call: false }, deps);
      return {};
    }
    await deps.objects.removeFinalizer(obj, TEMPLATE_FINALIZER);
    return {};
  }
  const current = await deps.objects.ensureFinalizer(obj, TEMPLATE_FINALIZER);
  const status = {
    ...current.status,
    observedGeneration: current.metadata.generation,
  } as NonNullable<T['status']>;
  const message =
    users.length > 0
      ? `template, not served itself; used by ${named()}`
      : 'template, not served itself; no Ingress uses it';
  await reportSuccess(
    current,
    status,
    { reason: 'Template', message, what: `template ${key}`, where: '' },
    deps,
  );
  return {};
}

/**
 * The template controller: ApiDefinitions (it acts on templates only), queued again when an
 * Ingress starts or stops naming them.
 */
export function templateController(
  env: ControllerEnv,
  users: (templateKey: string) => string[],
  kind: 'ApiDefinition' | 'SvcOasApiDefinition' = 'ApiDefinition',
  freshUsers?: (templateKey: string) => Promise<string[]>,
): ControllerSpec {
  const apiSpec = watchOf(env, kind);
  const apis = env.manager.informer<TemplateObject>(apiSpec);
  const objects = new SvcObjects<TemplateObject>(env.kc, apiSpec.plural);
  const templateKeyOf = (i: k8s.KubernetesObject | undefined): string[] => {
    const t = i?.metadata?.annotations?.[TEMPLATE_ANNOTATION];
    return t ? [`${i.metadata?.namespace ?? ''}/${t}`] : [];
  };
  return {
    name: `${kind.toLowerCase()}-template`,
    watch: apiSpec,
    workers: 4,
    reconcile: (key) =>
      reconcileTemplate(key, {
        read: (namespace, name) => Promise.resolve(apis.get(namespace, name)),
        objects,
        users,
        ...(freshUsers === undefined ? {} : { freshUsers }),
        events: env.events,
        now: env.now,
      }),
    watches: [
      {
        watch: {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          plural: 'ingresses',
          namespaces: env.namespaces,
        },
        map: (i: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, i, old, (x) => ({ t: templateKeyOf(x), d: x.metadata?.deletionTimestamp }))
            ? [...new Set([...templateKeyOf(i), ...templateKeyOf(old)])]
            : [],
      },
    ],
  };
}
