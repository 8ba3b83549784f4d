/**
 * References between resources, as the controllers follow them: the APIs a SecurityPolicy's
 * access rights name, and the policies an ApiDefinition's `jwt_default_policies` name. Defaults
 * are those of the webhooks (an access right's kind is ApiDefinition, namespaces are the
 * referring resource's), applied again here so that a cluster without webhooks reads the same.
 */
import type {
  AccessRight,
  ApiResourceRef,
  NamespacedRef,
  SecurityPolicySpec,
} from '../schemas/generated/kinds.ts';
import { resolveRef } from '../schemas/rules/references.ts';

/** A reference with its namespace filled in. */
export type ObjectRef = Required<NamespacedRef>;

/** An access right naming an API resource (not an HTTPRoute). */
export type ApiAccessRight = AccessRight & { kind?: ApiResourceRef['kind'] };

/** Whether an access right names an HTTPRoute (the APIs generated to serve it: route-rights.ts). */
export function isRouteRight(right: AccessRight): boolean {
  return right.kind === 'HTTPRoute';
}

/** The API an access right names, defaults applied. */
export function accessRef(right: ApiAccessRight, policyNamespace: string): ApiResourceRef {
  return {
    kind: right.kind ?? 'ApiDefinition',
    name: right.name,
    namespace: right.namespace ?? policyNamespace,
  };
}

/** The access rights that name API resources, HTTPRoutes left out. */
export function apiRights(rights: readonly AccessRight[] | undefined): ApiAccessRight[] {
  return (rights ?? []).filter((r): r is ApiAccessRight => !isRouteRight(r));
}

/** The HTTPRoutes (`namespace/name`) access rights name, in order. */
export function routeRightKeys(rights: readonly AccessRight[] | undefined, namespace: string): string[] {
  return (rights ?? []).filter(isRouteRight).map((r) => `${r.namespace ?? namespace}/${r.name}`);
}

/** The APIs a policy's access rights name, in order (HTTPRoutes left out). */
export function accessRefs(
  policy: { metadata?: { namespace?: string }; spec?: Pick<SecurityPolicySpec, 'access_rights_array'> },
  namespace = policy.metadata?.namespace ?? '',
): ApiResourceRef[] {
  return apiRights(policy.spec?.access_rights_array).map((r) => accessRef(r, namespace));
}

/** The APIs an ApiKey's `spec.accessRights` name, in order (the SecurityPolicy form; HTTPRoutes left out). */
export function keyAccessRefs(
  key: { metadata?: { namespace?: string }; spec?: { accessRights?: AccessRight[] } },
  namespace = key.metadata?.namespace ?? '',
): ApiResourceRef[] {
  return apiRights(key.spec?.accessRights).map((r) => accessRef(r, namespace));
}

/**
 * The policies an ApiDefinition names in `jwt_default_policies`, namespaces filled in: each
 * written `"namespace/name"`, `"name"` or `{name, namespace}` (schemas/rules/references.ts).
 */
export function jwtPolicyRefs(api: {
  metadata?: { namespace?: string };
  spec?: { jwt_default_policies?: (string | NamespacedRef)[] };
}): ObjectRef[] {
  const ns = api.metadata?.namespace ?? '';
  return (api.spec?.jwt_default_policies ?? []).flatMap((r) => resolveRef(r, ns) ?? []);
}

/** `Kind namespace/name`, as messages and keys write an API reference. */
export function apiRefText(ref: ApiResourceRef): string {
  return `${ref.kind} ${ref.namespace}/${ref.name}`;
}

/** `namespace/name`: the work-queue key of a reference. */
/** The namespace and name of a cluster object. */
export function refOf(o: { metadata?: { name?: string; namespace?: string } }): ObjectRef {
  return { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace ?? '' };
}

export function refKey(ref: ObjectRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** Whether two references name the same object. */
export function sameRef(a: ObjectRef, b: ObjectRef): boolean {
  return a.namespace === b.namespace && a.name === b.name;
}

/** References sorted by namespace, then name (then kind), without repeats: stable status lists. */
export function sortedRefs<T extends ObjectRef & { kind?: string }>(refs: readonly T[]): T[] {
  const seen = new Map<string, T>();
  for (const r of refs) seen.set(`${r.namespace}/${r.name}/${r.kind ?? ''}`, r);
  return [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
}
