/**
 * The reconciler of one Ingress: its generated ApiDefinitions made to match its rules, its
 * finalizer and annotation, its Events and its load balancer status. The cluster is reached
 * through `IngressDeps` only (controller.ts wires it; tests pass their own).
 */
import { isDeepStrictEqual } from 'node:util';
import type { ApiDefinitionSpec } from '../../../schemas/generated/kinds.ts';
import type { Logger } from '../../../lib/log.ts';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import { statusOf } from '../../../lib/k8s/client.ts';
import { objectKey, splitKey } from '../../../lib/k8s/informer.ts';
import { TEMPLATE_ANNOTATION, translateIngress } from '../../translate/ingress.ts';
import { isOurIngress } from './class.ts';
import { apiObjectOf, upToDate } from './generated-api.ts';
import { writeGeneratedApis } from '../generated-apis.ts';
import { reportProblems, writeProblem, type Problem } from './problems.ts';
import { resolveTemplate } from './template.ts';
import { APIS_ANNOTATION, INGRESS_FINALIZER, type IngressDeps, type IngressObject } from './types.ts';

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

  await writeGeneratedApis(
    current,
    translated.apis.map((api) => apiObjectOf(prepared, api)),
    deps,
    {
      upToDate,
      log,
      written: (action, api) => {
        const what = `ApiDefinition ${api.metadata.name} (API ${api.spec.api_id ?? ''})`;
        return deps.events.record(
          current,
          'Normal',
          action,
          action === 'Deleted'
            ? `${what} deleted: the Ingress no longer asks for it`
            : `${what} ${action.toLowerCase()} for ${api.spec.name}`,
        );
      },
      failed: (apiName, err) => {
        problems.push(writeProblem(`ApiDefinition ${namespace}/${apiName}`, err));
      },
    },
  );
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
