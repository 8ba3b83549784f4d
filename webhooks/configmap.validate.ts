/**
 * The ConfigMap rule: a ConfigMap that holds the document of an OAS or streams API may not be
 * changed so that the API would be refused, nor deleted while the API points at it. Problems the
 * API had before the change don't block it (only what the change breaks).
 */
import { asObject, asString, configMapDataOf, configmapRefOf, metaOf } from './access.ts';
import { formatFieldError } from './field-error.ts';
import type { FieldError, Validator, Verdict } from './field-error.ts';
import { fieldPath } from '../schemas/validate.ts';
import { validateDocumentApi } from './document-api.ts';
import type { DocumentKind } from './document-api.ts';
import type { ConfigMapContent, Lookups } from './lookups.ts';
import { withConfigMap } from './memory-lookups.ts';
import { deleteVerdict, matching } from './references.ts';
import { documentRefField } from './routes.ts';
import { pointerToken } from './json-patch.ts';

/** An API that reads its document from a ConfigMap key. */
interface Dependent {
  kind: DocumentKind;
  obj: unknown;
  namespace: string;
  name: string;
  keyName: string;
}

/**
 * APIs (of both OAS-based kinds, in all namespaces) whose configmapRef is `namespace/name`; from
 * the watch cache, confirmed by a fresh read of each (references.ts `matching`).
 */
async function dependentsOf(lookups: Lookups, namespace: string, name: string): Promise<Dependent[]> {
  const out: Dependent[] = [];
  const refOf = (kind: DocumentKind, obj: unknown): { keyName?: string; reads: boolean } => {
    const ref = configmapRefOf(kind, obj);
    const keyName = asString(ref?.keyName);
    return {
      ...(keyName === undefined ? {} : { keyName }),
      reads:
        asString(ref?.name) === name &&
        (asString(ref?.namespace) ?? metaOf(obj).namespace) === namespace &&
        keyName !== undefined,
    };
  };
  for (const kind of Object.keys(documentRefField) as DocumentKind[]) {
    for (const obj of await matching(lookups, kind, (o) => refOf(kind, o).reads)) {
      out.push({ kind, obj, ...metaOf(obj), keyName: refOf(kind, obj).keyName ?? '' });
    }
  }
  return out;
}

function contentOf(obj: unknown): ConfigMapContent {
  return {
    data: (asObject(configMapDataOf(obj).data) ?? {}) as Record<string, string>,
    binaryData: (asObject(configMapDataOf(obj).binaryData) ?? {}) as Record<string, string>,
  };
}

/** Validates an update of a ConfigMap against the APIs that read documents from it. */
export const validateConfigMap: Validator = async (obj, old, lookups) => {
  const { namespace, name } = metaOf(obj);
  const dependents = await dependentsOf(lookups, namespace, name);
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  for (const d of dependents) {
    const refKey = `spec.${documentRefField[d.kind]}.configmapRef.keyName`;
    const after = await validateDocumentApi(
      d.kind,
      d.obj,
      withConfigMap(lookups, namespace, name, contentOf(obj)),
    );
    const before =
      old === undefined
        ? { errors: [], warnings: [] }
        : await validateDocumentApi(d.kind, d.obj, withConfigMap(lookups, namespace, name, contentOf(old)));
    const known = new Set(before.errors.map(formatFieldError));
    const path = fieldPath(`/data/${pointerToken(d.keyName)}`);
    for (const e of after.errors) {
      if (known.has(formatFieldError(e)) || e.path !== refKey) continue;
      errors.push({
        ...e,
        path,
        message: `${d.kind} ${d.namespace}/${d.name} reads its document from this key, and would be refused: ${e.message}`,
      });
    }
    const knownWarnings = new Set(before.warnings);
    for (const w of after.warnings) {
      if (!knownWarnings.has(w) && w.startsWith(`${refKey}:`)) {
        warnings.push(`${path}: ${d.kind} ${d.namespace}/${d.name}:${w.slice(refKey.length + 1)}`);
      }
    }
  }
  return { errors, warnings };
};

/** Refuses the DELETE of a ConfigMap that APIs read their documents from. */
export async function validateConfigMapDelete(old: unknown, lookups: Lookups): Promise<Verdict> {
  const { namespace, name } = metaOf(old);
  const dependents = await dependentsOf(lookups, namespace, name);
  return deleteVerdict(
    `ConfigMap ${namespace}/${name}`,
    dependents.map((d) => `${d.kind} ${d.namespace}/${d.name} (key ${JSON.stringify(d.keyName)})`),
    'delete those APIs, or point their configmapRef at another ConfigMap, first',
  );
}
