/**
 * The ApiKey controller's wiring: its informers (keys, the policies and APIs they name, the
 * Secrets they read), the Secret writer, and the watches that queue a key again.
 */
import * as k8s from '@kubernetes/client-node';
import { API_VERSION } from '../../../schemas/common.ts';
import { keyTypeOf } from '../../../schemas/rules/api-key.ts';
import { resolveRef } from '../../../schemas/rules/references.ts';
import type { ControllerSpec } from '../../../lib/k8s/manager.ts';
import { rememberingWrites, SvcObjects } from '../../../lib/k8s/objects.ts';
import { objectKey, type InformerEvent } from '../../../lib/k8s/informer.ts';
import { statusOf } from '../../../lib/k8s/client.ts';
import { TransientError } from '../../../lib/errors.ts';
import { keyAccessRefs, routeRightKeys } from '../../references.ts';
import { byRouteRight, byServedRoute, servedRoutes } from '../route-rights.ts';
import { certificateHolders } from '../certificate-secrets.ts';
import {
  apiInformers,
  apiKindWatches,
  contextWatch,
  secretWatch,
  viewChanged,
  watchOf,
  type ApiKind,
  type ControllerEnv,
} from '../env.ts';
import { byAccessRight, byContext } from '../indexes.ts';
import type { ApiIdView } from '../api-refs.ts';
import { reconcileApiKey } from './reconcile.ts';
import { grantsAccess, secretOf, type KeyObject, type KeySecret, type PolicyView } from './types.ts';

/** What of a policy its keys depend on: its ID, readiness, deletion, whether it grants access. */
const policyView = (p: PolicyView): unknown => ({
  id: p.status?.pol_id,
  grants: grantsAccess(p),
  ready: p.status?.conditions?.find((c) => c.type === 'Ready')?.status,
  deleting: p.metadata?.deletionTimestamp !== undefined,
});

/** The value under `dataKey` of a Secret from the cache. */
function secretValue(secret: k8s.V1Secret | undefined, dataKey: string): KeySecret | undefined {
  if (!secret) return undefined;
  const b64 = secret.data?.[dataKey];
  return {
    value: b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8'),
    version: `${secret.metadata?.uid ?? ''}/${secret.metadata?.resourceVersion ?? ''}`,
  };
}

/** What of an API its keys depend on: its ID, whether it is going. */
const apiView = (api: ApiIdView): unknown => ({
  apiId: api.status?.api_id,
  deleting: api.metadata?.deletionTimestamp !== undefined,
  routes: servedRoutes(api),
});

/**
 * The ApiKey controller: keys are reconciled when they change, when the Secret they read
 * appears or changes, when a policy they name appears, gets its ID or goes, when an API their
 * access rights name appears, gets its ID or goes, and when their OperatorContext changes.
 */
export function apiKeyController(env: ControllerEnv): ControllerSpec {
  const keySpec = watchOf(env, 'ApiKey');
  const policySpec = watchOf(env, 'SecurityPolicy');
  const secretSpec = secretWatch(env);
  const keysInf = env.manager.informer<KeyObject>(keySpec);
  const policies = env.manager.informer<PolicyView>(policySpec);
  const secrets = env.manager.informer<k8s.V1Secret>(secretSpec);
  // The status each key was last written with (ApiKeyDeps.written).
  const { objects, written } = rememberingWrites(new SvcObjects<KeyObject>(env.kc, keySpec.plural));
  const apis = apiInformers<ApiIdView>(env);
  const keysCovering = byAccessRight(keysInf, (k) => keyAccessRefs(k));
  const apisServing = byServedRoute(apis.ApiDefinition);
  const keysNamingRoute = byRouteRight(keysInf, (k) =>
    routeRightKeys(k.spec.accessRights, k.metadata.namespace),
  );
  /** Keys of the ApiKeys whose access rights name an API of `kind` (or a route it serves). */
  const keysOf = (kind: ApiKind, api: ApiIdView | undefined): string[] =>
    api
      ? [
          ...keysCovering({
            kind,
            namespace: api.metadata?.namespace ?? '',
            name: api.metadata?.name ?? '',
          }).map((k) => objectKey(k)),
          ...(kind === 'ApiDefinition'
            ? servedRoutes(api).flatMap((r) => keysNamingRoute(r).map((k) => objectKey(k)))
            : []),
        ]
      : [];
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  const keysOfContext = byContext(keysInf);
  keysInf.addIndex('key-secret', (k) =>
    keyTypeOf(k.spec) === 'certificate'
      ? [`${k.metadata.namespace}/${k.spec.certificateSecretRef ?? ''}`]
      : [`${k.metadata.namespace}/${secretOf(k).name}`],
  );
  const apiCertificates = certificateHolders(env);
  const certificateInUse = (id: string, self: KeyObject): boolean =>
    apiCertificates().some((h) => h.status?.certificates?.includes(id) === true) ||
    keysInf.list().some((k) => k.metadata.uid !== self.metadata.uid && k.status?.certificateId === id);
  keysInf.addIndex('key-policy', (k) =>
    (k.spec.policies ?? []).flatMap((r) => {
      const ref = resolveRef(r, k.metadata.namespace);
      return ref ? [`${ref.namespace}/${ref.name}`] : [];
    }),
  );

  const writeSecret = async (
    owner: KeyObject,
    name: string,
    dataKey: string,
    value: string,
  ): Promise<string> => {
    const namespace = owner.metadata.namespace;
    const data = { [dataKey]: Buffer.from(value, 'utf8').toString('base64') };
    const existing = secrets.get(namespace, name);
    if (existing) {
      const patched = await core.patchNamespacedSecret(
        { name, namespace, body: { data }, fieldManager: 'svc-operator' },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      return `${patched.metadata?.uid ?? ''}/${patched.metadata?.resourceVersion ?? ''}`;
    }
    try {
      const created = await core.createNamespacedSecret({
        namespace,
        fieldManager: 'svc-operator',
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'Opaque',
          metadata: {
            name,
            namespace,
            labels: { 'app.kubernetes.io/managed-by': 'svc-operator' },
            ownerReferences: [
              {
                apiVersion: API_VERSION,
                kind: 'ApiKey',
                name: owner.metadata.name,
                uid: owner.metadata.uid ?? '',
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
          data,
        },
      });
      return `${created.metadata?.uid ?? ''}/${created.metadata?.resourceVersion ?? ''}`;
    } catch (err) {
      // Written meanwhile (by a user, or a reconcile before the cache saw it): read it next time.
      if (statusOf(err) === 409) {
        throw new TransientError('OP_ERR_SECRET_CONFLICT', `Secret ${namespace}/${name} appeared meanwhile`);
      }
      throw err;
    }
  };

  return {
    name: 'apikey',
    watch: keySpec,
    workers: 64,
    reconcile: (key) =>
      reconcileApiKey(key, {
        read: (namespace, name) => Promise.resolve(keysInf.get(namespace, name)),
        objects,
        connections: env.connections,
        events: env.events,
        policy: (namespace, name) => policies.get(namespace, name),
        api: (ref) => apis[ref.kind].get(ref.namespace, ref.name),
        routeApis: (route) => apisServing(route),
        certificateSecret: (namespace, name) => secrets.get(namespace, name),
        certificateInUse,
        secret: (namespace, name, dataKey) => secretValue(secrets.get(namespace, name), dataKey),
        writeSecret,
        written,
        now: env.now,
        log: env.log,
      }),
    watches: [
      {
        watch: secretSpec,
        map: (secret: k8s.V1Secret, old: k8s.V1Secret | undefined, event: InformerEvent) =>
          viewChanged(event, secret, old, (s) => s.data)
            ? keysInf.byIndex('key-secret', objectKey(secret)).map((k) => objectKey(k))
            : [],
      },
      {
        watch: policySpec,
        map: (p: PolicyView, old: PolicyView | undefined, event: InformerEvent) =>
          viewChanged(event, p, old, policyView)
            ? keysInf.byIndex('key-policy', objectKey(p)).map((k) => objectKey(k))
            : [],
      },
      ...apiKindWatches(env, apiView, keysOf),
      contextWatch(env, keysOfContext),
    ],
  };
}
