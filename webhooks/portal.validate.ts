/**
 * Admission rules of the developer portal's kinds, after their full schemas
 * (schemas/rules/portal-kinds.ts). References to objects that do not exist yet are warnings: objects
 * may come in any order, and the operator waits for them.
 */
import type {
  APIDescription,
  PortalAPICatalogue,
  PortalAPICatalogueSpec,
  PortalConfig,
} from '../schemas/generated/kinds.ts';
import type { FieldProblem, FieldWarning } from '../schemas/rules/field-problem.ts';
import {
  apiDescriptionProblems,
  catalogueEntries,
  catalogueProblems,
  catalogueWarnings,
  portalConfigProblems,
  portalConfigWarnings,
} from '../schemas/rules/portal-kinds.ts';
import { resolveRef } from '../schemas/rules/references.ts';
import { metadataOf, metaOf, specOf } from './access.ts';
import { mergeErrors, type FieldError, type Validator } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { contextRefWarnings, refuseDeleteWhileUsed, matching } from './references.ts';
import { schemaErrors } from './schema.ts';

const underSpec = (ps: readonly FieldProblem[]): FieldError[] =>
  ps.map((p) => ({ ...p, path: `spec.${p.path}` }));
const warnText = (ws: readonly FieldWarning[]): string[] => ws.map((w) => `spec.${w.path}: ${w.message}`);

/** Validates an APIDescription on create or update. */
export const validateAPIDescription: Validator = async (obj, _old, lookups) => {
  const schema = schemaErrors('APIDescription', obj);
  if (schema.length > 0) return { errors: schema, warnings: [] };
  const spec = specOf<APIDescription>(obj) as APIDescription['spec'];
  const errors = underSpec(apiDescriptionProblems(spec));
  const warnings: string[] = [];
  const ref = resolveRef(spec.policyRef, metaOf(obj).namespace);
  if (ref !== undefined && (await lookups.get('SecurityPolicy', ref.namespace, ref.name)) === undefined) {
    warnings.push(
      `spec.policyRef: SecurityPolicy ${ref.namespace}/${ref.name} does not exist yet: the product is published once it does`,
    );
  }
  warnings.push(...(await contextRefWarnings(obj, lookups)));
  return { errors: mergeErrors(schema, errors), warnings };
};

/** The catalogues listing an APIDescription, not being deleted themselves. */
async function cataloguesListing(lookups: Lookups, namespace: string, name: string): Promise<string[]> {
  const listing = await matching(lookups, 'PortalAPICatalogue', (c) => {
    if (metadataOf(c).deletionTimestamp !== undefined) return false;
    const spec = specOf<PortalAPICatalogue>(c) as PortalAPICatalogueSpec;
    return catalogueEntries(spec, metaOf(c).namespace).some(
      (e) => e.ref?.namespace === namespace && e.ref.name === name,
    );
  });
  return listing.map((c) => `PortalAPICatalogue ${metaOf(c).namespace}/${metaOf(c).name}`);
}

/** Refuses the DELETE of an APIDescription that catalogues list. */
export const validateAPIDescriptionDelete = refuseDeleteWhileUsed(
  'APIDescription',
  cataloguesListing,
  'remove it from the apis of these catalogues (or delete them) first',
);

/** Validates a PortalAPICatalogue on create or update. */
export const validatePortalAPICatalogue: Validator = async (obj, _old, lookups) => {
  const schema = schemaErrors('PortalAPICatalogue', obj);
  if (schema.length > 0) return { errors: schema, warnings: [] };
  const spec = specOf<PortalAPICatalogue>(obj) as PortalAPICatalogueSpec;
  const { namespace } = metaOf(obj);
  const errors = underSpec(catalogueProblems(spec, namespace));
  const warnings = warnText(catalogueWarnings(spec));
  for (const e of catalogueEntries(spec, namespace)) {
    if (e.ref === undefined) continue;
    if ((await lookups.get('APIDescription', e.ref.namespace, e.ref.name)) === undefined) {
      warnings.push(
        `spec.${e.path}: APIDescription ${e.ref.namespace}/${e.ref.name} does not exist yet: the catalogue is published once it does`,
      );
    }
  }
  warnings.push(...(await contextRefWarnings(obj, lookups)));
  return { errors, warnings };
};

/** Validates a PortalConfig on create or update. */
export const validatePortalConfig: Validator = async (obj, _old, lookups) => {
  const schema = schemaErrors('PortalConfig', obj);
  if (schema.length > 0) return { errors: schema, warnings: [] };
  const spec = specOf<PortalConfig>(obj) as PortalConfig['spec'];
  return {
    errors: underSpec(portalConfigProblems(spec)),
    warnings: [...warnText(portalConfigWarnings(spec)), ...(await contextRefWarnings(obj, lookups))],
  };
};
