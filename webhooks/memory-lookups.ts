/**
 * Lookups over a fixed set of objects, for unit tests, the fuzz test and the ConfigMap rule
 * (which checks dependent APIs against the ConfigMap as it would be after the update).
 */
import { asObject, asString, configMapDataOf, metadataOf, metaOf, topOf } from './access.ts';
import type { ConfigMapContent, Lookups, SvcKind, SvcKinds } from './lookups.ts';

const key = (kind: string, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;

const strings = (v: unknown): Record<string, string> => (asObject(v) ?? {}) as Record<string, string>;

/** Lookups that answer from `objects`: Kubernetes objects (ConfigMaps, Secrets, svc kinds). */
export function memoryLookups(objects: readonly unknown[]): Lookups {
  const byKey = new Map<string, unknown>();
  for (const o of objects) {
    const { name, namespace } = metaOf(o);
    byKey.set(key(asString(topOf(o).kind) ?? '', namespace, name), o);
  }
  return {
    configMap(namespace, name) {
      const cm = byKey.get(key('ConfigMap', namespace, name));
      return Promise.resolve(
        cm === undefined
          ? undefined
          : { data: strings(configMapDataOf(cm).data), binaryData: strings(configMapDataOf(cm).binaryData) },
      );
    },
    secretKeys(namespace, name) {
      const s = byKey.get(key('Secret', namespace, name));
      return Promise.resolve(s === undefined ? undefined : Object.keys(strings(configMapDataOf(s).data)));
    },
    get<K extends SvcKind>(kind: K, namespace: string, name: string) {
      return Promise.resolve(byKey.get(key(kind, namespace, name)) as SvcKinds[K] | undefined);
    },
    ingresses(namespace) {
      return Promise.resolve(
        objects
          .filter((o) => topOf(o).kind === 'Ingress' && metaOf(o).namespace === namespace)
          .map((o) => ({
            name: metaOf(o).name,
            annotations: strings(metadataOf(o).annotations),
            deleting: metadataOf(o).deletionTimestamp !== undefined,
          })),
      );
    },
    list<K extends SvcKind>(kind: K) {
      return Promise.resolve(objects.filter((o) => topOf(o).kind === kind) as SvcKinds[K][]);
    },
  };
}

/**
 * `base`, except that the ConfigMap `namespace/name` has `content` (what an update would store).
 * Without `base`'s route-claim cache: it holds the claims of the ConfigMap's current content, so
 * the route check lists every API and reads their documents through this override instead.
 */
export function withConfigMap(
  base: Lookups,
  namespace: string,
  name: string,
  content: ConfigMapContent,
): Lookups {
  const { routeClaims: _cached, live, ...rest } = base;
  return {
    ...rest,
    ...(live === undefined ? {} : { live: withConfigMap(live, namespace, name, content) }),
    configMap: (ns, n) => (ns === namespace && n === name ? Promise.resolve(content) : rest.configMap(ns, n)),
  };
}
