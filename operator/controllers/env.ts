/**
 * What main.ts hands to each controller's wiring, and the small helpers the wirings share. Each
 * controller builds its own ControllerSpec (which kinds it watches, which keys they map to) in
 * its own file; main.ts only assembles them.
 */
import type * as k8s from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { API_KINDS, API_VERSION } from '../../schemas/common.ts';
import { kinds } from '../../schemas/index.ts';
import type { NamespacedRef } from '../../schemas/generated/kinds.ts';
import type { EventRecorder } from '../../lib/k8s/events.ts';
import { objectKey, type Informer, type InformerEvent, type WatchSpec } from '../../lib/k8s/informer.ts';
import type { ControllerManager, ControllerSpec } from '../../lib/k8s/manager.ts';
import type { Logger } from '../../lib/log.ts';
import type { Connections } from '../connections.ts';
import type { Convergence } from './convergence.ts';
import { effectiveContextRef } from '../../schemas/rules/earlier-names.ts';

/** The operator's shared parts, as main.ts builds them. */
export interface ControllerEnv {
  manager: ControllerManager;
  kc: k8s.KubeConfig;
  /** Watched namespaces; empty is all. */
  namespaces: readonly string[];
  connections: Connections;
  events: EventRecorder;
  now: () => Date;
  log: Logger;
  /** `svc_config_convergence_seconds` on the operator's /metrics (convergence.ts). */
  convergence?: Convergence;
}

/** Names of the svc kinds. */
export type SvcKindName =
  | 'ApiDefinition'
  | 'SvcOasApiDefinition'
  | 'SvcStreamsApiDefinition'
  | 'SecurityPolicy'
  | 'OperatorContext'
  | 'ApiKey'
  | 'SubGraph'
  | 'SuperGraph'
  | 'APIDescription'
  | 'PortalAPICatalogue'
  | 'PortalConfig'
  | 'SvcRoutePolicy';

/** The watch of an svc kind in the watched namespaces (one shared informer per kind). */
export function watchOf(env: Pick<ControllerEnv, 'namespaces'>, kind: SvcKindName): WatchSpec {
  const def = kinds.find((k) => k.kind === kind);
  if (!def) throw new Error(`unknown kind ${kind}`);
  return { apiVersion: API_VERSION, kind, plural: def.plural, namespaces: env.namespaces };
}

/**
 * The watch of Secrets in the watched namespaces (contexts' `secretRef`, APIs'
 * certificate_secret_names): one shared informer.
 */
export const secretWatch = (env: Pick<ControllerEnv, 'namespaces'>): WatchSpec => ({
  apiVersion: 'v1',
  kind: 'Secret',
  plural: 'secrets',
  namespaces: env.namespaces,
});

/** The watch of ConfigMaps in the watched namespaces (OAS documents). */
export const configMapWatch = (env: Pick<ControllerEnv, 'namespaces'>): WatchSpec => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  namespaces: env.namespaces,
});

/** The OperatorContext a resource's `contextRef` (or earlier `context`) names, as a work-queue key. */
export function contextKeyOf(obj: k8s.KubernetesObject | undefined): string[] {
  const ref = effectiveContextRef(
    (obj as { spec?: { contextRef?: NamespacedRef; context?: NamespacedRef } } | undefined)?.spec,
  );
  if (!ref || !obj?.metadata?.namespace) return [];
  return [`${ref.namespace ?? obj.metadata.namespace}/${ref.name}`];
}

/**
 * Whether an event changed what `view` picks out of an object: always true for an add or a
 * delete. A mapping uses it to skip, say, the status writes of another controller.
 */
export function viewChanged<T>(
  event: InformerEvent,
  obj: T,
  old: T | undefined,
  view: (o: T) => unknown,
): boolean {
  return event !== 'update' || old === undefined || !isDeepStrictEqual(view(obj), view(old));
}

/** One watch of a controller: a kind, and the keys of the controller's objects an event queues. */
export type ControllerWatch = NonNullable<ControllerSpec['watches']>[number];

/** The kinds of API resource. */
export type ApiKind = (typeof API_KINDS)[number];

/** The shared informer of each API kind. */
export function apiInformers<T extends k8s.KubernetesObject>(
  env: ControllerEnv,
): Record<ApiKind, Informer<T>> {
  return Object.fromEntries(
    API_KINDS.map((kind) => [kind, env.manager.informer<T>(watchOf(env, kind))]),
  ) as Record<ApiKind, Informer<T>>;
}

/**
 * The watches of the API kinds for a controller whose objects are linked to APIs: an API that
 * appears, goes, or changes in what `view` picks out of it queues the objects `linked` to it,
 * before and after the change.
 */
export function apiKindWatches<T extends k8s.KubernetesObject>(
  env: ControllerEnv,
  view: (api: T) => unknown,
  linked: (kind: ApiKind, api: T | undefined) => string[],
): ControllerWatch[] {
  return API_KINDS.map((kind) => ({
    watch: watchOf(env, kind),
    // The informer of `kind` holds objects read as T.
    map: (obj: k8s.KubernetesObject, prev: k8s.KubernetesObject | undefined, event: InformerEvent) => {
      const api = obj as T;
      const old = prev as T | undefined;
      return viewChanged(event, api, old, view)
        ? [...new Set([...linked(kind, api), ...linked(kind, old)])]
        : [];
    },
  }));
}

/** The watch of OperatorContexts: one that appears or changes queues the objects using it. */
export function contextWatch(
  env: ControllerEnv,
  using: (contextKey: string) => readonly k8s.KubernetesObject[],
): ControllerWatch {
  return {
    watch: watchOf(env, 'OperatorContext'),
    map: (ctx: k8s.KubernetesObject) => using(objectKey(ctx)).map((o) => objectKey(o)),
  };
}
