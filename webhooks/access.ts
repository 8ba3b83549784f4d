/**
 * Guarded reads of objects that have not passed the schema yet. The rules run even when the
 * schema refused the object (so the user sees every problem at once); these accessors make a
 * wrongly typed field read as absent instead of crashing the rule. Fields are read through the
 * generated kinds (schemas/generated/kinds.ts) with schemas/rules/read.ts, never by string path:
 * a renamed field breaks the build.
 */
import { effectiveContextRef } from '../schemas/rules/earlier-names.ts';
import type { V1ConfigMap, V1ObjectMeta } from '@kubernetes/client-node';
import type {
  ApiDefinition,
  ConfigMapKeyRef,
  SecurityPolicy,
  SvcOasApiDefinition,
  SvcOasRef,
  SvcStreamsApiDefinition,
  SvcStreamsRef,
} from '../schemas/generated/kinds.ts';
import { model, type Unchecked } from '../schemas/rules/read.ts';
import { resolveRef } from '../schemas/rules/references.ts';
import { asPlainObject } from '../lib/plain-object.ts';

/** A plain object, or undefined (lib/plain-object.ts). */
export const asObject = asPlainObject;

/** An array, or an empty one. */
export function asArray(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : [];
}

/** A string, or undefined. */
export function asString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** A number, or undefined. */
export function asNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** True only for the boolean true. */
export function isTrue(v: unknown): boolean {
  return v === true;
}

/** The top of a Kubernetes object: its kind and metadata. */
interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta;
}

/** An object's top fields (`apiVersion`, `kind`, `metadata`), each read as unknown. */
export const topOf = (obj: unknown): Unchecked<KubeObject> => model<KubeObject>(obj) ?? {};

/** An object's metadata, its fields read as unknown. */
export const metadataOf = (obj: unknown): Unchecked<V1ObjectMeta> =>
  model<V1ObjectMeta>(topOf(obj).metadata) ?? {};

/**
 * The `spec` of a resource of kind `T` (schemas/generated/kinds.ts), its fields read as unknown:
 * `specOf<ApiDefinition>(obj).proxy` is checked by tsc, so renaming a field breaks the build.
 */
export function specOf<T extends { spec?: object }>(obj: unknown): Unchecked<NonNullable<T['spec']>> {
  return model<NonNullable<T['spec']>>(model<T>(obj)?.spec) ?? {};
}

/** The resources that name an OperatorContext in `spec.contextRef`. */
type ContextUser = ApiDefinition | SvcOasApiDefinition | SvcStreamsApiDefinition | SecurityPolicy;

/**
 * The `spec.contextRef` of an API resource or a SecurityPolicy, as written (else the reference's
 * earlier `spec.context`, which the operator reads too: schemas/rules/earlier-names.ts).
 */
export const contextRefOf = (obj: unknown): unknown =>
  effectiveContextRef(specOf<ContextUser>(obj) as { contextRef?: unknown; context?: unknown });

/** The `configmapRef` of an OAS or streams API (`spec.svcOAS` or `spec.svcStreams`). */
export function configmapRefOf(
  kind: 'SvcOasApiDefinition' | 'SvcStreamsApiDefinition',
  obj: unknown,
): Unchecked<ConfigMapKeyRef> | undefined {
  const ref =
    kind === 'SvcOasApiDefinition'
      ? model<SvcOasRef>(specOf<SvcOasApiDefinition>(obj).svcOAS)
      : model<SvcStreamsRef>(specOf<SvcStreamsApiDefinition>(obj).svcStreams);
  return model<ConfigMapKeyRef>(ref?.configmapRef);
}

/** The `data` and `binaryData` of a ConfigMap (or Secret), each a map of strings when present. */
export function configMapDataOf(obj: unknown): { data: unknown; binaryData: unknown } {
  const cm = model<V1ConfigMap>(obj);
  return { data: cm?.data, binaryData: cm?.binaryData };
}

/** Name and namespace of an object (namespace defaults to `default`, as kubectl does). */
export function metaOf(obj: unknown): { name: string; namespace: string } {
  return {
    name: asString(metadataOf(obj).name) ?? asString(metadataOf(obj).generateName) ?? '',
    namespace: asString(metadataOf(obj).namespace) ?? 'default',
  };
}

/**
 * A reference in either form (`"namespace/name"`, `"name"`, or `{name, namespace?}`), its
 * namespace defaulted to `ns` (schemas/rules/references.ts).
 */
export function refOf(v: unknown, ns: string): { name: string; namespace: string } | undefined {
  return resolveRef(v, ns);
}
