/**
 * What the chart's pre-delete hook does on `helm uninstall` (docs/design/operator.md,
 * "Uninstalling"): the operator's finalizers hold each object until the operator has deleted its
 * document from the gateway; once the operator is gone nobody removes them, and every
 * ApiDefinition, SecurityPolicy, OperatorContext or Ingress deleted later (a namespace deleted
 * with them) would wait forever. So, before Helm deletes the release's objects, the hook stops the
 * operator and takes the operator's finalizers off every object that has one. The objects stay;
 * the gateway keeps what was pushed. An operator installed again adds its finalizers back on its
 * first reconcile, as it does for any object it finds without one.
 */
import * as k8s from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { GROUP, VERSION } from '../schemas/common.ts';
import { SVC_PLURALS } from '../schemas/index.ts';
import type { Logger } from '../lib/log.ts';
import { statusOf } from '../lib/k8s/client.ts';

/** Every finalizer of the operator starts with this (schemas/finalizers.ts, template, ingress). */
export const FINALIZER_PREFIX = `finalizers.${GROUP}/`;

/** Where the operator runs and which webhook configurations call it. */
export interface OperatorInstall {
  namespace: string;
  deployment: string;
  mutatingWebhookConfiguration: string;
  validatingWebhookConfiguration: string;
}

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

const ignoreNotFound = (err: unknown): void => {
  if (statusOf(err) !== 404) throw err;
};

/**
 * Calls `fn` again while the API server answers 429 or 5xx or cannot be reached (an API server
 * still filling its caches answers 429 "storage is (re)initializing"), for up to `timeoutMs`.
 */
async function retrying<T>(fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 4000)) {
    try {
      return await fn();
    } catch (err) {
      const status = statusOf(err);
      const transient = status === undefined || status === 429 || status >= 500;
      if (!transient || Date.now() + delay > deadline) throw err;
    }
    await sleep(delay);
  }
}

/**
 * Stops the operator for good: first the webhook configurations go (their server runs in the
 * operator's pods, and with `failurePolicy: Fail` every write they cover would be refused once
 * the pods are gone, the finalizer patches below included), then the Deployment is scaled to
 * zero and this waits until none of its pods is left, so no reconcile adds a finalizer back.
 */
export async function stopOperator(
  kc: k8s.KubeConfig,
  install: OperatorInstall,
  log: Logger,
  timeoutMs = 120_000,
): Promise<void> {
  const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await retrying(() =>
    admission.deleteMutatingWebhookConfiguration({ name: install.mutatingWebhookConfiguration }),
  ).catch(ignoreNotFound);
  await retrying(() =>
    admission.deleteValidatingWebhookConfiguration({ name: install.validatingWebhookConfiguration }),
  ).catch(ignoreNotFound);
  log.info('webhook configurations deleted');
  let deployment: k8s.V1Deployment;
  try {
    deployment = await retrying(() =>
      apps.readNamespacedDeployment({ name: install.deployment, namespace: install.namespace }),
    );
  } catch (err) {
    ignoreNotFound(err);
    log.info('operator deployment not found');
    return;
  }
  await retrying(() =>
    apps.patchNamespacedDeploymentScale(
      { name: install.deployment, namespace: install.namespace, body: { spec: { replicas: 0 } } },
      mergePatch,
    ),
  );
  const labelSelector = Object.entries(deployment.spec?.selector.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  if (labelSelector === '') throw new Error(`deployment ${install.deployment} has no matchLabels`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = await retrying(() =>
      core.listNamespacedPod({ namespace: install.namespace, labelSelector }),
    );
    if (pods.items.length === 0) break;
    if (Date.now() > deadline) {
      const names = pods.items.map((p) => p.metadata?.name).join(', ');
      throw new Error(`the operator's pods are still running after ${timeoutMs / 1000}s: ${names}`);
    }
    await sleep(1000);
  }
  log.info('operator stopped', { deployment: install.deployment });
}

/** An object that may carry finalizers, as both listings return it. */
interface Held {
  metadata?: { name?: string; namespace?: string; finalizers?: string[]; resourceVersion?: string };
}

/** The object's finalizers without the operator's, or undefined when it holds none of them. */
function without(obj: Held): string[] | undefined {
  const all = obj.metadata?.finalizers ?? [];
  const kept = all.filter((f) => !f.startsWith(FINALIZER_PREFIX));
  return kept.length === all.length ? undefined : kept;
}

/**
 * Takes the operator's finalizers off every object of the svc kinds, every Gateway and every
 * Ingress, in every namespace; other finalizers stay. A write is made with the object's resourceVersion; on a
 * conflict the object is read again. Returns how many objects were released.
 */
export async function releaseFinalizers(kc: k8s.KubeConfig, log: Logger): Promise<number> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const networking = kc.makeApiClient(k8s.NetworkingV1Api);
  let released = 0;

  const release = async (
    kind: string,
    read: () => Promise<Held>,
    patch: (body: object) => Promise<unknown>,
    first: Held,
  ): Promise<void> => {
    let obj = first;
    for (let attempt = 0; ; attempt++) {
      const kept = without(obj);
      if (kept === undefined) return;
      try {
        await retrying(() =>
          patch({ metadata: { finalizers: kept, resourceVersion: obj.metadata?.resourceVersion } }),
        );
        released++;
        log.info('finalizer released', {
          kind,
          namespace: obj.metadata?.namespace,
          name: obj.metadata?.name,
        });
        return;
      } catch (err) {
        const status = statusOf(err);
        if (status === 404) return;
        if (status !== 409 || attempt >= 5) throw err;
      }
      try {
        obj = await retrying(read);
      } catch (err) {
        ignoreNotFound(err);
        return;
      }
    }
  };

  // Every svc kind may carry one of the operator's finalizers, and so may a Gateway of its class
  // (operator/controllers/gateway-api).
  const kinds = [
    ...SVC_PLURALS.map((plural) => ({ group: GROUP, version: VERSION, plural })),
    { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways' },
  ];
  for (const { group, version, plural } of kinds) {
    let list: { items: Held[] };
    try {
      list = (await retrying(() => custom.listClusterCustomObject({ group, version, plural }))) as {
        items: Held[];
      };
    } catch (err) {
      // A CRD deleted by hand, or never installed (the Gateway API's): nothing of it can be held.
      ignoreNotFound(err);
      continue;
    }
    for (const item of list.items) {
      const ref = {
        group,
        version,
        plural,
        namespace: item.metadata?.namespace ?? '',
        name: item.metadata?.name ?? '',
      };
      await release(
        plural,
        async () => (await custom.getNamespacedCustomObject(ref)) as Held,
        (body) => custom.patchNamespacedCustomObject({ ...ref, body }, mergePatch),
        item,
      );
    }
  }
  const ingresses = await retrying(() => networking.listIngressForAllNamespaces());
  for (const item of ingresses.items) {
    const ref = { namespace: item.metadata?.namespace ?? '', name: item.metadata?.name ?? '' };
    await release(
      'ingresses',
      () => networking.readNamespacedIngress(ref),
      (body) => networking.patchNamespacedIngress({ ...ref, body }, mergePatch),
      item,
    );
  }
  return released;
}
