/**
 * References between objects: warnings for references to objects that don't exist yet (GitOps
 * tools apply in any order, and the operator waits), and the dependents that block a DELETE.
 */
import type { ApiDefinition, SecurityPolicy } from '../schemas/generated/kinds.ts';
import { asArray, asObject, asString, contextRefOf, metadataOf, metaOf, refOf, specOf } from './access.ts';
import { fe } from './field-error.ts';
import type { Verdict } from './field-error.ts';
import { API_KINDS } from './lookups.ts';
import type { Lookups, SvcKind, SvcKinds } from './lookups.ts';

/** A warning when `spec.contextRef` names an OperatorContext that does not exist. */
export async function contextRefWarnings(obj: unknown, lookups: Lookups): Promise<string[]> {
  const ref = refOf(contextRefOf(obj), metaOf(obj).namespace);
  if (ref === undefined) return [];
  if ((await lookups.get('OperatorContext', ref.namespace, ref.name)) !== undefined) return [];
  return [
    `spec.contextRef: OperatorContext ${ref.namespace}/${ref.name} does not exist yet: the operator waits for it before it reconciles this resource`,
  ];
}

const MAX_NAMED = 10;

/** "A a/b, B c/d and 3 more". */
export function nameList(items: readonly string[]): string {
  const named = items.slice(0, MAX_NAMED).join(', ');
  return items.length > MAX_NAMED ? `${named} and ${items.length - MAX_NAMED} more` : named;
}

/** The refusal of a DELETE that would leave `dependents` dangling, or an admission. */
export function deleteVerdict(what: string, dependents: readonly string[], howToFix: string): Verdict {
  if (dependents.length === 0) return { errors: [], warnings: [] };
  return {
    errors: [fe.forbidden('metadata.name', `${what} is still used by ${nameList(dependents)}: ${howToFix}`)],
    warnings: [],
  };
}

/**
 * The validation of a DELETE refused while objects use the object: `usersOf` lists them
 * (`Kind namespace/name`), `howToFix` says what to do first.
 */
export function refuseDeleteWhileUsed(
  kind: string,
  usersOf: (lookups: Lookups, namespace: string, name: string) => Promise<readonly string[]>,
  howToFix: string,
): (old: unknown, lookups: Lookups) => Promise<Verdict> {
  return async (old, lookups) => {
    const { namespace, name } = metaOf(old);
    return deleteVerdict(`${kind} ${namespace}/${name}`, await usersOf(lookups, namespace, name), howToFix);
  };
}

/**
 * The objects of `kind` that `matches`, in `namespace/name` order. When the lookups answer from a
 * watch cache (`lookups.live` set), each one found is read again and kept only if it still
 * matches: a refusal naming it must not rest on a cache a watch event behind.
 */
export async function matching<K extends SvcKind>(
  lookups: Lookups,
  kind: K,
  matches: (obj: SvcKinds[K]) => boolean,
): Promise<SvcKinds[K][]> {
  const byKey = new Map<string, SvcKinds[K]>();
  for (const obj of await lookups.list(kind)) {
    const { namespace, name } = metaOf(obj);
    if (matches(obj)) byKey.set(`${namespace}/${name}`, obj);
  }
  const found = [...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, obj]) => obj);
  const live = lookups.live;
  if (live === undefined) return found;
  const fresh: (SvcKinds[K] | undefined)[] = await Promise.all(
    found.map((obj) => {
      const { namespace, name } = metaOf(obj);
      return live.get(kind, namespace, name);
    }),
  );
  const out: SvcKinds[K][] = [];
  for (const o of fresh) if (o !== undefined && matches(o)) out.push(o);
  return out;
}

/** SecurityPolicies whose access_rights_array covers the API `kind namespace/name`. */
export async function policiesCovering(
  lookups: Lookups,
  kind: string,
  namespace: string,
  name: string,
): Promise<string[]> {
  const covering = await matching(lookups, 'SecurityPolicy', (policy) => {
    const meta = metaOf(policy);
    return asArray(specOf<SecurityPolicy>(policy).access_rights_array).some((r) => {
      const right = asObject(r);
      return (
        (asString(right?.kind) ?? 'ApiDefinition') === kind &&
        (asString(right?.namespace) ?? meta.namespace) === namespace &&
        asString(right?.name) === name
      );
    });
  });
  return covering.map((p) => `SecurityPolicy ${metaOf(p).namespace}/${metaOf(p).name}`);
}

/**
 * ApiDefinitions whose `jwt_default_policies` name the SecurityPolicy `namespace/name`. Those
 * being deleted are left out: they no longer need it, and an API and its policy deleted together
 * must not wait for each other.
 */
export async function apisNamingPolicy(lookups: Lookups, namespace: string, name: string): Promise<string[]> {
  const naming = await matching(lookups, 'ApiDefinition', (api) => {
    if (metadataOf(api).deletionTimestamp !== undefined) return false;
    const meta = metaOf(api);
    return asArray(specOf<ApiDefinition>(api).jwt_default_policies).some((r) => {
      const ref = refOf(r, meta.namespace);
      return ref?.namespace === namespace && ref.name === name;
    });
  });
  return naming.map((a) => `ApiDefinition ${metaOf(a).namespace}/${metaOf(a).name}`);
}

/** Resources whose contextRef names the OperatorContext `namespace/name`. */
export async function contextUsers(lookups: Lookups, namespace: string, name: string): Promise<string[]> {
  const out: string[] = [];
  for (const kind of [...API_KINDS, 'SecurityPolicy'] as const) {
    const users = await matching(lookups, kind, (obj) => {
      const ref = refOf(contextRefOf(obj), metaOf(obj).namespace);
      return ref?.namespace === namespace && ref.name === name;
    });
    for (const obj of users) out.push(`${kind} ${metaOf(obj).namespace}/${metaOf(obj).name}`);
  }
  return out;
}
