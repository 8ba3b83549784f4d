/**
 * Rules of the developer portal's kinds (APIDescription, PortalAPICatalogue, PortalConfig) that
 * their schemas can't say, written once for the webhooks and the operator (which applies them
 * too, for clusters without webhooks), on top of the portal's model rules (portal.ts, which the
 * dashboard applies too). Paths are relative to the spec.
 */
import type { JsonSchema } from '../json-schema.ts';
import type { APIDescriptionSpec, PortalAPICatalogueSpec, PortalConfigSpec } from '../generated/kinds.ts';
import { apiDescriptionKind } from '../kinds/api-description.ts';
import { portalApiCatalogueKind } from '../kinds/portal-api-catalogue.ts';
import { portalConfigKind } from '../kinds/portal-config.ts';
import { NOT_SUPPORTED_YET, notSupportedPaths } from '../support.ts';
import type { FieldProblem, FieldWarning } from './field-problem.ts';
import { isHttpUrl, openApiProblem, PRODUCT_AUTH_TYPES } from './portal.ts';
import { resolveRef, type ResolvedRef } from './references.ts';

/** The schema node at a dotted path of `fieldPath`'s form (`mail_options`, `apis[0].email`). */
function nodeAt(schema: JsonSchema, path: string): JsonSchema | undefined {
  let node: JsonSchema | undefined = schema;
  for (const part of path.split(/[.[\]]+/).filter((p) => p !== '')) {
    if (node === undefined) return undefined;
    node = /^\d+$/.test(part) ? node.items : node.properties?.[part];
  }
  return node;
}

/** Fields flagged `not-supported` set to a value that does something: refused with their reason. */
function notYet(schema: JsonSchema, spec: unknown): FieldProblem[] {
  return notSupportedPaths(schema, spec).map((path) => {
    const reason = nodeAt(schema, path)?.['x-svc-reason'];
    return {
      path,
      type: 'NotSupportedYet',
      message: reason === undefined ? NOT_SUPPORTED_YET : `${NOT_SUPPORTED_YET}: ${reason}`,
    };
  });
}

/** Problems of an APIDescription's spec. */
export function apiDescriptionProblems(spec: APIDescriptionSpec): FieldProblem[] {
  const problems = notYet(apiDescriptionKind.spec, spec);
  const authType = spec.auth_type ?? 'authToken';
  if (!PRODUCT_AUTH_TYPES.some((t) => t === authType)) {
    problems.push({
      path: 'auth_type',
      type: 'NotSupported',
      message: `"${authType}": the portal issues keys from the policy (authToken) or none (keyless), no JWTs or OAuth clients yet; use authToken or keyless`,
    });
  }
  if (spec.is_keyless === true && authType !== 'keyless') {
    problems.push({
      path: 'is_keyless',
      type: 'Invalid',
      message: `true says developers need no key, but auth_type is ${authType}: set auth_type keyless, or remove is_keyless`,
    });
  }
  if (authType !== 'keyless' && spec.policyRef === undefined) {
    problems.push({
      path: 'policyRef',
      type: 'Required',
      message: `developers get ${authType} access from a SecurityPolicy: name it in policyRef (or set auth_type keyless)`,
    });
  }
  const docs = spec.docs;
  if (docs !== undefined) {
    const text = docs.documentation ?? '';
    if (docs.doc_type !== 'graphql' && text.trim() === '') {
      problems.push({
        path: 'docs.documentation',
        type: 'Required',
        message: `doc_type ${docs.doc_type} needs the documentation: set it, or remove docs`,
      });
    } else if (docs.doc_type === 'swagger_custom_url') {
      if (!isHttpUrl(text.trim())) {
        problems.push({
          path: 'docs.documentation',
          type: 'Invalid',
          message: 'doc_type swagger_custom_url needs an http(s) URL of an OpenAPI document',
        });
      }
    } else if (docs.doc_type === 'swagger') {
      const why = openApiProblem(text);
      if (why !== undefined) {
        problems.push({
          path: 'docs.documentation',
          type: 'Invalid',
          message: `doc_type swagger needs an OpenAPI document, and ${why}`,
        });
      }
    } else {
      problems.push({
        path: 'docs.doc_type',
        type: 'NotSupported',
        message:
          '"graphql": the portal renders OpenAPI documentation only; use swagger (the document) or swagger_custom_url (its URL)',
      });
    }
  }
  return problems;
}

/** One entry of a catalogue, resolved; `ref` undefined when it names nothing. */
export interface CatalogueEntry {
  /** The entry's path, relative to the spec (`apis[0].apiDescriptionRef`). */
  path: string;
  ref: ResolvedRef | undefined;
}

/** The APIDescriptions a catalogue lists, in order, in either form of an entry. */
export function catalogueEntries(spec: PortalAPICatalogueSpec, namespace: string): CatalogueEntry[] {
  return (spec.apis ?? []).map((e, i) =>
    e.apiDescriptionRef !== undefined
      ? { path: `apis[${i}].apiDescriptionRef`, ref: resolveRef(e.apiDescriptionRef, namespace) }
      : { path: `apis[${i}].name`, ref: resolveRef({ name: e.name, namespace: e.namespace }, namespace) },
  );
}

/** Problems of a PortalAPICatalogue's spec: each APIDescription listed once. */
export function catalogueProblems(spec: PortalAPICatalogueSpec, namespace: string): FieldProblem[] {
  const problems = notYet(portalApiCatalogueKind.spec, spec);
  const seen = new Map<string, string>();
  for (const e of catalogueEntries(spec, namespace)) {
    if (e.ref === undefined) {
      problems.push({ path: e.path, type: 'Required', message: 'name an APIDescription' });
      continue;
    }
    const key = `${e.ref.namespace}/${e.ref.name}`;
    const first = seen.get(key);
    if (first !== undefined) {
      problems.push({
        path: e.path,
        type: 'Invalid',
        message: `APIDescription ${key} is listed already at spec.${first}: list each product once`,
      });
    } else seen.set(key, e.path);
  }
  return problems;
}

/** Remarks on a catalogue: the reference's earlier entry form. */
export function catalogueWarnings(spec: PortalAPICatalogueSpec): FieldWarning[] {
  return (spec.apis ?? []).flatMap((e, i) =>
    e.name !== undefined
      ? [
          {
            path: `apis[${i}].name`,
            message:
              "read as apiDescriptionRef (the reference's earlier form): write apiDescriptionRef: {name, namespace}",
          },
        ]
      : [],
  );
}

/** Problems of a PortalConfig's spec: the settings svc does not enforce yet, by name. */
export function portalConfigProblems(spec: PortalConfigSpec): FieldProblem[] {
  return notYet(portalConfigKind.spec, spec);
}

/** Remarks on a PortalConfig: DCR options kept while DCR is off. */
export function portalConfigWarnings(spec: PortalConfigSpec): FieldWarning[] {
  if (spec.enable_dcr !== true && spec.dcr_options !== undefined) {
    return [
      {
        path: 'dcr_options',
        message: 'not used: enable_dcr is not true (and svc does not register clients yet)',
      },
    ];
  }
  return [];
}
