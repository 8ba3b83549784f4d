/** Admission rules of SvcOasApiDefinition, after its full schema (shared with the other OAS-based kind). */
import type { Validator, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { validateDocumentApi, validateDocumentApiDelete } from './document-api.ts';
import { templateDeleteVerdict } from './template.ts';

/** Validates an SvcOasApiDefinition on create or update. */
export const validateSvcOasApiDefinition: Validator = (obj, _old, lookups) =>
  validateDocumentApi('SvcOasApiDefinition', obj, lookups);

/** Refuses the DELETE of an SvcOasApiDefinition that SecurityPolicies cover, or of a template Ingresses use. */
export async function validateSvcOasApiDefinitionDelete(old: unknown, lookups: Lookups): Promise<Verdict> {
  const template = await templateDeleteVerdict(old, lookups, 'SvcOasApiDefinition');
  if (template.errors.length > 0) return template;
  return validateDocumentApiDelete('SvcOasApiDefinition', old, lookups);
}
