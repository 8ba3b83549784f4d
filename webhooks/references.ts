/**
 * References between objects: warnings for references to objects that don't exist yet (GitOps
 * tools apply in any order, and the operator waits), and the dependents that block a DELETE.
 */
import { asArray, asObject, asString, at, metaOf, refOf } from './access.ts';
import { fe } from './field-error.ts';
import type { Verdict } from './field-error.ts';
import { API_KINDS } from './lookups.ts';
import type { Lookups } from './lookups.ts';

/** A warning when `spec.contextRef` names an OperatorContext that does not exist. */
export async function contextRefWarnings(obj: unknown, lookups: Lookups): Promise<string[]> {
  const ref = refOf(at(obj, 'spec.contextRef'), metaOf(obj).namespace);
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

/** SecurityPolicies whose access_rights_array covers the API `kind namespace/name`. */
export async function policiesCovering(
  lookups: Lookups,
  kind: string,
  namespace: string,
  name: string,
): Promise<string[]> {
  const out: string[] = [];
  for (const policy of await lookups.list('SecurityPolicy')) {
    const meta = metaOf(policy);
    const covers = asArray(at(policy, 'spec.access_rights_array')).some((r) => {
      const right = asObject(r);
      return (
        (asString(right?.kind) ?? 'ApiDefinition') === kind &&
        (asString(right?.namespace) ?? meta.namespace) === namespace &&
        asString(right?.name) === name
      );
    });
    if (covers) out.push(`SecurityPolicy ${meta.namespace}/${meta.name}`);
  }
  return out;
}

/**
 * ApiDefinitions whose `jwt_default_policies` name the SecurityPolicy `namespace/name`. Those
 * being deleted are left out: they no longer need it, and an API and its policy deleted together
 * must not wait for each other.
 */
export async function apisNamingPolicy(lookups: Lookups, namespace: string, name: string): Promise<string[]> {
  const out: string[] = [];
  for (const api of await lookups.list('ApiDefinition')) {
    const meta = metaOf(api);
    if (at(api, 'metadata.deletionTimestamp') !== undefined) continue;
    const names = asArray(at(api, 'spec.jwt_default_policies')).some((r) => {
      const ref = refOf(r, meta.namespace);
      return ref?.namespace === namespace && ref.name === name;
    });
    if (names) out.push(`ApiDefinition ${meta.namespace}/${meta.name}`);
  }
  return out;
}

/** Resources whose contextRef names the OperatorContext `namespace/name`. */
export async function contextUsers(lookups: Lookups, namespace: string, name: string): Promise<string[]> {
  const out: string[] = [];
  for (const kind of [...API_KINDS, 'SecurityPolicy'] as const) {
    for (const obj of await lookups.list(kind)) {
      const meta = metaOf(obj);
      const ref = refOf(at(obj, 'spec.contextRef'), meta.namespace);
      if (ref?.namespace === namespace && ref.name === name)
        out.push(`${kind} ${meta.namespace}/${meta.name}`);
    }
  }
  return out;
}
