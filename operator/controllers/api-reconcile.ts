/**
 * What the two API reconcilers share: ApiDefinition (api-definition.ts) and the document kinds,
 * SvcOasApiDefinition and SvcStreamsApiDefinition (oas-api-definition.ts). The dependencies they
 * take, and the way an API leaves the gateway (deleted or turned into a template): held while
 * SecurityPolicies cover it, then deleted from the gateway it was last pushed to with the
 * certificates no other API lists, then the finalizer goes.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../../lib/log.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import { objectKey, type Informer, type InformerEvent } from '../../lib/k8s/informer.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import type { SvcObjects } from '../../lib/k8s/objects.ts';
import type { ManagementClient } from '../clients/management.ts';
import type { Connections, Resolved } from '../connections.ts';
import type { SecretContent } from '../certificates.ts';
import { refOf, type ObjectRef } from '../references.ts';
import { contextWatch, secretWatch, viewChanged, watchOf, type ControllerEnv } from './env.ts';
import { byCertificateSecret, byContext } from './indexes.ts';
import { deleteCertificatesOf, type CertificateHolder } from './certificate-secrets.ts';
import type { ApiObject, OasApiObject, PolicyView } from './objects.ts';
import { heldByPolicies, HELD_RECHECK_MS, type ReportDeps } from './status.ts';
import { finalizeInGateway, type PushMemory } from './sync.ts';
import type { Convergence } from './convergence.ts';

/** What an API reconciler needs; tests pass their own. */
export interface ApiReconcileDeps<T extends ApiObject | OasApiObject> extends ReportDeps<T> {
  /** Reads the object; the informer cache in production (a write that raced it gets a 409 and a retry). */
  read: (namespace: string, name: string) => Promise<T | undefined>;
  objects: Pick<SvcObjects<T>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  connections: Pick<Connections, 'resolve'>;
  /**
   * The SecurityPolicies that may be linked to the API (those that cover it, or that it names;
   * a superset will do): the informer's indexes in production.
   */
  policies: (api: T) => readonly PolicyView[];
  /** Reads a Secret of the API's namespace (certificates named by Secret); undefined when it does not exist. */
  secret: (namespace: string, name: string) => Promise<SecretContent | undefined>;
  /**
   * Every API that may list certificates (of every kind): a certificate is deleted only when none
   * of the others lists it.
   */
  apis: () => readonly CertificateHolder[];
  /**
   * The pushes this process made, by object: the cache may not hold the status of the last one
   * yet (sync.ts). One per controller in production; without it, the status alone says.
   */
  pushes?: PushMemory;
  /** `svc_config_convergence_seconds` (convergence.ts); one per operator in production. */
  convergence?: Convergence | undefined;
  log: Logger;
}

/**
 * An API deleted, or turned into a template, leaves the gateway: it waits while policies still
 * cover it (`InUse`; policies cover no template's API), a template never pushed only loses the
 * finalizer, else `remove` deletes it from the gateway it was last pushed to (without a record,
 * the one the spec names: `resolved`) and the certificates it served go unless another API lists
 * them.
 */
export async function apiLeaves<T extends ApiObject | OasApiObject>(
  obj: T,
  opts: {
    finalizer: string;
    namespace: string;
    apiId: string;
    template: boolean;
    covering: readonly PolicyView[];
    linked: ObjectRef[];
    resolved: Resolved;
    /** Deletes the API's document; false when there was none. */
    remove: (client: ManagementClient, apiId: string) => Promise<boolean>;
  },
  deps: ApiReconcileDeps<T>,
  log: Logger,
): Promise<WorkResult> {
  const { apiId, finalizer, namespace, template } = opts;
  if (!template && (await heldByPolicies(obj, opts.covering, opts.linked, deps)))
    return { requeueAfterMs: HELD_RECHECK_MS };
  // A template never pushed (no status of a push) has nothing in a gateway to delete.
  if (template && obj.status?.pushedTo === undefined && obj.status?.latestSvcSpecHash === undefined) {
    await deps.objects.removeFinalizer(obj, finalizer);
    return {};
  }
  return finalizeInGateway(
    obj,
    {
      finalizer,
      what: `API ${apiId}`,
      // The API is where it was last pushed; without a record, where the spec says.
      resolved: obj.status?.pushedTo
        ? await deps.connections.resolve(obj.status.pushedTo.contextRef, namespace)
        : opts.resolved,
      remove: async (client) => {
        const removed = await opts.remove(client, apiId);
        if (removed) await client.reload();
        // The certificates it served, unless another API lists them.
        await deleteCertificatesOf(client, obj, deps.apis(), log);
        return removed;
      },
    },
    deps,
    log,
  );
}

/**
 * The watches both API controllers share, over the informer of their APIs: a context that
 * appears or changes queues the APIs that use it; a SecurityPolicy whose view (`policy.view`:
 * what of it the APIs depend on) changes queues the APIs linked to it before and after
 * (`policy.apisOf`); a Secret that appears, changes its data or goes queues the APIs that name it
 * for certificates (in their own namespace).
 */
export function sharedApiWatches<T extends k8s.KubernetesObject>(
  env: ControllerEnv,
  apis: Informer<T>,
  policy: {
    view: (p: PolicyView) => unknown;
    /** Keys of the APIs linked to a policy. */
    apisOf: (p: PolicyView | undefined) => string[];
  },
): NonNullable<ControllerSpec['watches']> {
  const apisOfSecret = byCertificateSecret(apis);
  return [
    contextWatch(env, byContext(apis)),
    {
      watch: watchOf(env, 'SecurityPolicy'),
      map: (p: PolicyView, old: PolicyView | undefined, event: InformerEvent) =>
        viewChanged(event, p, old, policy.view)
          ? [...new Set([...policy.apisOf(p), ...policy.apisOf(old)])]
          : [],
    },
    {
      watch: secretWatch(env),
      map: (secret: k8s.V1Secret, old: k8s.V1Secret | undefined, event: InformerEvent) => {
        if (!viewChanged(event, secret, old, (s) => s.data)) return [];
        return apisOfSecret(refOf(secret)).map((api) => objectKey(api));
      },
    },
  ];
}
