/**
 * References from one resource to another, in both forms the reference's manifests use: the
 * string `"namespace/name"` (or `"name"`, in the referring resource's namespace) and the object
 * `{name, namespace}`. Read once here for the webhooks, the operator and its translation.
 */
import { isPlainObject } from '../../lib/plain-object.ts';
/** A reference with its namespace filled in. */
export interface ResolvedRef {
  name: string;
  namespace: string;
}

/**
 * The resource `ref` (a string or a `NamespacedRef`) names, its namespace defaulting to `namespace` (the referring resource's),
 * or undefined when `ref` names nothing (an empty name, a string with more than one `/`, a value
 * of another type).
 */
export function resolveRef(ref: unknown, namespace: string): ResolvedRef | undefined {
  if (typeof ref === 'string') {
    const parts = ref.split('/');
    if (parts.length === 1 && parts[0] !== '') return { name: ref, namespace };
    const [ns, name] = parts;
    if (parts.length !== 2 || ns === undefined || name === undefined || ns === '' || name === '')
      return undefined;
    return { name, namespace: ns };
  }
  if (!isPlainObject(ref)) return undefined;
  const { name, namespace: ns } = ref;
  if (typeof name !== 'string' || name === '') return undefined;
  return { name, namespace: typeof ns === 'string' && ns !== '' ? ns : namespace };
}
